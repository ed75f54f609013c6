package providertest_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/slackapprove/slackbot/agentrunner"
	"github.com/slackapprove/slackbot/agentrunner/internal/providertest"
)

// The fake answers with its replies in order and records each request.
func TestFakeAPI(t *testing.T) {
	f := providertest.NewFakeAPI(t, "/v1/x",
		providertest.Reply{Body: `{"n":1}`},
		providertest.Reply{Status: 429, Header: map[string]string{"Retry-After": "0"}, Body: `{"error":"slow down"}`},
	)
	tests := []struct {
		body       string
		wantStatus int
		wantHeader string
		wantBody   string
	}{
		{`{"q":"first"}`, 200, "", `{"n":1}`},
		{`{"q":"second"}`, 429, "0", `{"error":"slow down"}`},
	}
	for i, tt := range tests {
		req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, f.URL("/v1/x"), strings.NewReader(tt.body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("X-Test", fmt.Sprint(i))
		res, err := f.Client().Do(req)
		if err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
		b, _ := io.ReadAll(res.Body)
		_ = res.Body.Close()
		if res.StatusCode != tt.wantStatus || res.Header.Get("Retry-After") != tt.wantHeader || string(b) != tt.wantBody {
			t.Errorf("reply %d: got %d Retry-After %q %s, want %d %q %s", i, res.StatusCode, res.Header.Get("Retry-After"), b,
				tt.wantStatus, tt.wantHeader, tt.wantBody)
		}
		if ct := res.Header.Get("Content-Type"); ct != "application/json" {
			t.Errorf("reply %d: Content-Type %q, want application/json", i, ct)
		}
		got := f.Request(i)
		want := map[string]any{}
		_ = json.Unmarshal([]byte(tt.body), &want)
		if got.Path != "/v1/x" || got.Header.Get("X-Test") != fmt.Sprint(i) || !cmp.Equal(got.Body, want) {
			t.Errorf("request %d: got %s %v %v, want /v1/x with X-Test %d and %v", i, got.Path, got.Header, got.Body, i, want)
		}
	}
	if got := len(f.Requests()); got != 2 {
		t.Errorf("Requests: got %d, want 2", got)
	}
}

// recorder is a testing.TB that records failures instead of failing.
// Fatalf ends the goroutine, as testing's does; run checks with fails.
type recorder struct {
	testing.TB
	mu     sync.Mutex
	failed bool
}

func (r *recorder) Helper() {}

func (r *recorder) Errorf(string, ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.failed = true
}

func (r *recorder) Error(...any) { r.Errorf("") }

func (r *recorder) Fatalf(string, ...any) {
	r.Errorf("")
	runtime.Goexit()
}

func (r *recorder) Fatal(...any) { r.Fatalf("") }

// fails runs check with a recorder, in a goroutine of its own so that a
// Fatalf can end it, and reports whether the check failed.
func fails(t *testing.T, check func(tb testing.TB)) bool {
	r := &recorder{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		check(r)
	}()
	<-done
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.failed
}

func TestDiffJSON(t *testing.T) {
	tests := []struct {
		name      string
		got       any
		want      string
		wantFails bool
	}{
		{"equal, whitespace and order aside", map[string]any{"a": 1.0, "b": []any{"x"}}, `{ "b": ["x"], "a": 1 }`, false},
		{"different value", map[string]any{"a": 2.0}, `{"a": 1}`, true},
		{"missing key", map[string]any{}, `{"a": 1}`, true},
		{"bad JSON in the test", map[string]any{}, `{`, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			failed := fails(t, func(tb testing.TB) { providertest.DiffJSON(tb, "doc", tt.got, tt.want) })
			if failed != tt.wantFails {
				t.Errorf("DiffJSON: failed %v, want %v", failed, tt.wantFails)
			}
		})
	}
}

func TestDiffParts(t *testing.T) {
	call := agentrunner.ToolCall("lookup_order", json.RawMessage(`{"order_id":"A"}`), "c1")
	tests := []struct {
		name      string
		got, want []agentrunner.Part
		wantFails bool
	}{
		{"equal", []agentrunner.Part{agentrunner.Text("Hi."), call}, []agentrunner.Part{agentrunner.Text("Hi."), call}, false},
		{"other args", []agentrunner.Part{agentrunner.ToolCall("lookup_order", json.RawMessage(`{}`), "c1")}, []agentrunner.Part{call}, true},
		{"other id", []agentrunner.Part{agentrunner.ToolCall("lookup_order", call.Args, "c2")}, []agentrunner.Part{call}, true},
		{"a part missing", []agentrunner.Part{agentrunner.Text("Hi.")}, []agentrunner.Part{agentrunner.Text("Hi."), call}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			failed := fails(t, func(tb testing.TB) { providertest.DiffParts(tb, tt.got, tt.want) })
			if failed != tt.wantFails {
				t.Errorf("DiffParts: failed %v, want %v", failed, tt.wantFails)
			}
		})
	}
}

func TestRepeat(t *testing.T) {
	r := providertest.Reply{Status: 500, Body: "x"}
	got := providertest.Repeat(r, 3)
	if want := []providertest.Reply{r, r, r}; !cmp.Equal(got, want) {
		t.Errorf("Repeat: got %v, want %v", got, want)
	}
}

// The runner NewRunner makes sends Instructions and runs the order tools;
// looking up B-2 fails.
func TestRunnerAndTools(t *testing.T) {
	var ran atomic.Int32
	var results []agentrunner.Part
	m := agentrunner.FunctionModel(func(_ context.Context, msgs []agentrunner.Message, params agentrunner.RequestParams) (agentrunner.Message, error) {
		if params.Instructions != providertest.Instructions {
			t.Errorf("instructions: got %q, want %q", params.Instructions, providertest.Instructions)
		}
		if len(msgs) == 1 {
			return agentrunner.Message{Parts: []agentrunner.Part{
				agentrunner.ToolCall("lookup_order", json.RawMessage(`{"order_id":"A-17"}`), "c1"),
				agentrunner.ToolCall("lookup_order", json.RawMessage(`{"order_id":"B-2"}`), "c2"),
			}}, nil
		}
		results = msgs[len(msgs)-1].Parts
		return agentrunner.Message{Parts: []agentrunner.Part{agentrunner.Text("Done.")}}, nil
	})
	cancel := providertest.CancelOrder(&ran)
	r := providertest.NewRunner(t, m, providertest.LookupOrder(&ran), cancel)
	if _, err := r.Run(t.Context(), agentrunner.RunInput{Prompt: "Where are A-17 and B-2?"}); err != nil {
		t.Fatalf("Run: %v", err)
	}
	tests := []struct {
		id          string
		wantOutcome agentrunner.Outcome
		wantText    string
	}{
		{"c1", agentrunner.OutcomeSuccess, `{"order_id":"A-17","status":"shipped"}`},
		{"c2", agentrunner.OutcomeFailed, "Tool failed: order database timed out"},
	}
	if len(results) != len(tests) {
		t.Fatalf("tool results: got %+v, want %d", results, len(tests))
	}
	for i, tt := range tests {
		p := results[i]
		if p.ToolCallID != tt.id || p.Outcome != tt.wantOutcome || p.ReturnText() != tt.wantText {
			t.Errorf("result %d: got %s %s %q, want %s %s %q", i, p.ToolCallID, p.Outcome, p.ReturnText(), tt.id, tt.wantOutcome, tt.wantText)
		}
	}
	if got := ran.Load(); got != 2 {
		t.Errorf("tools ran %d times, want 2", got)
	}
	if !cancel.NeedsApproval() {
		t.Error("cancel_order does not need approval")
	}
}

func TestPrompt(t *testing.T) {
	want := []agentrunner.Message{{Kind: agentrunner.KindRequest, Parts: []agentrunner.Part{agentrunner.UserPrompt("Hi")}}}
	if got := providertest.Prompt("Hi"); !cmp.Equal(got, want) {
		t.Errorf("Prompt: got %+v, want %+v", got, want)
	}
}
