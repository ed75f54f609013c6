package approval_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/slackapprove/slackbot/agentrunner"
	"github.com/slackapprove/slackbot/approval"
	"github.com/slackapprove/slackbot/routing"
)

func parseRoutes(t *testing.T, src string) *routing.Routes {
	t.Helper()
	rs, err := routing.ParseRoutes([]byte(src), t.Name()+".yaml")
	if err != nil {
		t.Fatalf("ParseRoutes: %v", err)
	}
	return rs
}

type refundArgs struct {
	OrderID string  `json:"order_id"`
	Amount  float64 `json:"amount"`
}

type deleteArgs struct {
	Path string `json:"path"`
}

// refundShop is a small agent whose tools record what actually ran.
type refundShop struct {
	mu       sync.Mutex
	refunded []float64
	deleted  []string
}

func (s *refundShop) tools() []*agentrunner.Tool {
	return []*agentrunner.Tool{
		agentrunner.NewTool("issue_refund", "Refund an order.",
			func(_ context.Context, _ *agentrunner.ToolContext, a refundArgs) (any, error) {
				s.mu.Lock()
				defer s.mu.Unlock()
				s.refunded = append(s.refunded, a.Amount)
				return "refunded", nil
			}, agentrunner.RequiresApproval()),
		agentrunner.NewTool("delete_file", "Delete a file.",
			func(_ context.Context, _ *agentrunner.ToolContext, a deleteArgs) (any, error) {
				s.mu.Lock()
				defer s.mu.Unlock()
				s.deleted = append(s.deleted, a.Path)
				return "deleted", nil
			}, agentrunner.RequiresApproval()),
	}
}

// callsOnce is a model that makes the given calls in its first response and
// then answers with every tool return it saw, in order.
func callsOnce(calls ...agentrunner.Part) agentrunner.FunctionModel {
	return func(_ context.Context, msgs []agentrunner.Message, _ agentrunner.RequestParams) (agentrunner.Message, error) {
		var returns []string
		for _, m := range msgs {
			for _, p := range m.Parts {
				if p.PartKind == agentrunner.PartToolReturn {
					returns = append(returns, p.ToolCallID+"="+p.ReturnText())
				}
			}
		}
		if len(msgs) == 1 {
			return agentrunner.Message{Parts: calls}, nil
		}
		return agentrunner.Message{Parts: []agentrunner.Part{agentrunner.Text(strings.Join(returns, "\n"))}}, nil
	}
}

func refundCall(id string, amount float64) agentrunner.Part {
	args, _ := json.Marshal(refundArgs{OrderID: "o-" + id, Amount: amount})
	return agentrunner.ToolCall("issue_refund", args, id)
}

// Scenario: a refund policy approves issue_refund up to 100 and denies the
// rest; nothing reaches a person, and only the small refund runs.
func TestPolicyRefundScenario(t *testing.T) {
	rs := parseRoutes(t, `
routes:
  - name: refunds
    when: {tools: ["issue_refund"]}
    channel: C0APPROVALS
    approvers: {users: [U0ALICE]}
    auto_approve: "args.amount <= 100"
    auto_deny: "args.amount > 100"
`)
	shop := &refundShop{}
	r, err := agentrunner.NewRunner(callsOnce(refundCall("small", 40), refundCall("large", 250)), shop.tools(),
		agentrunner.WithHandlers(&approval.Policy{Routes: rs}))
	if err != nil {
		t.Fatal(err)
	}
	res, err := r.Run(t.Context(), agentrunner.RunInput{Prompt: "refund both", Deps: &approval.Origin{Channel: "C0SUPPORT", User: "U0CAROL"}})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if res.Status != agentrunner.StatusComplete {
		t.Fatalf("status %s, pending %+v; want complete", res.Status, res.Pending)
	}
	if diff := cmp.Diff([]float64{40}, shop.refunded); diff != "" {
		t.Errorf("refunds that ran (-want +got):\n%s", diff)
	}
	want := "small=refunded\nlarge=The \"refunds\" route's policy denied this call (auto_deny: args.amount > 100)."
	if res.Output != want {
		t.Errorf("output:\n%s\nwant:\n%s", res.Output, want)
	}
}

// A call no route matches is denied with a clear message, never asked and
// never approved; a call the policy cannot decide stays for a person.
func TestPolicyUnmatchedAndUndecided(t *testing.T) {
	rs := parseRoutes(t, `
routes:
  - name: refunds
    when: {tools: ["issue_refund"]}
    channel: C0APPROVALS
    approvers: {users: [U0ALICE]}
    auto_approve: "args.amount <= 100"
`)
	shop := &refundShop{}
	del := agentrunner.ToolCall("delete_file", json.RawMessage(`{"path":"/etc/passwd"}`), "del")
	r, err := agentrunner.NewRunner(callsOnce(refundCall("small", 40), refundCall("large", 250), del), shop.tools(),
		agentrunner.WithHandlers(&approval.Policy{Routes: rs}))
	if err != nil {
		t.Fatal(err)
	}
	res, err := r.Run(t.Context(), agentrunner.RunInput{Prompt: "go", AllowPending: true, Deps: &approval.Origin{Channel: "C0SUPPORT"}})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if res.Status != agentrunner.StatusPending || res.Pending == nil {
		t.Fatalf("status %s, want pending", res.Status)
	}
	if got := res.Pending.IDs(); !cmp.Equal(got, []string{"large"}) {
		t.Errorf("pending %v, want [large] (the refund above the limit, for a person)", got)
	}
	if len(shop.deleted) != 0 || !cmp.Equal(shop.refunded, []float64{40}) {
		t.Errorf("ran deletes %v refunds %v, want no deletes and the 40 refund", shop.deleted, shop.refunded)
	}
	var denial string
	for _, m := range res.Messages {
		for _, p := range m.Parts {
			if p.PartKind == agentrunner.PartToolReturn && p.ToolCallID == "del" {
				denial = p.ReturnText()
			}
		}
	}
	if want := "No approval route matches delete_file from C0SUPPORT; the call was denied. Ask an admin to add a route."; denial != want {
		t.Errorf("model was told %q, want %q", denial, want)
	}
}

func TestPolicyHandleDeferred(t *testing.T) {
	rs := parseRoutes(t, `
routes:
  - name: support-refunds
    when: {tools: ["issue_refund"], channels: ["C0SUPPORT"]}
    channel: C0APPROVALS
    approvers: {users: [U0ALICE]}
    auto_approve: "args.amount <= 100 && requester == 'U0CAROL'"
  - name: lookups
    when: {tools: ["lookup_*", "ask_*"]}
    channel: C0APPROVALS
    approvers: {users: [U0ALICE]}
    auto_approve: "metadata.risk == 'low'"
`)
	req := agentrunner.DeferredToolRequests{
		Approvals: []agentrunner.ToolCallPart{
			{ToolName: "issue_refund", Args: json.RawMessage(`{"amount": 20}`), ToolCallID: "refund"},
			// Args as a JSON string, as Pydantic AI may send them.
			{ToolName: "issue_refund", Args: json.RawMessage(`"{\"amount\": 30}"`), ToolCallID: "refund-str"},
			{ToolName: "lookup_order", Args: json.RawMessage(`{}`), ToolCallID: "lookup-low"},
			{ToolName: "lookup_order", Args: json.RawMessage(`{}`), ToolCallID: "lookup-nometa"},
			{ToolName: "lookup_order", Args: json.RawMessage(`[1]`), ToolCallID: "lookup-badargs"},
			{ToolName: "delete_file", Args: json.RawMessage(`{}`), ToolCallID: "delete"},
		},
		Calls: []agentrunner.ToolCallPart{
			{ToolName: "ask_manager", ToolCallID: "question"},
			{ToolName: "run_job", ToolCallID: "external"},
		},
		Metadata: map[string]map[string]any{
			"lookup-low": {"risk": "low"},
			"question":   {"question": "Which order?"},
		},
	}
	var logs bytes.Buffer
	p := &approval.Policy{Routes: rs, Log: slog.New(slog.NewTextHandler(&logs, nil))}
	rc := &agentrunner.RunContext{RunID: "run-1", Deps: approval.Origin{Channel: "C0SUPPORT", User: "U0CAROL"}}
	got, err := p.HandleDeferred(t.Context(), rc, req)
	if err != nil {
		t.Fatal(err)
	}
	if err := req.Check(got); err != nil {
		t.Fatalf("results name calls that are not pending: %v", err)
	}
	noRoute := func(tool string) string {
		return "No approval route matches " + tool + " from C0SUPPORT; the call was denied. Ask an admin to add a route."
	}
	want := &agentrunner.DeferredToolResults{
		Approvals: map[string]agentrunner.ApprovalResult{
			"refund":     agentrunner.Approve(),
			"refund-str": agentrunner.Approve(),
			"lookup-low": agentrunner.Approve(),
			"delete":     agentrunner.Deny(noRoute("delete_file")),
		},
		Calls: map[string]agentrunner.CallResult{
			// A question on a route is left for a person; a call with no
			// route fails.
			"external": agentrunner.Fail(noRoute("run_job")),
		},
		Metadata: map[string]map[string]any{},
		AnsweredBy: map[string]string{
			"refund":     "policy:support-refunds",
			"refund-str": "policy:support-refunds",
			"lookup-low": "policy:lookups",
			"delete":     "policy:none",
			"external":   "policy:none",
		},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("HandleDeferred mismatch (-want +got):\n%s", diff)
	}
	// The calls the policy could not evaluate are logged, not approved.
	for _, id := range []string{"lookup-nometa", "lookup-badargs"} {
		if !strings.Contains(logs.String(), "tool_call_id="+id) {
			t.Errorf("log does not mention %s:\n%s", id, logs.String())
		}
	}

	// The same refund from another channel or another requester matches
	// no route, or is not auto-approved.
	other := &agentrunner.RunContext{Deps: &approval.Origin{Channel: "C0GENERAL", User: "U0CAROL"}}
	got, err = p.HandleDeferred(t.Context(), other, agentrunner.DeferredToolRequests{Approvals: req.Approvals[:1]})
	if err != nil {
		t.Fatal(err)
	}
	if a := got.Approvals["refund"]; a.Approved || got.AnsweredBy["refund"] != approval.ByNoRoute {
		t.Errorf("refund from C0GENERAL: got %+v by %q, want denied by policy:none", a, got.AnsweredBy["refund"])
	}
	mallory := &agentrunner.RunContext{Deps: &approval.Origin{Channel: "C0SUPPORT", User: "U0MALLORY"}}
	got, err = p.HandleDeferred(t.Context(), mallory, agentrunner.DeferredToolRequests{Approvals: req.Approvals[:1]})
	if err != nil {
		t.Fatal(err)
	}
	if got.Len() != 0 {
		t.Errorf("refund requested by U0MALLORY: got %+v, want it left for a person", got)
	}
}

func TestPolicyNoRoutes(t *testing.T) {
	p := &approval.Policy{}
	req := agentrunner.DeferredToolRequests{Approvals: []agentrunner.ToolCallPart{{ToolName: "x", ToolCallID: "1"}}}
	got, err := p.HandleDeferred(t.Context(), nil, req)
	if err != nil {
		t.Fatal(err)
	}
	want := "No approval route matches x from outside Slack; the call was denied. Ask an admin to add a route."
	if a := got.Approvals["1"]; a.Approved || a.Message != want {
		t.Errorf("got %+v, want denial %q", a, want)
	}
}

// embeddedOrigin is a run's deps that carry more than the origin.
type embeddedOrigin struct {
	*approval.Origin
	Extra string
}

func TestOriginFrom(t *testing.T) {
	o := &approval.Origin{Channel: "C0SUPPORT", User: "U0CAROL"}
	tests := []struct {
		name string
		rc   *agentrunner.RunContext
		want approval.Origin
	}{
		{"nil run", nil, approval.Origin{}},
		{"no deps", &agentrunner.RunContext{}, approval.Origin{}},
		{"pointer", &agentrunner.RunContext{Deps: o}, *o},
		{"value", &agentrunner.RunContext{Deps: *o}, *o},
		{"embedded", &agentrunner.RunContext{Deps: embeddedOrigin{Origin: o}}, *o},
		{"nil pointer", &agentrunner.RunContext{Deps: (*approval.Origin)(nil)}, approval.Origin{}},
		{"other deps", &agentrunner.RunContext{Deps: "db"}, approval.Origin{}},
	}
	for _, tt := range tests {
		got := approval.OriginFrom(tt.rc)
		if got == nil || *got != tt.want {
			t.Errorf("%s: OriginFrom = %+v, want %+v", tt.name, got, tt.want)
		}
	}
	if got := (&approval.Origin{Client: "billing"}).Requester(); got != "api:billing" {
		t.Errorf("API client requester = %q, want api:billing", got)
	}
}
