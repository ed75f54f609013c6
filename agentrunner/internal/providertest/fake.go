// Package providertest is what the tests of agentrunner's model providers
// (openai, anthropic) share: a fake API server that answers with canned
// replies and records what it receives, comparison of JSON, and the
// fixtures and checks that do not depend on the API's wire shape. The
// shapes themselves (a chat completion, a Messages API message, each
// API's error body) stay in each provider's tests.
package providertest

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
)

// Reply is one answer of a FakeAPI.
type Reply struct {
	// Status is the HTTP status; zero means 200.
	Status int
	// Header holds headers to set, e.g. retry-after-ms.
	Header map[string]string
	// Body is the response body, JSON unless Header says otherwise.
	Body string
}

// Request is one request a FakeAPI received.
type Request struct {
	Path   string
	Header http.Header
	// Body is the request's JSON object.
	Body map[string]any
}

// FakeAPI is an httptest server standing in for a provider's API: it
// answers POSTs to one path with its replies in order and records every
// request. A request it does not expect, or one after the replies ran out,
// fails the test. It is safe for concurrent requests.
type FakeAPI struct {
	t    testing.TB
	srv  *httptest.Server
	path string

	mu       sync.Mutex
	replies  []Reply
	requests []Request
}

// NewFakeAPI starts a FakeAPI that expects POSTs to path and answers them
// with replies; the test's cleanup stops it.
func NewFakeAPI(t testing.TB, path string, replies ...Reply) *FakeAPI {
	t.Helper()
	f := &FakeAPI{t: t, path: path, replies: replies}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *FakeAPI) serve(w http.ResponseWriter, r *http.Request) {
	raw, err := io.ReadAll(r.Body)
	if err != nil {
		f.t.Errorf("fake API: read body: %v", err)
	}
	var body map[string]any
	if err := json.Unmarshal(raw, &body); err != nil {
		f.t.Errorf("fake API: body is not a JSON object: %v: %s", err, raw)
	}
	f.mu.Lock()
	f.requests = append(f.requests, Request{Path: r.URL.Path, Header: r.Header.Clone(), Body: body})
	var rep Reply
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
		// Both SDKs honour x-should-retry, so the test ends at once.
		rep = Reply{Status: http.StatusTeapot, Header: map[string]string{"x-should-retry": "false"}, Body: `{"error":{"message":"no reply left"}}`}
	}
	w.Header().Set("Content-Type", "application/json")
	for k, v := range rep.Header {
		w.Header().Set(k, v)
	}
	if rep.Status == 0 {
		rep.Status = http.StatusOK
	}
	w.WriteHeader(rep.Status)
	_, _ = io.WriteString(w, rep.Body)
}

// URL returns the server's base URL with suffix (e.g. "/v1").
func (f *FakeAPI) URL(suffix string) string { return f.srv.URL + suffix }

// Client returns an HTTP client for the server.
func (f *FakeAPI) Client() *http.Client { return f.srv.Client() }

// Close stops the server, so that requests to it fail to connect.
func (f *FakeAPI) Close() { f.srv.Close() }

// Requests returns the requests received so far.
func (f *FakeAPI) Requests() []Request {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]Request(nil), f.requests...)
}

// Request returns request i, failing the test at once if there is none.
func (f *FakeAPI) Request(i int) Request {
	f.t.Helper()
	reqs := f.Requests()
	if i >= len(reqs) {
		f.t.Fatalf("got %d requests, want at least %d", len(reqs), i+1)
	}
	return reqs[i]
}

// Repeat returns n copies of r, for a server that fails every attempt.
func Repeat(r Reply, n int) []Reply {
	out := make([]Reply, n)
	for i := range out {
		out[i] = r
	}
	return out
}
