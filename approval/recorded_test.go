package approval_test

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/slackapprove/slackbot/agentrunner"
	"github.com/slackapprove/slackbot/approval"
)

// A decision's recorded form is the wire result each action gives, with
// the failure's default wording and the vote key of edited arguments equal
// to the call's own.
func TestDecisionRecorded(t *testing.T) {
	call := agentrunner.ToolCallPart{ToolName: "rm", ToolCallID: "c1", Args: json.RawMessage(`{ "path": "a" }`)}
	own, ok := approval.ArgsKey(call)
	if !ok {
		t.Fatal("ArgsKey: not an object")
	}
	tests := []struct {
		d                         approval.Decision
		key, approvalRes, callRes string
	}{
		{approval.Decision{CallID: "c1", By: "UA", Action: approval.ActionApprove}, "-", `true`, ""},
		{approval.Decision{CallID: "c1", By: "UA", Action: approval.ActionApprove, OverrideArgs: json.RawMessage(`{"path": "a"}`)},
			own, `{"override_args":{"path":"a"},"kind":"tool-approved"}`, ""},
		{approval.Decision{CallID: "c1", By: "UA", Action: approval.ActionDeny}, "-", `{"message":"` + agentrunner.DefaultDenialMessage + `","kind":"tool-denied"}`,
			`{"message":"` + agentrunner.DefaultDenialMessage + `","kind":"tool-failed"}`},
		{approval.Decision{CallID: "c1", By: "UA", Action: approval.ActionFail}, "-", "", `{"message":"The tool call failed.","kind":"tool-failed"}`},
		{approval.Decision{CallID: "c1", By: "UA", Action: approval.ActionAnswer, Answer: json.RawMessage(` "blue" `)}, approval.VoteKey([]byte(`"blue"`)), "", `"blue"`},
	}
	for _, tt := range tests {
		got, err := tt.d.Recorded()
		if err != nil {
			t.Fatalf("%s: %v", tt.d.Action, err)
		}
		if got.Key != tt.key || got.ApprovalResult != tt.approvalRes || got.CallResult != tt.callRes {
			t.Errorf("%s: got key %q, results %s / %s; want %q, %s / %s", tt.d.Action, got.Key, got.ApprovalResult, got.CallResult, tt.key, tt.approvalRes, tt.callRes)
		}
	}
	for _, d := range []approval.Decision{
		{CallID: "c1", Action: approval.ActionApprove},
		{CallID: "c1", By: "UA", Action: "approve-and-deny"},
		{CallID: "c1", By: "UA", Action: approval.ActionDeny, OverrideArgs: json.RawMessage(`{}`)},
		{CallID: "c1", By: "UA", Action: approval.ActionApprove, Answer: json.RawMessage(`1`)},
		{CallID: "c1", By: "UA", Action: approval.ActionAnswer, Answer: json.RawMessage(`{`)},
	} {
		if _, err := d.Recorded(); !errors.Is(err, approval.ErrInvalid) {
			t.Errorf("%+v: got %v, want ErrInvalid", d, err)
		}
	}
}
