package bot

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
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
  - name: pairs
    when: {tools: ["pay_*"]}
    channel: C0APPROVALS
    approvers: {users: [U0ALICE, U0BOB]}
    required_approvals: 2
    auto_approve: 'args.amount <= 100'
`

type editRefundArgs struct {
	Amount  int    `json:"amount"`
	OrderID string `json:"order_id,omitempty"`
}

// newEditBot returns a Bot that knows issue_refund (its schema) and
// routes it to "refunds" (auto_deny above 10,000, auto_approve up to 100).
func newEditBot(t *testing.T, a approval.Store) *Bot {
	t.Helper()
	routes, err := routing.ParseRoutes([]byte(editRoutes), "routes.yaml")
	if err != nil {
		t.Fatal(err)
	}
	noop := func(context.Context, *agentrunner.ToolContext, editRefundArgs) (any, error) { return "ok", nil }
	runner, err := agentrunner.NewRunner(agentrunner.FunctionModel(nil), []*agentrunner.Tool{
		agentrunner.NewTool("issue_refund", "Refunds an order.", noop, agentrunner.RequiresApproval()),
		agentrunner.NewTool("pay_vendor", "Pays a vendor.", noop, agentrunner.RequiresApproval()),
	})
	if err != nil {
		t.Fatal(err)
	}
	b := newTestBot(testConfig{Slack: nopSlack{}, Approvals: a, Routes: routes, Runner: runner})
	t.Cleanup(b.Close)
	return b
}

// decideLog is one pending call that records the decisions it is given.
type decideLog struct {
	stubStore
	a         *approval.Request
	mu        sync.Mutex
	decisions []approval.Decision
}

// LockCard reads the request as Get does: the fake holds no leases.
func (d *decideLog) LockCard(ctx context.Context, token, _, _ string) (*approval.Request, error) {
	return d.Get(ctx, token)
}

func (d *decideLog) Get(_ context.Context, token string) (*approval.Request, error) {
	if token != d.a.Token {
		return nil, approval.ErrNotFound
	}
	return d.a, nil
}
func (d *decideLog) Decide(_ context.Context, _ string, dec approval.Decision) (*approval.Decided, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	dec.CardJob = "" // random per decision
	d.decisions = append(d.decisions, dec)
	c := *d.a.Call(dec.CallID)
	return &approval.Decided{Request: d.a, Call: &c, Changed: false}, nil
}

// The edit modal refuses, inline and with the reason, arguments the
// route's auto_deny denies (a $500 refund edited to $50,000 was approved);
// what it accepts is recorded as the approver's own approval.
func TestEditModalAppliesAutoDeny(t *testing.T) {
	tok := "tok_0123456789abcdefghijklmnopqrstuvwxyzABCD"
	// An API client's tool slackbot does not know, with the schema the
	// client sent for the call.
	clientSchema := map[string]map[string]any{"c1": {approval.ArgsSchemaKey: map[string]any{
		"type": "object", "properties": map[string]any{"amount": map[string]any{"type": "integer"}}, "required": []any{"amount"}}}}
	for _, tt := range []struct {
		name, tool, route, args string
		metadata                map[string]map[string]any
		wantError               string // in the modal; "" means decided
	}{
		{"auto_deny", "issue_refund", "refunds", `{"amount": 50000}`, nil, "auto_deny: args.amount > 10000"},
		{"schema", "issue_refund", "refunds", `{"amount": "x"}`, nil, "amount"},
		{"accepted", "issue_refund", "refunds", `{"amount": 600}`, nil, ""},
		// auto_approve would approve 50; the edit is still one approver's
		// vote of the two the route needs, never a policy's approval.
		{"auto_approve does not approve an edit", "pay_vendor", "pairs", `{"amount": 50}`, nil, ""},
		{"an API client's schema", "refund_api", "refunds", `{"amount": "x"}`, clientSchema, "/amount"},
		{"an API client's schema, and auto_deny", "refund_api", "refunds", `{"amount": 50000}`, clientSchema, "auto_deny"},
		{"an API client's schema, accepted", "refund_api", "refunds", `{"amount": 600}`, clientSchema, ""},
		{"an API client's tool without a schema", "refund_api", "refunds", `{"amount": 600}`, nil, "cannot be edited here"},
		// The card would show the first amount, the policy and the tool
		// read the last.
		{"a member named twice", "issue_refund", "refunds", `{"amount": 50000, "amount": 600}`, nil, `duplicate member "amount" at /`},
		{"a member named twice, escaped", "refund_api", "refunds", `{"amount": 50, "\u0061mount": 50000}`, clientSchema, `duplicate member "amount" at /`},
		{"a number no double holds", "refund_api", "refunds", `{"amount": 9007199254740993}`, clientSchema, `number 9007199254740993 at /amount`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			store := &decideLog{a: &approval.Request{
				Token: tok, State: approval.StatePending, Origin: approval.Origin{User: "U0REQ", Channel: "C0SUPPORT"},
				Requests: agentrunner.DeferredToolRequests{Metadata: tt.metadata, Approvals: []agentrunner.ToolCallPart{
					{ToolName: tt.tool, Args: json.RawMessage(`{"amount":500}`), ToolCallID: "c1"}}},
				Calls: []approval.Call{{ID: "c1", Kind: agentrunner.KindApproval, Status: approval.CallPending, Route: tt.route, Required: 1,
					Message: approval.MessageRef{Channel: "C1", ID: "1.1"}}},
			}}
			b := newEditBot(t, store)
			meta := encodeModalMetadata(Card{Token: tok, ToolCallID: "c1"}, approval.MessageRef{Channel: "C1", ID: "1.1"})
			payload, _ := json.Marshal(map[string]any{
				"type": "view_submission", "team": map[string]any{"id": "T1"}, "user": map[string]any{"id": "U0ALICE"},
				"view": map[string]any{"callback_id": CallbackEditArgs, "private_metadata": meta, "state": map[string]any{
					"values": map[string]any{BlockIDEditArgs: map[string]any{ActionIDEditArgsInput: map[string]any{"type": "plain_text_input", "value": tt.args}}}}},
			})
			req := httptest.NewRequest(http.MethodPost, "/slack/interactivity", strings.NewReader("payload="+url.QueryEscape(string(payload))))
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			rec := httptest.NewRecorder()
			b.HandleInteraction().ServeHTTP(rec, req)
			body := rec.Body.String()
			if tt.wantError != "" {
				var got struct {
					Action string            `json:"response_action"`
					Errors map[string]string `json:"errors"`
				}
				if err := json.Unmarshal(rec.Body.Bytes(), &got); err != nil || got.Action != "errors" || !strings.Contains(got.Errors[BlockIDEditArgs], tt.wantError) {
					t.Errorf("modal answer %d %s; want response_action errors on %s containing %q", rec.Code, body, BlockIDEditArgs, tt.wantError)
				}
				if len(store.decisions) != 0 {
					t.Errorf("refused edit recorded %+v", store.decisions)
				}
				return
			}
			if strings.Contains(body, "errors") {
				t.Errorf("accepted edit answered %s", body)
			}
			if len(store.decisions) != 1 {
				t.Fatalf("got %d decisions, want 1", len(store.decisions))
			}
			d := store.decisions[0]
			if d.By != "U0ALICE" || d.Action != approval.ActionApprove || !strings.Contains(string(d.OverrideArgs), `"amount"`) {
				t.Errorf("decision %+v; want U0ALICE's approval with the edited arguments", d)
			}
		})
	}
}

// A card offers Edit for a call whose schema slackbot knows: a tool of its
// own, or an API client's tool whose request carries the schema; never
// for a question or an external call.
func TestCardOffersEdit(t *testing.T) {
	b := newEditBot(t, &stubStore{})
	schema := map[string]any{approval.ArgsSchemaKey: map[string]any{"type": "object"}}
	for _, tt := range []struct {
		name, tool string
		kind       agentrunner.CallKind
		metadata   map[string]any
		want       bool
	}{
		{"a known tool", "issue_refund", agentrunner.KindApproval, nil, true},
		{"an API client's tool with its schema", "refund_api", agentrunner.KindApproval, schema, true},
		{"an API client's tool without one", "refund_api", agentrunner.KindApproval, map[string]any{"ticket": "T-1"}, false},
		{"an external call with a schema", "refund_api", agentrunner.KindExternal, schema, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			call := agentrunner.ToolCallPart{ToolName: tt.tool, Args: json.RawMessage(`{"amount":500}`), ToolCallID: "c1"}
			a := &approval.Request{Token: "tok", Requests: agentrunner.DeferredToolRequests{
				Approvals: []agentrunner.ToolCallPart{call}, Metadata: map[string]map[string]any{"c1": tt.metadata}}}
			card := b.cards.card(a, &approval.Call{ID: "c1", Kind: tt.kind, Status: approval.CallPending, Route: "refunds"})
			blocks, _ := json.Marshal(ApprovalBlocks(card))
			if got := strings.Contains(string(blocks), `"action_id":"`+ActionIDEdit+`"`); got != tt.want {
				t.Errorf("the card offers Edit: got %v, want %v", got, tt.want)
			}
		})
	}
}
