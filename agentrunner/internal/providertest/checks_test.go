package providertest_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/slackapprove/slackbot/agentrunner"
	"github.com/slackapprove/slackbot/agentrunner/internal/providertest"
)

const key = "sk-test-0123456789abcdef"

func TestCheckRequestError(t *testing.T) {
	errBoom := errors.New("boom")
	tests := []struct {
		name      string
		err       error
		wantErr   error
		wantFails bool
	}{
		{"error as wanted", fmt.Errorf("acme rocket-1: %w", errBoom), errBoom, false},
		{"any error will do", errors.New("acme rocket-1: whatever"), nil, false},
		{"no error", nil, nil, true},
		{"other prefix", errors.New("rocket-1: boom"), nil, true},
		{"shows the key", errors.New("acme rocket-1: bad key " + key), nil, true},
		{"not the wanted error", errors.New("acme rocket-1: boom"), errBoom, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := agentrunner.FunctionModel(func(context.Context, []agentrunner.Message, agentrunner.RequestParams) (agentrunner.Message, error) {
				return agentrunner.Message{Parts: []agentrunner.Part{agentrunner.Text("Hi.")}}, tt.err
			})
			failed := fails(t, func(tb testing.TB) {
				providertest.CheckRequestError(t.Context(), tb, m, key, "acme rocket-1: ", tt.wantErr)
			})
			if failed != tt.wantFails {
				t.Errorf("CheckRequestError: failed %v, want %v", failed, tt.wantFails)
			}
		})
	}
}

// stringer prints as its name; without GoString, %#v shows its fields.
type stringer struct{ name, secret string }

func (s stringer) String() string { return s.name }

// safeStringer also prints as its name with %#v.
type safeStringer struct{ stringer }

func (s safeStringer) GoString() string { return s.name }

func TestCheckPrinting(t *testing.T) {
	tests := []struct {
		name      string
		m         fmt.Stringer
		want      string
		wantFails bool
	}{
		{"hides the key", safeStringer{stringer{name: "acme:rocket-1", secret: key}}, "acme:rocket-1", false},
		{"%#v shows the key", stringer{name: "acme:rocket-1", secret: key}, "acme:rocket-1", true},
		{"other name", safeStringer{stringer{name: "acme:rocket-2"}}, "acme:rocket-1", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			failed := fails(t, func(tb testing.TB) { providertest.CheckPrinting(tb, tt.m, key, tt.want) })
			if failed != tt.wantFails {
				t.Errorf("CheckPrinting: failed %v, want %v", failed, tt.wantFails)
			}
		})
	}
}

// forward returns a model that posts each request to f and answers with
// the next of answers, so that the scenarios count f's requests.
func forward(t *testing.T, f *providertest.FakeAPI, path string, answers ...agentrunner.Message) agentrunner.Model {
	var n atomic.Int32
	return agentrunner.FunctionModel(func(ctx context.Context, _ []agentrunner.Message, _ agentrunner.RequestParams) (agentrunner.Message, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, f.URL(path), strings.NewReader(`{}`))
		if err != nil {
			return agentrunner.Message{}, err
		}
		res, err := f.Client().Do(req)
		if err != nil {
			return agentrunner.Message{}, err
		}
		_ = res.Body.Close()
		i := int(n.Add(1)) - 1
		if i >= len(answers) {
			t.Errorf("model asked %d times, want %d", i+1, len(answers))
			return agentrunner.Message{}, errors.New("no answer left")
		}
		return answers[i], nil
	})
}

func answer(parts ...agentrunner.Part) agentrunner.Message { return agentrunner.Message{Parts: parts} }

// The scenarios pass with a model that behaves.
func TestScenarios(t *testing.T) {
	orderA17 := []byte(`{"order_id":"A-17"}`)
	t.Run("Lookup", func(t *testing.T) {
		f := providertest.NewFakeAPI(t, "/x", providertest.Repeat(providertest.Reply{Body: "{}"}, 2)...)
		m := forward(t, f, "/x",
			answer(agentrunner.ToolCall("lookup_order", orderA17, "c1")),
			answer(agentrunner.Text(providertest.LookupAnswer)))
		var ran atomic.Int32
		res := providertest.Lookup(t, providertest.NewRunner(t, m, providertest.LookupOrder(&ran)), f, &ran)
		if res.Output != providertest.LookupAnswer {
			t.Errorf("Lookup: got output %q, want %q", res.Output, providertest.LookupAnswer)
		}
	})
	t.Run("Deny", func(t *testing.T) {
		f := providertest.NewFakeAPI(t, "/x", providertest.Repeat(providertest.Reply{Body: "{}"}, 2)...)
		m := forward(t, f, "/x",
			answer(agentrunner.ToolCall("cancel_order", orderA17, "c9")),
			answer(agentrunner.Text("A manager has to approve it.")))
		var ran atomic.Int32
		providertest.Deny(t, providertest.NewRunner(t, m, providertest.CancelOrder(&ran)), f, &ran, "c9")
	})
	t.Run("CheckConcurrent", func(t *testing.T) {
		const n = 4
		f := providertest.NewFakeAPI(t, "/x", providertest.Repeat(providertest.Reply{Body: "{}"}, n)...)
		replies := make([]agentrunner.Message, n)
		for i := range replies {
			replies[i] = answer(agentrunner.Text("Hello."))
		}
		providertest.CheckConcurrent(t, forward(t, f, "/x", replies...), f, n)
	})
}

func TestStubClient(t *testing.T) {
	var seen string
	hc := providertest.StubClient(`{"ok":true}`, func(r *http.Request) { seen = r.Method + " " + r.URL.String() })
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, "https://api.example.com/v1/x", nil)
	if err != nil {
		t.Fatal(err)
	}
	res, err := hc.Do(req)
	if err != nil {
		t.Fatalf("Do: %v", err)
	}
	body, _ := io.ReadAll(res.Body)
	_ = res.Body.Close()
	if seen != "POST https://api.example.com/v1/x" {
		t.Errorf("seen: got %q, want the request", seen)
	}
	if ct := res.Header.Get("Content-Type"); res.StatusCode != http.StatusOK || ct != "application/json" || string(body) != `{"ok":true}` {
		t.Errorf("response: got %d %q %s, want 200 application/json {\"ok\":true}", res.StatusCode, ct, body)
	}
}
