package providertest

import (
	"strings"
	"sync/atomic"
	"testing"

	"github.com/slackapprove/slackbot/agentrunner"
)

// The scenarios below run the same way for every provider: the provider's
// test gives f the replies in its API's shape, runs the scenario, and then
// checks in f.Requests what reached its API.

// LookupAnswer is the model's last answer in the Lookup scenario.
const LookupAnswer = "Order A-17 has shipped."

// Lookup runs a tool call's round trip: r, whose tools include LookupOrder
// counting its runs in ran, is asked "Where is order A-17?"; f must answer
// with a call of lookup_order for A-17, then with LookupAnswer. It checks
// that the run completes with LookupAnswer after two requests, the tool
// having run once, and returns the run's result.
func Lookup(t testing.TB, r *agentrunner.Runner, f *FakeAPI, ran *atomic.Int32) *agentrunner.RunResult {
	t.Helper()
	res, err := r.Run(t.Context(), agentrunner.RunInput{Prompt: "Where is order A-17?"})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if res.Status != agentrunner.StatusComplete || res.Output != LookupAnswer {
		t.Errorf("Run: got status %s output %q, want complete %q", res.Status, res.Output, LookupAnswer)
	}
	if got := ran.Load(); got != 1 {
		t.Errorf("tool ran %d times, want 1", got)
	}
	if got := len(f.Requests()); got != 2 {
		t.Fatalf("server got %d requests, want 2", got)
	}
	return res
}

// Denial is what the person says who denies the call in the Deny
// scenario.
const Denial = "Cancellations need a manager."

// Deny runs a denied approval: r, whose tools include CancelOrder counting
// its runs in ran, is asked "Cancel A-17."; f must answer with the call
// callID of cancel_order, then, after the denial, with a text that
// mentions the manager. It checks that the run ends pending on that call
// alone after one request, and that the run resumed with the call denied
// (with Denial) completes without running the tool.
func Deny(t testing.TB, r *agentrunner.Runner, f *FakeAPI, ran *atomic.Int32, callID string) {
	t.Helper()
	res, err := r.Run(t.Context(), agentrunner.RunInput{Prompt: "Cancel A-17.", AllowPending: true})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if res.Status != agentrunner.StatusPending {
		t.Fatalf("Run: got status %s, want pending", res.Status)
	}
	if got := res.Pending.IDs(); len(got) != 1 || got[0] != callID || res.Pending.Kind(callID) != agentrunner.KindApproval {
		t.Fatalf("pending: got %v, want the approval %s", got, callID)
	}
	if got := len(f.Requests()); got != 1 {
		t.Fatalf("server got %d requests before the decision, want 1", got)
	}

	answer := agentrunner.NewDeferredToolResults()
	answer.Approvals[callID] = agentrunner.Deny(Denial)
	res, err = r.Run(t.Context(), agentrunner.RunInput{History: res.Messages, Pending: res.Pending, Results: answer})
	if err != nil {
		t.Fatalf("resume: %v", err)
	}
	if res.Status != agentrunner.StatusComplete || !strings.Contains(res.Output, "manager") {
		t.Errorf("resume: got %s %q, want complete with the model's answer", res.Status, res.Output)
	}
	if got := ran.Load(); got != 0 {
		t.Errorf("denied tool ran %d times", got)
	}
}
