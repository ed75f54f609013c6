package approval_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/slackapprove/slackbot/agentrunner"
	"github.com/slackapprove/slackbot/approval"
	"github.com/slackapprove/slackbot/routing"
)

const viewRoutes = `
routes:
  - name: refunds
    when: {tools: ["refund_*"]}
    channel: C0APPROVALS
    approvers: {users: [U0ALICE], usergroups: [S0FINANCE]}
    timeout: 2h
    confirm: true
    auto_approve: 'args.amount <= 100'
    escalate:
      after: 1h
      channel: C0ONCALL
      approvers: {users: [U0CAROL], usergroups: [S0ONCALL]}
    grants: 8h
  - name: fs
    channel: C0APPROVALS
    approvers: {users: [U0ALICE]}
mcp_servers:
  - name: fs
    command: [x]
`

var (
	viewCreated = time.Date(2026, 3, 2, 15, 4, 5, 0, time.UTC)
	viewExpires = viewCreated.Add(2 * time.Hour)
)

func newViewer(t *testing.T, now time.Time) approval.Viewer {
	t.Helper()
	routes, err := routing.ParseRoutes([]byte(viewRoutes), "routes.yaml")
	if err != nil {
		t.Fatal(err)
	}
	return approval.Viewer{Routes: routes, Now: func() time.Time { return now }}
}

// viewRequest is a pending request of one approval call of tool with
// args, asked by origin.
func viewRequest(origin approval.Origin, route, tool, args string) (*approval.Request, *approval.Call) {
	r := &approval.Request{
		Token: "tok", Origin: origin, CreatedAt: viewCreated, ExpiresAt: viewExpires,
		Requests: agentrunner.DeferredToolRequests{Approvals: []agentrunner.ToolCallPart{{ToolCallID: "c1", ToolName: tool, Args: json.RawMessage(args)}}},
		Calls:    []approval.Call{{ID: "c1", Kind: agentrunner.KindApproval, Status: approval.CallPending, Route: route, Required: 1, Rule: approval.RuleArguments}},
	}
	return r, &r.Calls[0]
}

// TestViewOfACall checks what a person is shown of a pending call: who
// asked and where, the route's confirm, grants and policy, the escalation
// once it is due, and the confirmation text.
func TestViewOfACall(t *testing.T) {
	r, c := viewRequest(approval.Origin{User: "U0BOB", Channel: "C0SUPPORT"}, "refunds", "refund_order", `{"amount":250}`)
	got := newViewer(t, viewCreated.Add(90*time.Minute)).View(r, c)
	want := approval.CallView{
		Token: "tok", ToolCallID: "c1", Kind: agentrunner.KindApproval, ToolName: "refund_order", ToolLabel: "refund_order",
		Args: json.RawMessage(`{"amount":250}`), Confirmation: `Run refund_order({"amount":250})?`,
		Requester: "U0BOB", RequesterIsUser: true, SourceChannel: "C0SUPPORT", Route: "refunds",
		Mentions: []string{"S0FINANCE"}, CreatedAt: viewCreated, ExpiresAt: viewExpires, RequiredApprovals: 1,
		AllowDenyReason: true, Confirm: true, Rule: approval.RuleArguments, AutoApprove: "args.amount <= 100",
		GrantChoices: []time.Duration{time.Hour, 8 * time.Hour}, EscalatedTo: []string{"U0CAROL", "S0ONCALL"},
		State: approval.CallPending,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("View (-want +got):\n%s", diff)
	}
	if early := newViewer(t, viewCreated.Add(time.Minute)).View(r, c); early.EscalatedTo != nil {
		t.Errorf("EscalatedTo before the escalation is due = %v, want none", early.EscalatedTo)
	}
}

// TestViewOfAnAPIRequest checks that an API client's request shows the
// key as who asked and the name it gave as its claim, and that an MCP
// server's tool shows as "<server>.<tool>", in its confirmation too.
func TestViewOfAnAPIRequest(t *testing.T) {
	r, c := viewRequest(approval.Origin{Client: "bench", Name: "carol"}, "fs", "fs__write_file", `{"path":"a"}`)
	got := newViewer(t, viewCreated).View(r, c)
	if got.Requester != "bench" || got.RequesterIsUser || got.RequesterClaim != "carol" {
		t.Errorf("requester, is user, claim = %q, %v, %q; want bench, false, carol", got.Requester, got.RequesterIsUser, got.RequesterClaim)
	}
	if got.ToolLabel != "fs.write_file" || got.Confirmation != `Run fs.write_file({"path":"a"})?` {
		t.Errorf("label, confirmation = %q, %q", got.ToolLabel, got.Confirmation)
	}
}

// TestViewOfAPermissionPrompt checks that a coding agent's prompt is
// named, editable (its input is the agent's to check), and leads with its
// change (a tool whose change slackbot shows) or leaves its confirmation
// to the surface (any other).
func TestViewOfAPermissionPrompt(t *testing.T) {
	r, c := viewRequest(approval.Origin{Client: "laptop"}, "fs", "Bash", `{"command":"ls"}`)
	r.Requests.Metadata = map[string]map[string]any{"c1": {approval.MetaPermissionPrompt: "Claude Code"}}
	got := newViewer(t, viewCreated).View(r, c)
	if got.PromptAgent != "Claude Code" || !got.AllowEdit || got.Confirmation != "Claude Code wants to run a command" || got.Change == nil {
		t.Errorf("prompt agent, edit, confirmation, change = %q, %v, %q, %v; want Claude Code, true, the change's lead, the change", got.PromptAgent, got.AllowEdit, got.Confirmation, got.Change)
	}
	r, c = viewRequest(approval.Origin{Client: "laptop"}, "fs", "WebFetch", `{"url":"https://example.com"}`)
	r.Requests.Metadata = map[string]map[string]any{"c1": {approval.MetaPermissionPrompt: "Claude Code"}}
	if got := newViewer(t, viewCreated).View(r, c); got.Confirmation != "" || got.Change != nil {
		t.Errorf("WebFetch's prompt: confirmation, change = %q, %v; want empty, none", got.Confirmation, got.Change)
	}
}

// TestChoices checks which choices each call offers, in order.
func TestChoices(t *testing.T) {
	approve, deny := approval.Choice{Kind: approval.ChooseApprove}, approval.Choice{Kind: approval.ChooseDeny}
	tests := []struct {
		name string
		v    approval.CallView
		want []approval.Choice
	}{
		{"zero view is a pending approval", approval.CallView{}, []approval.Choice{approve, deny}},
		{"every choice", approval.CallView{
			Kind: agentrunner.KindApproval, State: approval.CallPending, Confirm: true,
			GrantChoices: []time.Duration{time.Hour, 8 * time.Hour}, AllowDenyReason: true, AllowEdit: true,
		}, []approval.Choice{
			{Kind: approval.ChooseApprove, Confirm: true}, deny,
			{Kind: approval.ChooseApproveFor, Grant: time.Hour, Confirm: true},
			{Kind: approval.ChooseApproveFor, Grant: 8 * time.Hour, Confirm: true},
			{Kind: approval.ChooseDenyWithReason}, {Kind: approval.ChooseEdit},
		}},
		{"question", approval.CallView{Kind: agentrunner.KindQuestion}, []approval.Choice{{Kind: approval.ChooseAnswer}}},
		{"external result", approval.CallView{Kind: agentrunner.KindExternal}, nil},
		{"decided", approval.CallView{State: approval.CallApproved, AllowEdit: true}, nil},
		{"expired", approval.CallView{State: approval.CallExpired}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, tt.v.Choices()); diff != "" {
				t.Errorf("Choices (-want +got):\n%s", diff)
			}
		})
	}
	for _, k := range []approval.ChoiceKind{approval.ChooseDenyWithReason, approval.ChooseEdit, approval.ChooseAnswer} {
		if !(approval.Choice{Kind: k}).Form() {
			t.Errorf("%s: Form() = false, want true", k)
		}
	}
	for _, k := range []approval.ChoiceKind{approval.ChooseApprove, approval.ChooseDeny, approval.ChooseApproveFor} {
		if (approval.Choice{Kind: k}).Form() {
			t.Errorf("%s: Form() = true, want false", k)
		}
	}
}

// TestMessageRefJSON checks that a call's message keeps the JSON names
// the stored records and the replicas of a rolling deploy read.
func TestMessageRefJSON(t *testing.T) {
	b, err := json.Marshal(approval.Call{ID: "c1", Message: approval.MessageRef{Channel: "C0APPROVALS", ID: "1700000000.000100"}})
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"channel": "C0APPROVALS", "ts": "1700000000.000100"}
	if diff := cmp.Diff(want, got["message"]); diff != "" {
		t.Errorf("message JSON (-want +got):\n%s", diff)
	}
	var old approval.Call
	if err := json.Unmarshal([]byte(`{"id":"c1","message":{"channel":"C1","ts":"1.2"}}`), &old); err != nil {
		t.Fatal(err)
	}
	if old.Message != (approval.MessageRef{Channel: "C1", ID: "1.2"}) {
		t.Errorf("old record's message = %+v, want C1, 1.2", old.Message)
	}
}
