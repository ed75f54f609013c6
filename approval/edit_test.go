package approval_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/slackapprove/slackbot/agentrunner"
	"github.com/slackapprove/slackbot/approval"
	"github.com/slackapprove/slackbot/routing"
)

const editRoutes = `
routes:
  - name: refunds
    when: {tools: ["issue_refund"]}
    channel: C0APPROVALS
    approvers: {users: [U0ALICE, U0BOB]}
    auto_deny: 'args.amount > 10000'
    auto_approve: 'args.amount <= 100'
`

type editRefundArgs struct {
	Amount  int    `json:"amount"`
	OrderID string `json:"order_id,omitempty"`
}

// newEditService returns a Service that knows issue_refund (its schema)
// and routes it to "refunds" (auto_deny above 10,000, auto_approve up to
// 100). CheckEdit reads no store.
func newEditService(t *testing.T) *approval.Service {
	t.Helper()
	routes, err := routing.ParseRoutes([]byte(editRoutes), "routes.yaml")
	if err != nil {
		t.Fatal(err)
	}
	return approval.New(approval.Config{Routes: routes, Tools: newEditTools(t)})
}

// newEditTools is a toolbox with issue_refund (editRefundArgs).
func newEditTools(t *testing.T) *agentrunner.Toolbox {
	t.Helper()
	noop := func(context.Context, *agentrunner.ToolContext, editRefundArgs) (any, error) { return "ok", nil }
	box, err := agentrunner.NewToolbox([]*agentrunner.Tool{
		agentrunner.NewTool("issue_refund", "Refunds an order.", noop, agentrunner.RequiresApproval()),
	})
	if err != nil {
		t.Fatal(err)
	}
	return box
}

// editRequest is a request of U9's for call.
func editRequest(call agentrunner.ToolCallPart) *approval.Request {
	return &approval.Request{Origin: approval.Origin{User: "U9"}, Requests: agentrunner.DeferredToolRequests{Approvals: []agentrunner.ToolCallPart{call}}}
}

// refusedEdit reports whether err is CheckEdit's refusal of the edit.
func refusedEdit(err error) bool {
	code := approval.ErrorCode(err)
	return code == approval.EINVALID || code == approval.EPOLICY
}

// Edited arguments pass the route's auto_deny and the tool's schema; a
// policy never approves them.
func TestCheckEdit(t *testing.T) {
	svc := newEditService(t)
	call := agentrunner.ToolCallPart{ToolName: "issue_refund", Args: json.RawMessage(`{"amount":500}`), ToolCallID: "c1"}
	tests := []struct {
		name, route, args string
		want              string // the reason contains this; "" means accepted
	}{
		{"within policy", "refunds", `{"amount":600,"order_id":"A-1"}`, ""},
		{"small enough for auto_approve: still only an edit", "refunds", `{"amount":50}`, ""},
		{"auto_deny", "refunds", `{"amount":50000}`, `denies these arguments (auto_deny: args.amount > 10000)`},
		{"auto_deny at the edge", "refunds", `{"amount":10001}`, "auto_deny"},
		{"not JSON", "refunds", `{"amount":`, "not valid JSON"},
		{"not an object", "refunds", `[50000]`, "JSON object"},
		{"too deep, and not the schema", "refunds", `{"amount":5,"x":` + strings.Repeat("[", 64) + strings.Repeat("]", 64) + `}`, "nested deeper than 64 levels"},
		{"not the schema", "refunds", `{"amount":"lots"}`, "amount"},
		{"unknown route", "gone", `{"amount":5}`, `route "gone" is no longer`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := svc.CheckEdit(t.Context(), editRequest(call), &approval.Call{ID: call.ToolCallID, Route: tt.route}, json.RawMessage(tt.args))
			if tt.want == "" {
				if err != nil {
					t.Fatalf("got %v, want accepted", err)
				}
				if !json.Valid(got) || len(got) == 0 {
					t.Errorf("got args %s, want the edited object", got)
				}
				return
			}
			if !refusedEdit(err) || !strings.Contains(approval.ErrorMessage(err), tt.want) {
				t.Errorf("got %v, want refused with a reason containing %q", err, tt.want)
			}
		})
	}
	// Depth is checked whatever the tool's schema: a tool slackbot has no
	// schema for (an API client's) accepts any object, but not one nested
	// deeper than MaxArgsDepth, counting the top object.
	unknown := agentrunner.ToolCallPart{ToolName: "refund_elsewhere", Args: json.RawMessage(`{"amount":500}`), ToolCallID: "c2"}
	for depth, wantRefused := range map[int]bool{agentrunner.MaxArgsDepth - 1: false, agentrunner.MaxArgsDepth: true} {
		args := `{"amount":5,"x":` + strings.Repeat("[", depth) + strings.Repeat("]", depth) + `}`
		_, err := svc.CheckEdit(t.Context(), editRequest(unknown), &approval.Call{ID: unknown.ToolCallID, Route: "refunds"}, json.RawMessage(args))
		if got := refusedEdit(err) && strings.Contains(approval.ErrorMessage(err), "nested deeper than 64 levels"); got != wantRefused {
			t.Errorf("edit nested %d levels: got %v, want refused for depth: %v", depth+1, err, wantRefused)
		}
	}
	// An auto_deny that cannot be evaluated on the edit refuses it: the
	// edit removed the field the policy reads.
	_, err := svc.CheckEdit(t.Context(), &approval.Request{Requests: agentrunner.DeferredToolRequests{Approvals: []agentrunner.ToolCallPart{call}}},
		&approval.Call{ID: call.ToolCallID, Route: "refunds"}, json.RawMessage(`{}`))
	if !refusedEdit(err) {
		t.Errorf("an edit auto_deny cannot evaluate: got %v, want refused", err)
	}
}
