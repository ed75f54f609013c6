package main

import (
	"net/http"
	"strings"
	"testing"

	"github.com/slackapprove/slackbot/bot"
	"github.com/slackapprove/slackbot/internal/apitest"
	"github.com/slackapprove/slackbot/internal/slackfake"
	"github.com/slackapprove/slackbot/internal/slacktest"
	"github.com/slackapprove/slackbot/store/redistest"
)

// With REDIS_WAIT_REPLICAS=1 and the replica stopped, an approver's clicks
// are answered "not in effect yet" and nothing acts on them: the API
// client's long poll goes on waiting, the Slack run does not resume (its
// tool does not run), the cards keep their buttons, and the next approver
// is told a decision is being recorded, not "already approved". Once the
// replica is back the confirmer applies the clicks without anyone
// clicking again: the long poll answers approved, the tool runs once, the
// cards show the decisions.
func TestUnconfirmedClickActsOnNothing(t *testing.T) {
	t.Parallel()
	primary := redistest.StartServer(t)
	replica := redistest.StartReplica(t, primary)
	x := apiE2E{env: newEnv(t, envOptions{redis: primary.Client(t), waitReplicas: 1, routes: apitest.Routes, apiKeys: apitest.Keys, wallClock: true}),
		doc: apitest.Load(t)}
	a := x.create(t, deletion("call_1", "/tmp/a.csv", ""))
	apiCard := x.apiCard(a.Token, "call_1")
	thread := x.mention(alice, general, "please delete customer 42")
	var runCard slackfake.Message
	for _, c := range x.waitCards(2) {
		if c.TS != apiCard.TS {
			runCard = c
		}
	}

	replica.Pause(t)
	defer replica.Resume(t)
	for _, card := range []slackfake.Message{apiCard, runCard} {
		if status := x.click(bob, card, bot.ActionIDApprove); status != http.StatusOK {
			t.Fatalf("bob's click: got %d, want 200 (acknowledged)", status)
		}
	}
	x.waitFor("bob's ephemerals", func() bool { return len(x.ephemeralsFor(bob)) == 2 })
	for _, got := range x.ephemeralsFor(bob) {
		if !strings.Contains(got, "Your decision is not in effect yet: Redis's replicas have not confirmed it, so nothing acts on it.") {
			t.Errorf("bob was told %q after an unconfirmed click", got)
		}
	}
	status, b := x.get(t, a.Token, "1s")
	if got := decodeRequest(t, b); status != http.StatusOK || got.Status != "pending" || got.Calls[0].State != "pending" {
		t.Errorf("the API client's long poll after an unconfirmed click: %d %s; want it still pending", status, b)
	}
	if status := x.click(alice, apiCard, bot.ActionIDApprove); status != http.StatusOK {
		t.Fatalf("alice's click: got %d", status)
	}
	x.waitFor("alice's ephemeral", func() bool { return len(x.ephemeralsFor(alice)) == 1 })
	if got := x.ephemeralsFor(alice)[0]; !strings.Contains(got, "A decision on this request is being recorded") {
		t.Errorf("the next approver was told %q; want that a decision is being recorded", got)
	}
	if runs := x.tools.Runs("delete_customer"); len(runs) != 0 {
		t.Errorf("the run's tool ran %d times on an unconfirmed approval", len(runs))
	}
	for _, card := range []slackfake.Message{apiCard, runCard} {
		if _, ok := slacktest.Button(x.latest(card), bot.ActionIDApprove); !ok {
			t.Errorf("card %s lost its buttons on an unconfirmed approval", card.TS)
		}
	}

	replica.Resume(t)
	status, b = x.get(t, a.Token, "30s")
	if got := decodeRequest(t, b); status != http.StatusOK || got.Status != "resolved" || got.Calls[0].State != "approved" {
		t.Errorf("the long poll once the replica is back: %d %s; want approved", status, b)
	}
	x.waitFor("the run's answer", func() bool { return len(x.replies(general, thread)) > 0 })
	if runs := x.tools.Runs("delete_customer"); len(runs) != 1 {
		t.Errorf("the run's tool ran %d times once the approval was confirmed, want 1", len(runs))
	}
	for _, card := range []slackfake.Message{apiCard, runCard} {
		x.waitFor("the card to show the decision", func() bool {
			m := x.latest(card)
			_, live := slacktest.Button(m, bot.ActionIDApprove)
			return !live && strings.Contains(cardText(m), bob)
		})
	}
	if n, m := len(x.ephemeralsFor(bob)), len(x.ephemeralsFor(alice)); n != 2 || m != 1 {
		t.Errorf("ephemerals after the confirmation: bob %d, alice %d; want no more", n, m)
	}
}
