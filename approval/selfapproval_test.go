package approval_test

import (
	"encoding/json"
	"testing"

	"github.com/slackapprove/slackbot/agentrunner"
	"github.com/slackapprove/slackbot/approval"
	"github.com/slackapprove/slackbot/store"
)

// The API key that opened a request answers its external calls, but
// approves or denies its own approvals only on a route with
// allow_self_approval: any other answer touching an approval is refused
// whole (even the call results it also holds), with nothing recorded, and
// each refused approval is counted and audited under the key's name. A
// person still decides the call, and the key still cancels its request.
func TestAPIClientNeverDecidesItsOwnApproval(t *testing.T) {
	f := newFixture(t)
	token := openAPI(t, f, agentrunner.DeferredToolRequests{
		Approvals: []agentrunner.ToolCallPart{call("a", "deploy", `{"env":"staging"}`)},
		Calls:     []agentrunner.ToolCallPart{call("x", "deploy", `{}`)},
	})
	by := approval.Decider{Client: "ci"}
	answerX := approval.Decision{CallID: "x", Action: approval.ActionAnswer, Answer: json.RawMessage(`{"rows":3}`)}
	for _, tc := range []struct {
		name string
		ds   []approval.Decision
	}{
		{"approve", []approval.Decision{{CallID: "a", Action: approval.ActionApprove}}},
		{"deny", []approval.Decision{{CallID: "a", Action: approval.ActionDeny, Reason: "no"}}},
		{"approve with an edit", []approval.Decision{{CallID: "a", Action: approval.ActionApprove, OverrideArgs: json.RawMessage(`{"env":"dev"}`)}}},
		{"approve beside a call result", []approval.Decision{{CallID: "a", Action: approval.ActionApprove}, answerX}},
	} {
		_, err := f.Svc.Decide(t.Context(), token, by, tc.ds...)
		if approval.ErrorCode(err) != approval.ESELFAPPROVAL {
			t.Errorf("%s: code %q (%v), want self_approval", tc.name, approval.ErrorCode(err), err)
		}
	}
	r, err := f.Store.Get(t.Context(), token)
	if err != nil {
		t.Fatal(err)
	}
	if a, x := r.Call("a"), r.Call("x"); r.State != approval.StatePending || a.Status != approval.CallPending || x.Status != approval.CallPending {
		t.Fatalf("after refused answers: request %s, a %s, x %s; want all pending (nothing recorded)", r.State, a.Status, x.Status)
	}
	if got := f.Metrics.RefusedCodes; len(got) != 4 || got[0] != approval.ESELFAPPROVAL || got[3] != approval.ESELFAPPROVAL {
		t.Errorf("refusal metrics = %v, want 4 × self_approval", got)
	}
	evs, err := f.Store.ReadAudit(t.Context(), "0", 100)
	if err != nil {
		t.Fatal(err)
	}
	refusals := 0
	for _, ev := range evs {
		if ev.Type != store.AuditRefused {
			continue
		}
		refusals++
		if ev.By != "ci" || ev.CallID != "a" || ev.Code != approval.ESELFAPPROVAL {
			t.Errorf("audited refusal %+v, want by ci, call a, code self_approval", ev)
		}
	}
	if refusals != 4 {
		t.Errorf("audit stream has %d refusals, want 4", refusals)
	}

	if _, err := f.Svc.Decide(t.Context(), token, by, answerX); err != nil {
		t.Fatalf("the key answers its external call: %v", err)
	}
	for _, u := range []string{"UALICE", "UBOB"} {
		if _, err := f.Click(t, &approval.Request{Token: token}, u, "a", approval.ActionApprove); err != nil {
			t.Fatalf("%s approves: %v", u, err)
		}
	}
	r, _ = f.Store.Get(t.Context(), token)
	if a := r.Call("a"); r.State != approval.StateResolved || a.Status != approval.CallApproved || a.ByClient {
		t.Errorf("after the approvers: request %s, a %s (by client %v); want resolved, approved by people", r.State, a.Status, a.ByClient)
	}

	token = openAPI(t, f, agentrunner.DeferredToolRequests{Approvals: []agentrunner.ToolCallPart{call("b", "deploy", `{}`)}})
	after, err := f.Svc.Cancel(t.Context(), token, by)
	if err != nil || after.State != approval.StateCancelled || after.Call("b").Status == approval.CallApproved {
		t.Fatalf("the key cancels its request: %+v, %v; want cancelled, nothing approved", after, err)
	}
	if after.Results(nil) == nil || after.Results(nil).Approvals["b"].Approved {
		t.Errorf("results of a cancelled request: %+v, want b denied", after.Results(nil))
	}
}

// On a route with allow_self_approval the key decides its own approvals,
// and the call records that its API client decided it (no receipt).
func TestAPIClientApprovesItsOwnCallWhereTheRouteAllows(t *testing.T) {
	f := newFixture(t)
	token := openAPI(t, f, agentrunner.DeferredToolRequests{Approvals: []agentrunner.ToolCallPart{call("n", "note", `{}`)}})
	d, err := f.Svc.Decide(t.Context(), token, approval.Decider{Client: "ci"}, approval.Decision{CallID: "n", Action: approval.ActionApprove})
	if err != nil || !d.Resolved {
		t.Fatalf("self-approval on a route that allows it: %+v, %v", d, err)
	}
	if c := d.Request.Call("n"); c.Status != approval.CallApproved || !c.ByClient {
		t.Errorf("call after the key's approval: %s, by client %v; want approved by its client", c.Status, c.ByClient)
	}
	if len(f.Metrics.RefusedCodes) != 0 {
		t.Errorf("refusals counted: %v, want none", f.Metrics.RefusedCodes)
	}
}
