package main

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/slackapprove/slackbot/agentrunner"
	"github.com/slackapprove/slackbot/approval"
	"github.com/slackapprove/slackbot/internal/slackfake"
)

// grantRoutes: Alice and Bob approve deletions, and may grant for up to 8 h.
const grantRoutes = `
routes:
  - name: deletions
    when: {tools: ["delete_*"]}
    channel: C0APPROVALS
    approvers: {users: [U0ALICE, U0BOB]}
    timeout: 1h
    grants: 8h
`

// deleteNamedModel deletes the customer its prompt names ("delete customer
// C-1"), then says done.
func deleteNamedModel() agentrunner.FunctionModel {
	return func(_ context.Context, msgs []agentrunner.Message, _ agentrunner.RequestParams) (agentrunner.Message, error) {
		last := msgs[len(msgs)-1]
		for _, p := range last.Parts {
			if p.PartKind == agentrunner.PartToolReturn {
				return agentrunner.Message{Parts: []agentrunner.Part{agentrunner.Text("done")}}, nil
			}
		}
		var prompt string
		for _, p := range last.Parts {
			prompt += p.Content
		}
		fields := strings.Fields(prompt)
		args, _ := json.Marshal(customerArgs{CustomerID: fields[len(fields)-1]})
		return agentrunner.Message{Parts: []agentrunner.Part{agentrunner.ToolCall("delete_customer", args, "call_"+agentrunner.NewToken()[:8])}}, nil
	}
}

// TestGrantApprovesRepeatsOnly: "Approve for 8 h" approves the call and,
// until the grant ends or is revoked, the same call by the same requester
// without a card (her thread says so, the decision is grant:<approver>);
// other arguments, another requester, an ended or revoked grant each get
// a card. The requester cannot grant her own call.
func TestGrantApprovesRepeatsOnly(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{routes: grantRoutes, model: deleteNamedModel()})
	ask := func(user, customer string) string {
		return e.mention(user, general, "delete customer "+customer)
	}
	waitCard := func(customer, why string) slackfake.Message {
		t.Helper()
		e.waitFor("a card: "+why, func() bool { return e.pendingCard(customer) != nil })
		return *e.pendingCard(customer)
	}

	ask(carol, "C-1")
	card := waitCard("C-1", "the first call")
	for _, want := range []string{"approve_for_60m", "approve_for_480m", "Approve for 1 h", "Approve for 8 h"} {
		if !strings.Contains(cardText(card), want) {
			t.Errorf("the card has no %q", want)
		}
	}
	if code := e.click(alice, card, "approve_for_480m"); code != http.StatusOK {
		t.Fatalf("approve for 8 h: status %d", code)
	}
	e.waitFor("the first deletion", func() bool { return len(e.tools.Runs("delete_customer")) == 1 })
	grants, err := e.app.svc.Grants(t.Context(), alice)
	if err != nil || len(grants) != 1 || grants[0].Requester != carol || grants[0].Tool != "delete_customer" {
		t.Fatalf("Alice's grants: %+v, %v; want one for Carol's delete_customer", grants, err)
	}

	cards := len(e.cards())
	thread := ask(carol, "C-1")
	e.waitFor("the repeat to run without a card", func() bool { return len(e.tools.Runs("delete_customer")) == 2 })
	if n := len(e.cards()); n != cards {
		t.Errorf("a granted repeat posted a card (%d cards, want %d)", n, cards)
	}
	e.waitFor("the thread to say why", func() bool {
		return strings.Contains(strings.Join(e.replies(general, thread), "\n"), "was approved without a card: <@U0ALICE> granted this call")
	})
	if n := e.audited("granted"); n != 1 {
		t.Errorf("%d grants audited, want 1", n)
	}

	// It never widens: other arguments, another requester.
	ask(carol, "C-2")
	waitCard("C-2", "other arguments")
	e.denyPending("C-2")
	ask(dave, "C-1")
	waitCard("C-1", "another requester")
	e.denyPending("C-1")

	// Only its approver revokes it; revoked, it approves nothing.
	if _, err := e.app.svc.Revoke(t.Context(), grants[0].ID, bob); approval.ErrorCode(err) != approval.ENOTFOUND {
		t.Errorf("Bob revoking Alice's grant: %v, want ENOTFOUND", err)
	}
	if _, err := e.app.svc.Revoke(t.Context(), grants[0].ID, alice); err != nil {
		t.Fatalf("Alice revokes her grant: %v", err)
	}
	ask(carol, "C-1")
	waitCard("C-1", "after the revocation")
	e.denyPending("C-1")
	if n := e.audited("grant_revoked"); n != 1 {
		t.Errorf("%d revocations audited, want 1", n)
	}

	// A grant that ended approves nothing.
	ask(carol, "C-3")
	if code := e.click(bob, waitCard("C-3", "a new call"), "approve_for_60m"); code != http.StatusOK {
		t.Fatalf("approve for 1 h: status %d", code)
	}
	e.waitFor("the deletion of C-3", func() bool { return len(e.tools.Runs("delete_customer")) == 3 })
	e.clock.Add(61 * time.Minute)
	ask(carol, "C-3")
	waitCard("C-3", "after the grant ended")
	e.denyPending("C-3")

	// The requester may not grant her own call (the route does not allow
	// self-approval), and nothing is granted.
	ask(alice, "C-4")
	if code := e.click(alice, waitCard("C-4", "Alice's own call"), "approve_for_480m"); code != http.StatusOK {
		t.Fatalf("self-grant: status %d", code)
	}
	e.waitFor("Alice's refusal", func() bool {
		return strings.Contains(strings.Join(e.ephemeralsFor(alice), "\n"), "someone else must approve it")
	})
	if g, _ := e.app.svc.Grants(t.Context(), alice); len(g) != 0 {
		t.Errorf("a refused self-grant granted %+v", g)
	}
	if n := len(e.tools.Runs("delete_customer")); n != 3 {
		t.Errorf("delete_customer ran %d times, want 3", n)
	}
}

// pendingCard returns the newest card still pending whose arguments name
// customer, or nil.
func (e *env) pendingCard(customer string) *slackfake.Message {
	cards := e.cards()
	for i := len(cards) - 1; i >= 0; i-- {
		m := e.latest(cards[i])
		if strings.Contains(cardText(m), `\"customer_id\": \"`+customer+`\"`) && strings.Contains(cardText(m), `"action_id":"approve"`) {
			return &m
		}
	}
	return nil
}

// denyPending denies customer's pending card as Bob and waits for it.
func (e *env) denyPending(customer string) {
	e.t.Helper()
	card := e.pendingCard(customer)
	if card == nil {
		return
	}
	if code := e.click(bob, *card, "deny"); code != http.StatusOK {
		e.t.Fatalf("deny: status %d", code)
	}
	e.waitFor("the card to say denied", func() bool { return e.pendingCard(customer) == nil })
}
