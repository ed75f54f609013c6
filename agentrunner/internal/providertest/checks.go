package providertest

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/slackapprove/slackbot/agentrunner"
)

// CheckRetried runs r on the prompt "Hi" against f, which must fail the
// first request and answer wantOutput to the second, and checks that the
// SDK retried: the run completes with wantOutput, and the second request
// is marked X-Stainless-Retry-Count: 1 (both SDKs are Stainless's).
func CheckRetried(t testing.TB, r *agentrunner.Runner, f *FakeAPI, wantOutput string) {
	t.Helper()
	res, err := r.Run(t.Context(), agentrunner.RunInput{Prompt: "Hi"})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if res.Output != wantOutput {
		t.Errorf("Output: got %q, want %q", res.Output, wantOutput)
	}
	reqs := f.Requests()
	if len(reqs) != 2 {
		t.Fatalf("server got %d requests, want 2", len(reqs))
	}
	if got := reqs[1].Header.Get("X-Stainless-Retry-Count"); got != "1" {
		t.Errorf("second request: X-Stainless-Retry-Count %q, want 1 (a retry by the SDK)", got)
	}
}

// RunError runs r on the prompt "Hi" against f and checks that the run
// fails with the text wantErr, which does not show key, after f got
// wantRequests requests. It returns the error for the checks of its type
// that only the provider's tests can make.
func RunError(t testing.TB, r *agentrunner.Runner, f *FakeAPI, key, wantErr string, wantRequests int) error {
	t.Helper()
	_, err := r.Run(t.Context(), agentrunner.RunInput{Prompt: "Hi"})
	if err == nil {
		t.Fatal("Run: got no error")
	}
	if err.Error() != wantErr {
		t.Errorf("error:\n got %q\nwant %q", err, wantErr)
	}
	if strings.Contains(err.Error(), key) {
		t.Errorf("error contains the API key: %v", err)
	}
	if got := len(f.Requests()); got != wantRequests {
		t.Errorf("server got %d requests, want %d", got, wantRequests)
	}
	return err
}

// CheckRequestError sends m one request with the prompt "Hi" under ctx
// and checks that it fails with an error whose text starts with
// wantPrefix and does not show key, and that is wantErr unless wantErr is
// nil. It returns the error for the checks of its type that only the
// provider's tests can make.
func CheckRequestError(ctx context.Context, t testing.TB, m agentrunner.Model, key, wantPrefix string, wantErr error) error {
	t.Helper()
	_, err := m.Request(ctx, Prompt("Hi"), agentrunner.RequestParams{})
	if err == nil || !strings.HasPrefix(err.Error(), wantPrefix) {
		t.Fatalf("Request: got error %v, want one starting with %q", err, wantPrefix)
	}
	if strings.Contains(err.Error(), key) {
		t.Errorf("error contains the API key: %v", err)
	}
	if wantErr != nil && !errors.Is(err, wantErr) {
		t.Errorf("Request: got %v, want errors.Is %v", err, wantErr)
	}
	return err
}

// CheckConcurrent sends n requests to m at once and checks that all
// succeed and that f, which must hold n replies, got all of them.
func CheckConcurrent(t testing.TB, m agentrunner.Model, f *FakeAPI, n int) {
	t.Helper()
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
			if _, err := m.Request(t.Context(), Prompt("Hi"), agentrunner.RequestParams{}); err != nil {
				t.Errorf("Request: %v", err)
			}
		})
	}
	wg.Wait()
	if got := len(f.Requests()); got != n {
		t.Errorf("server got %d requests, want %d", got, n)
	}
}

// CheckPrinting checks that m prints as want with String and that no verb
// of fmt shows key.
func CheckPrinting(t testing.TB, m fmt.Stringer, key, want string) {
	t.Helper()
	for _, verb := range []string{"%v", "%+v", "%#v", "%s"} {
		if s := fmt.Sprintf(verb, m); strings.Contains(s, key) {
			t.Errorf("Sprintf(%q) shows the key: %s", verb, s)
		}
	}
	if got := m.String(); got != want {
		t.Errorf("String: got %q, want %q", got, want)
	}
}

// DiffParts compares the parts of a response by what a provider maps:
// kind, content, tool name, arguments and call id.
func DiffParts(t testing.TB, got, want []agentrunner.Part) {
	t.Helper()
	type part struct {
		Kind                        agentrunner.PartKind
		Content, Tool, Args, CallID string
	}
	mapped := func(ps []agentrunner.Part) []part {
		var out []part
		for _, p := range ps {
			out = append(out, part{p.PartKind, p.Content, p.ToolName, string(p.Args), p.ToolCallID})
		}
		return out
	}
	if d := cmp.Diff(mapped(want), mapped(got)); d != "" {
		t.Errorf("parts: mismatch (-want +got):\n%s", d)
	}
}
