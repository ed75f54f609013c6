package mcpgateway_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/slackapprove/slackbot/agentrunner"
	"github.com/slackapprove/slackbot/approval"
)

// answerAsKey approves callID of token as the API key client answering
// through the HTTP API does (POST /v1/approvals/{token}/results: the
// Service's Answer, by the key's client): the token is the one the card's
// button value carries, which anyone who sees the card can read.
func (e *env) answerAsKey(client, token, callID string) error {
	e.t.Helper()
	res := agentrunner.NewDeferredToolResults()
	res.Approvals[callID] = agentrunner.Approve()
	_, err := e.svc.Answer(e.t.Context(), token, approval.Decider{Client: client}, res)
	return err
}

// TestTheCallerCannotApproveItsOwnCall: an MCP client whose call waits
// reads the resume token from the card and approves the call with its
// own key through the HTTP API. The approval is refused (self_approval),
// nothing is recorded, the upstream tool does not run, and the call
// still waits for a person, whose approval runs it.
func TestTheCallerCannotApproveItsOwnCall(t *testing.T) {
	e := newEnv(t, envOptions{})
	cs := e.client(billingKey, nil)
	ch := call(t.Context(), cs, &mcp.CallToolParams{Name: "tickets__create_issue", Arguments: map[string]any{"title": "drop the prod database"}})
	token, callID, _ := e.waitCard(1)
	if err := e.answerAsKey(billing, token, callID); approval.ErrorCode(err) != approval.ESELFAPPROVAL {
		t.Fatalf("the caller's key approves its own call: %v (code %q), want self_approval", err, approval.ErrorCode(err))
	}
	r, err := e.svc.Get(t.Context(), token)
	if err != nil {
		t.Fatal(err)
	}
	if r.State != approval.StatePending || r.Call(callID).Status != approval.CallPending {
		t.Fatalf("after the refused approval: request %s, call %s; want both pending", r.State, r.Call(callID).Status)
	}
	select {
	case got := <-ch:
		t.Fatalf("the call returned before a person decided: %+v", got)
	default:
	}
	if n := len(e.tickets.callsOf("create_issue")); n != 0 {
		t.Fatalf("upstream called %d times with nobody deciding", n)
	}
	e.decide(token, callID, approval.Decision{Action: approval.ActionApprove})
	if res := wait(t, ch); res.IsError || text(res) != "created #1: drop the prod database" {
		t.Errorf("after a person approved: %q (isError %v); want the upstream's result", text(res), res.IsError)
	}
}

// selfRoutes let the requester approve its own calls: a team may allow
// it for the HTTP API, but the gateway still runs only what a person, a
// policy or a grant approved.
const selfRoutes = `
routes:
  - name: writes
    when: {tools: ["tickets__*", "Bash"]}
    channel: C0APPROVALS
    approvers: {users: [U0ALICE]}
    allow_self_approval: true
`

// TestTheGatewayRunsNoCallItsCallerApproved: on a route with
// allow_self_approval the key's own approval is recorded, but neither an
// upstream call nor approval_prompt acts on it: the upstream tool does not
// run (a tool error says why), and the prompt answers deny.
func TestTheGatewayRunsNoCallItsCallerApproved(t *testing.T) {
	e := newEnv(t, envOptions{routes: selfRoutes})
	cs := e.client(billingKey, nil)
	for i, p := range []*mcp.CallToolParams{
		{Name: "tickets__create_issue", Arguments: map[string]any{"title": "drop the prod database"}},
		{Name: "approval_prompt", Arguments: json.RawMessage(`{"tool_name":"Bash","input":{"command":"rm -rf /"},"tool_use_id":"toolu_self"}`)},
	} {
		t.Run(p.Name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			ch := call(ctx, cs, p)
			token, callID, _ := e.waitCard(i + 1)
			if err := e.answerAsKey(billing, token, callID); err != nil {
				t.Fatalf("the key approves its own call where the route allows it: %v", err)
			}
			res := wait(t, ch)
			got := text(res)
			switch p.Name {
			case "approval_prompt":
				var d struct{ Behavior, Message string }
				if err := json.Unmarshal([]byte(got), &d); err != nil || d.Behavior != "deny" || !strings.Contains(d.Message, "billing") {
					t.Errorf("approval_prompt answered %s; want deny, naming the key that approved", got)
				}
			default:
				if !res.IsError || !strings.Contains(got, "billing") || !strings.Contains(got, "not run") {
					t.Errorf("result %q (isError %v); want a tool error saying the call did not run and which key approved it", got, res.IsError)
				}
			}
		})
	}
	if n := len(e.tickets.callsOf("create_issue")); n != 0 {
		t.Errorf("upstream called %d times for a call only its caller approved", n)
	}
}
