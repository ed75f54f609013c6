package approval_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/slackapprove/slackbot/agentrunner"
	"github.com/slackapprove/slackbot/approval"
)

// Open, the pipeline every door opens requests through, refuses a call
// whose arguments read two ways, whatever the door checked: nothing is
// recorded, no policy decides it, no card is posted.
func TestOpenRefusesArgumentsReadTwoWays(t *testing.T) {
	f := newFixture(t)
	for _, args := range []string{
		`{"amount":5,"note":"` + strings.Repeat("x", 3000) + `","amount":50000}`,
		`{"amount":5,"meta":{"k":1,"\u006b":2}}`,
	} {
		token := agentrunner.NewToken()
		_, err := f.Svc.Open(t.Context(), approval.Opening{
			Token: token, Origin: approval.Origin{Client: "ci"},
			Requests: agentrunner.DeferredToolRequests{Approvals: []agentrunner.ToolCallPart{call("r1", "refund", args)}},
		})
		if approval.ErrorCode(err) != approval.EINVALID || !strings.Contains(approval.ErrorMessage(err), "duplicate member") {
			t.Errorf("Open(%.40s…): %v, want invalid naming the duplicate member", args, err)
		}
		if _, err := f.Store.Get(t.Context(), token); approval.ErrorCode(err) != approval.ENOTFOUND {
			t.Errorf("a refused Open recorded the request (%v)", err)
		}
	}
	if len(f.Poster.Posted) != 0 {
		t.Errorf("cards posted: %v, want none", f.Poster.Posted)
	}
}

// An edit whose arguments read two ways is refused with the place named,
// through the tool's schema or without one: an approver's edit is what
// runs, so it must read one way too.
func TestCheckEditRefusesArgumentsReadTwoWays(t *testing.T) {
	svc := newEditService(t)
	for _, tool := range []string{"issue_refund", "refund_elsewhere"} {
		call := agentrunner.ToolCallPart{ToolName: tool, Args: json.RawMessage(`{"amount":500}`), ToolCallID: "c1"}
		for args, want := range map[string]string{
			`{"amount":50,"amount":50000}`:           `duplicate member "amount" at /`,
			`{"amount":50,"\u0061mount":50000}`:      `duplicate member "amount" at /`,
			`{"amount":50,"order_id":"\ud800"}`:      `string at /order_id is not Unicode text`,
			`{"amount":9007199254740993}`:            `number 9007199254740993 at /amount`,
			"{\"amount\":50,\"order_id\":\"A\xff\"}": `string at /order_id is not Unicode text: invalid UTF-8`,
		} {
			_, err := svc.CheckEdit(t.Context(), editRequest(call), &approval.Call{ID: call.ToolCallID, Route: "refunds"}, json.RawMessage(args))
			if approval.ErrorCode(err) != approval.EINVALID || !strings.Contains(approval.ErrorMessage(err), want) {
				t.Errorf("%s: edit %q: %v, want invalid saying %q", tool, args, err, want)
			}
		}
	}
}
