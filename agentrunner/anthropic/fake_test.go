package anthropic_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// reply is one answer of the fake server.
type reply struct {
	status int
	header map[string]string
	body   string
}

// seen is one request the fake server received.
type seen struct {
	path   string
	header http.Header
	body   map[string]any
}

// fakeAPI is an httptest server speaking the Messages API: it
// answers with its replies in order and records every request.
type fakeAPI struct {
	t    *testing.T
	srv  *httptest.Server
	path string

	mu       sync.Mutex
	replies  []reply
	requests []seen
}

// newFakeAPI starts a server that expects POSTs to path.
func newFakeAPI(t *testing.T, path string, replies ...reply) *fakeAPI {
	t.Helper()
	f := &fakeAPI{t: t, path: path, replies: replies}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fakeAPI) serve(w http.ResponseWriter, r *http.Request) {
	raw, err := io.ReadAll(r.Body)
	if err != nil {
		f.t.Errorf("fake API: read body: %v", err)
	}
	var body map[string]any
	if err := json.Unmarshal(raw, &body); err != nil {
		f.t.Errorf("fake API: body is not a JSON object: %v: %s", err, raw)
	}
	f.mu.Lock()
	f.requests = append(f.requests, seen{path: r.URL.Path, header: r.Header.Clone(), body: body})
	var rep reply
	ok := len(f.replies) > 0
	if ok {
		rep, f.replies = f.replies[0], f.replies[1:]
	}
	f.mu.Unlock()

	if r.Method != http.MethodPost || r.URL.Path != f.path {
		f.t.Errorf("fake API: got %s %s, want POST %s", r.Method, r.URL.Path, f.path)
	}
	if !ok {
		f.t.Errorf("fake API: unexpected request: %s", raw)
		rep = reply{status: http.StatusTeapot, header: map[string]string{"x-should-retry": "false"}, body: `{"error":{"message":"no reply left"}}`}
	}
	w.Header().Set("Content-Type", "application/json")
	for k, v := range rep.header {
		w.Header().Set(k, v)
	}
	if rep.status == 0 {
		rep.status = http.StatusOK
	}
	w.WriteHeader(rep.status)
	_, _ = io.WriteString(w, rep.body)
}

// URL is the server's base URL with suffix (e.g. "/v1").
func (f *fakeAPI) URL(suffix string) string { return f.srv.URL + suffix }

// Requests returns the requests received so far.
func (f *fakeAPI) Requests() []seen {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]seen(nil), f.requests...)
}

// request returns request i, failing the test if there is none.
func (f *fakeAPI) request(i int) seen {
	f.t.Helper()
	reqs := f.Requests()
	if i >= len(reqs) {
		f.t.Fatalf("got %d requests, want at least %d", len(reqs), i+1)
	}
	return reqs[i]
}

// block is a content block of a fake message.
type block map[string]any

func text(s string) block { return block{"type": "text", "text": s} }

func toolUse(id, name, input string) block {
	return block{"type": "tool_use", "id": id, "name": name, "input": json.RawMessage(input)}
}

// message returns a reply with a Messages API message.
func message(blocks ...block) reply {
	stop := "end_turn"
	for _, b := range blocks {
		if b["type"] == "tool_use" {
			stop = "tool_use"
		}
	}
	return messageStop(stop, blocks...)
}

// messageStop returns a reply with a message that stopped for stop.
func messageStop(stop string, blocks ...block) reply {
	b, err := json.Marshal(map[string]any{
		"id": "msg_01", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5-20250929",
		"content": append([]block{}, blocks...), "stop_reason": stop, "stop_sequence": nil,
		"usage": map[string]any{"input_tokens": 10, "output_tokens": 5},
	})
	if err != nil {
		panic(err)
	}
	return reply{body: string(b)}
}

// apiError returns a reply with an error in Anthropic's shape.
func apiError(status int, typ, message string, header map[string]string) reply {
	b, _ := json.Marshal(map[string]any{"type": "error", "error": map[string]any{"type": typ, "message": message}, "request_id": "req_011"})
	return reply{status: status, header: header, body: string(b)}
}

// decode parses a JSON document written in a test.
func decode(t *testing.T, s string) any {
	t.Helper()
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		t.Fatalf("bad JSON in test: %v\n%s", err, s)
	}
	return v
}

// diffJSON compares got (decoded JSON) with the JSON document want.
func diffJSON(t *testing.T, what string, got any, want string) {
	t.Helper()
	if d := cmp.Diff(decode(t, want), got); d != "" {
		b, _ := json.MarshalIndent(got, "", "  ")
		t.Errorf("%s: mismatch (-want +got):\n%s\ngot:\n%s", what, d, b)
	}
}

func mustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprint("mustJSON: ", err))
	}
	return string(b)
}
