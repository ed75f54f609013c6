package main

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/slackapprove/slackbot/agentrunner"
	"github.com/slackapprove/slackbot/bot"
	"github.com/slackapprove/slackbot/internal/slackfake"
)

// The happy path: a mention starts a run, the card appears, an approver
// approves, the tool runs once, the card says so, the answer is in the thread.
func TestApproveRunsToolOnceAndUpdatesCard(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{})
	thread := e.mention(carol, general, "delete customer a")
	card := e.waitCards(1)[0]
	for _, want := range []string{"delete_customer", "U0CAROL", "approve", "deny"} {
		if !strings.Contains(cardText(card), want) {
			t.Errorf("pending card does not show %q: %s", want, card.BlocksJSON)
		}
	}
	if len(e.tools.Runs("delete_customer")) != 0 {
		t.Fatal("tool ran before approval")
	}
	if got := e.click(alice, card, bot.ActionIDApprove); got != http.StatusOK {
		t.Fatalf("click: got status %d, want 200", got)
	}
	answer := e.waitReply(general, thread)
	if want := `{"delete_customer":"deleted a"}`; answer != want {
		t.Errorf("thread answer: got %q, want %q", answer, want)
	}
	if n := len(e.tools.Runs("delete_customer")); n != 1 {
		t.Errorf("tool ran %d times, want 1", n)
	}
	e.waitFor("the card to show the approval and the tool's outcome", func() bool {
		c := cardText(e.latest(card))
		return strings.Contains(c, "Approved") && strings.Contains(c, "U0ALICE") && strings.Contains(c, "deleted a")
	})
	if strings.Contains(cardText(e.latest(card)), `"action_id":"approve"`) {
		t.Error("decided card still has an Approve button")
	}
}

// Double clicks, concurrent clicks from two approvers and Slack retries all
// yield one decision, and the tool runs once.
func TestConcurrentClicksDecideOnce(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{})
	thread := e.mention(carol, general, "delete customer a")
	card := e.waitCards(1)[0]
	var wg sync.WaitGroup
	for i := range 20 {
		user, action := alice, bot.ActionIDApprove
		if i%2 == 1 {
			user, action = bob, bot.ActionIDDeny
		}
		wg.Go(func() {
			if got := e.click(user, card, action); got != http.StatusOK {
				t.Errorf("click: got status %d", got)
			}
		})
	}
	wg.Wait()
	answer := e.waitReply(general, thread)
	approved := answer == `{"delete_customer":"deleted a"}`
	denied := answer == `{"delete_customer":"The tool call was denied."}`
	if !approved && !denied {
		t.Fatalf("thread answer %q is neither the approval nor the denial", answer)
	}
	runs := len(e.tools.Runs("delete_customer"))
	if approved && runs != 1 || denied && runs != 0 {
		t.Errorf("answer %q but the tool ran %d times", answer, runs)
	}
	// Every click of the loser was told the call was already decided; the
	// winner's repeated clicks changed nothing and need no reply.
	winner, loser, word := alice, bob, "approved"
	if denied {
		winner, loser, word = bob, alice, "denied"
	}
	e.waitFor("the loser to be told", func() bool { return len(e.ephemeralsFor(loser)) == 10 })
	for _, m := range e.ephemeralsFor(loser) {
		if !strings.Contains(m, "already "+word) || !strings.Contains(m, winner) {
			t.Errorf("ephemeral %q does not say the call was already %s by %s", m, word, winner)
		}
	}
	if got := e.ephemeralsFor(winner); len(got) != 0 {
		t.Errorf("the winner got ephemerals %q", got)
	}
	if n := len(e.replies(general, thread)); n != 1 {
		t.Errorf("got %d answers in the thread, want 1", n)
	}
}

// A forged signature, a stale timestamp and a wrong secret are refused with
// 401 and change nothing.
func TestForgedAndStaleClicksChangeNothing(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{})
	e.mention(carol, general, "delete customer a")
	card := e.waitCards(1)[0]
	body := e.clickPayload(alice, testTeam, card, bot.ActionIDApprove)
	cases := []struct {
		name   string
		ts     time.Time
		secret string
		body   []byte
	}{
		{"wrong secret", time.Now(), "not-the-secret", body},
		{"stale timestamp", time.Now().Add(-6 * time.Minute), testSecret, body},
		{"future timestamp", time.Now().Add(6 * time.Minute), testSecret, body},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			resp := e.post("/slack/interactivity", "application/x-www-form-urlencoded", c.body, c.ts, c.secret)
			if resp.StatusCode != http.StatusUnauthorized {
				t.Errorf("got status %d, want 401", resp.StatusCode)
			}
		})
	}
	// A body changed after signing.
	req, _ := http.NewRequest(http.MethodPost, e.srv.URL+"/slack/interactivity", strings.NewReader(string(body)+"x"))
	bot.SignSlackRequest(req.Header, testSecret, time.Now(), body)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("tampered body: got status %d, want 401", resp.StatusCode)
	}
	// Unsigned.
	resp, err = http.Post(e.srv.URL+"/slack/interactivity", "application/x-www-form-urlencoded", strings.NewReader(string(body)))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("unsigned: got status %d, want 401", resp.StatusCode)
	}
	assertUndecided(t, e, card)
}

// assertUndecided checks that nothing changed: the card still has its
// buttons and was never edited, and the tool did not run.
func assertUndecided(t *testing.T, e *env, card slackfake.Message) {
	t.Helper()
	cur := e.latest(card)
	if len(cur.Edits) != 0 {
		t.Errorf("the card was edited %d times", len(cur.Edits))
	}
	if !strings.Contains(cardText(cur), `"action_id":"approve"`) {
		t.Error("the card lost its Approve button")
	}
	if n := len(e.tools.Runs("delete_customer")); n != 0 {
		t.Errorf("the tool ran %d times", n)
	}
}

// An unauthorized user, a user from another workspace, and the requester
// on a route that forbids self-approval get an ephemeral explanation and
// nothing changes; the refusals are audited.
func TestUnauthorizedClicksAreExplainedAndChangeNothing(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{})
	e.mention(alice, general, "delete customer a") // alice asks, and is an approver
	card := e.waitCards(1)[0]

	if got := e.click(dave, card, bot.ActionIDApprove); got != http.StatusOK {
		t.Fatalf("click: status %d", got)
	}
	e.waitFor("dave's explanation", func() bool { return len(e.ephemeralsFor(dave)) == 1 })
	if msg := e.ephemeralsFor(dave)[0]; !strings.Contains(msg, "not an approver") || !strings.Contains(msg, "U0ALICE") {
		t.Errorf("dave was told %q; want who may decide", msg)
	}

	if got := e.click(alice, card, bot.ActionIDApprove); got != http.StatusOK {
		t.Fatalf("click: status %d", got)
	}
	e.waitFor("alice's explanation", func() bool { return len(e.ephemeralsFor(alice)) == 1 })
	if msg := e.ephemeralsFor(alice)[0]; !strings.Contains(msg, "You asked for this call") {
		t.Errorf("requester was told %q; want the self-approval rule", msg)
	}

	resp := e.post("/slack/interactivity", "application/x-www-form-urlencoded",
		e.clickPayload(bob, otherTeamID, card, bot.ActionIDApprove), time.Now(), testSecret)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("click: status %d", resp.StatusCode)
	}
	e.waitFor("the other team's explanation", func() bool { return len(e.ephemeralsFor(bob)) == 1 })

	if len(e.tools.Runs("delete_customer")) != 0 {
		t.Fatal("the tool ran after refused clicks")
	}
	cur := e.latest(card)
	if !strings.Contains(cardText(cur), `"action_id":"approve"`) {
		t.Error("the card lost its buttons after refused clicks")
	}
	events, err := e.app.store.ReadAudit(t.Context(), "", 100)
	if err != nil {
		t.Fatal(err)
	}
	refused := 0
	for _, ev := range events {
		if ev.Type == "refused" {
			refused++
		}
	}
	if refused != 3 {
		t.Errorf("audit has %d refused clicks, want 3: %+v", refused, events)
	}

	// Bob may still decide.
	e.click(bob, card, bot.ActionIDApprove)
	e.waitFor("the tool to run", func() bool { return len(e.tools.Runs("delete_customer")) == 1 })
}

// A route may let the requester approve their own call.
func TestSelfApprovalWhereAllowed(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{model: agentrunner.TestModel{CallTools: []string{"issue_refund"}}})
	thread := e.mention(alice, general, "refund")
	card := e.waitCards(1)[0]
	e.click(alice, card, bot.ActionIDApprove)
	if got := e.waitReply(general, thread); !strings.Contains(got, "refunded") {
		t.Errorf("got answer %q, want the refund", got)
	}
}

// Deny with a reason: the model sees the reason; the card shows it.
func TestDenyWithReasonReachesModel(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{})
	thread := e.mention(carol, general, "delete customer a")
	card := e.waitCards(1)[0]
	e.click(bob, card, bot.ActionIDDenyReason)
	e.waitFor("the reason modal", func() bool { return len(e.slack.Views()) == 1 })
	view := e.slack.Views()[0]
	if view.CallbackID != bot.CallbackDenyReason {
		t.Fatalf("opened view %q, want the deny-reason modal", view.CallbackID)
	}
	resp := e.submit(bob, view, map[string]map[string]string{
		bot.BlockIDDenyReason: {bot.ActionIDDenyReasonInput: "Customers are deleted by support leads only."},
	})
	if resp != "" {
		t.Fatalf("submit answered %s, want an empty 200 that closes the modal", resp)
	}
	answer := e.waitReply(general, thread)
	if want := `{"delete_customer":"Customers are deleted by support leads only."}`; answer != want {
		t.Errorf("got answer %q, want %q", answer, want)
	}
	if len(e.tools.Runs("delete_customer")) != 0 {
		t.Error("the tool ran after a denial")
	}
	e.waitFor("the card to show the denial", func() bool {
		c := cardText(e.latest(card))
		return strings.Contains(c, "Denied") && strings.Contains(c, "support leads only")
	})
}

// Edit: invalid arguments are shown in the modal; valid ones run the tool
// with the override arguments.
func TestEditArgumentsRunsWithOverride(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{})
	thread := e.mention(carol, general, "delete customer a")
	card := e.waitCards(1)[0]
	e.click(alice, card, bot.ActionIDEdit)
	e.waitFor("the edit modal", func() bool { return len(e.slack.Views()) == 1 })
	view := e.slack.Views()[0]

	bad := e.submit(alice, view, map[string]map[string]string{bot.BlockIDEditArgs: {bot.ActionIDEditArgsInput: `{"customer_id": 42}`}})
	var errs struct {
		Action string            `json:"response_action"`
		Errors map[string]string `json:"errors"`
	}
	if err := json.Unmarshal([]byte(bad), &errs); err != nil || errs.Action != "errors" || errs.Errors[bot.BlockIDEditArgs] == "" {
		t.Fatalf("invalid args: got %s, want response_action errors on %s", bad, bot.BlockIDEditArgs)
	}
	if got := e.submit(alice, view, map[string]map[string]string{bot.BlockIDEditArgs: {bot.ActionIDEditArgsInput: `not json`}}); !strings.Contains(got, "not valid JSON") {
		t.Errorf("non-JSON: got %s", got)
	}

	if got := e.submit(alice, view, map[string]map[string]string{bot.BlockIDEditArgs: {bot.ActionIDEditArgsInput: `{"customer_id":"C-77"}`}}); got != "" {
		t.Fatalf("valid args: got %s, want the modal closed", got)
	}
	if answer := e.waitReply(general, thread); answer != `{"delete_customer":"deleted C-77"}` {
		t.Errorf("got answer %q, want the override to run", answer)
	}
	runs := e.tools.Runs("delete_customer")
	if len(runs) != 1 || string(runs[0]) != `{"customer_id":"C-77"}` {
		t.Errorf("tool runs %s, want one with the override", runs)
	}
	e.waitFor("the card to show the changed arguments", func() bool { return strings.Contains(cardText(e.latest(card)), "C-77") })
}

// Quorum 2: the first approval shows "1 of 2", the second approves; the
// same approver twice counts once.
func TestQuorumOfTwo(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{model: agentrunner.TestModel{CallTools: []string{"deploy_service"}}})
	thread := e.mention(carol, general, "deploy")
	card := e.waitCards(1)[0]
	e.click(alice, card, bot.ActionIDApprove)
	e.waitFor("1 of 2 on the card", func() bool { return strings.Contains(cardText(e.latest(card)), "1 of 2") })
	e.click(alice, card, bot.ActionIDApprove) // counts once
	if len(e.tools.Runs("deploy_service")) != 0 {
		t.Fatal("deployed with one approver")
	}
	cur := e.latest(card)
	if !strings.Contains(cardText(cur), `"action_id":"approve"`) {
		t.Fatal("the card lost its buttons after one of two approvals")
	}
	e.click(bob, cur, bot.ActionIDApprove)
	if answer := e.waitReply(general, thread); !strings.Contains(answer, "deployed a@a") {
		t.Errorf("got answer %q, want the deployment", answer)
	}
	if n := len(e.tools.Runs("deploy_service")); n != 1 {
		t.Errorf("deployed %d times, want 1", n)
	}
}

// Expiry: the run sees the timeout denial, the card says expired, and a
// late click is told so.
func TestExpiry(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{})
	thread := e.mention(carol, general, "delete customer a")
	card := e.waitCards(1)[0]
	e.clock.Add(31 * time.Minute) // the deletions route times out after 30m
	answer := e.waitReply(general, thread)
	if want := `{"delete_customer":"No decision on this tool call arrived: the request expired"}`; answer != want {
		t.Errorf("got answer %q, want %q", answer, want)
	}
	e.waitFor("the card to say expired", func() bool { return strings.Contains(cardText(e.latest(card)), "Expired") })
	e.click(alice, card, bot.ActionIDApprove)
	e.waitFor("the late click's explanation", func() bool { return len(e.ephemeralsFor(alice)) == 1 })
	if msg := e.ephemeralsFor(alice)[0]; !strings.Contains(msg, "expired") {
		t.Errorf("late click was told %q", msg)
	}
	if len(e.tools.Runs("delete_customer")) != 0 {
		t.Error("the tool ran after expiry")
	}
}

// A routing policy decides without a person; its decisions are in the
// audit stream like anyone's, and a call no route matches is denied.
func TestPolicyDecisionsAreAudited(t *testing.T) {
	t.Parallel()
	routes := `
routes:
  - name: refunds
    when: {tools: ["issue_refund"]}
    channel: C0APPROVALS
    approvers: {users: [U0ALICE]}
    auto_approve: "args.amount <= 100"
`
	e := newEnv(t, envOptions{routes: routes, model: agentrunner.TestModel{CallTools: []string{"issue_refund", "delete_customer"}}})
	thread := e.mention(carol, general, "refund and delete")
	answer := e.waitReply(general, thread)
	if !strings.Contains(answer, `"issue_refund":"refunded 0.00 on a"`) || !strings.Contains(answer, "No approval route matches delete_customer") {
		t.Errorf("got answer %q, want the refund approved by policy and the deletion denied", answer)
	}
	if len(e.cards()) != 0 {
		t.Errorf("policy decisions posted %d cards", len(e.cards()))
	}
	events, err := e.app.store.ReadAudit(t.Context(), "", 100)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, ev := range events {
		if ev.Type == "decided" {
			got[ev.Tool] = ev.By + " " + ev.Decision
		}
	}
	want := map[string]string{"issue_refund": "policy:refunds approved", "delete_customer": "policy:none denied"}
	for tool, w := range want {
		if got[tool] != w {
			t.Errorf("audit for %s: got %q, want %q", tool, got[tool], w)
		}
	}
}

// A process that dies between posting a card and recording where it went
// leaves no message reference; the card is found again by its marker in
// the channel's history, so expiry (and outcomes) still update it.
func TestUnrecordedCardIsFoundAgain(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{})
	thread := e.mention(carol, general, "delete customer a")
	card := e.waitCards(1)[0]
	token, _, err := bot.DecodeAction(button(t, card, bot.ActionIDApprove).Value)
	if err != nil {
		t.Fatal(err)
	}
	// The card can reach Slack before its reference is recorded: wait for
	// the record, or deleting it first would race with its writing.
	e.waitFor("the card's reference to be recorded", func() bool {
		ap, err := e.app.store.Get(t.Context(), token)
		return err == nil && ap.Calls[0].Message.ID != ""
	})
	// Forget the card's reference, as a crash right after posting would.
	rdb := e.app.store.Client()
	if err := rdb.HDel(t.Context(), e.prefix+"a:"+token, "c1.ch", "c1.ts").Err(); err != nil {
		t.Fatal(err)
	}
	if ap, _ := e.app.store.Get(t.Context(), token); ap.Calls[0].Message.ID != "" {
		t.Fatalf("the reference is still recorded: %+v", ap.Calls[0].Message)
	}
	e.clock.Add(31 * time.Minute)
	e.waitReply(general, thread)
	e.waitFor("the card to say expired", func() bool { return strings.Contains(cardText(e.latest(card)), "Expired") })
	// The Service records the card the Poster located once the update
	// returns, under the card's lease: wait for it, then check it.
	e.waitFor("the located card to be recorded", func() bool {
		ap, err := e.app.store.Get(t.Context(), token)
		return err == nil && ap.Calls[0].Message.ID != ""
	})
	if ap, _ := e.app.store.Get(t.Context(), token); ap.Calls[0].Message.ID != card.TS {
		t.Errorf("the located card was not recorded: %+v", ap.Calls[0].Message)
	}
}

// Shutdown in the middle of a tool call lets the run finish (within the
// budget) and answer, rather than dropping a run whose resumption this
// process already claimed.
func TestShutdownLetsWorkingRunsFinish(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	started := make(chan struct{})
	slow := agentrunner.NewTool("delete_slowly", "Delete, slowly.",
		func(context.Context, *agentrunner.ToolContext, struct{}) (any, error) {
			close(started)
			<-release
			return "deleted slowly", nil
		}, agentrunner.RequiresApproval())
	e := newEnv(t, envOptions{model: agentrunner.TestModel{CallTools: []string{"delete_slowly"}}, extraTools: []*agentrunner.Tool{slow}})
	thread := e.mention(carol, general, "delete slowly")
	card := e.waitCards(1)[0]
	e.click(alice, card, bot.ActionIDApprove)
	<-started
	shutdownDone := make(chan struct{})
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		e.app.shutdown(ctx)
		close(shutdownDone)
	}()
	select {
	case <-shutdownDone:
		t.Fatal("shutdown did not wait for the working run")
	case <-time.After(100 * time.Millisecond):
	}
	close(release)
	<-shutdownDone
	if got := e.replies(general, thread); len(got) != 1 || got[0] != `{"delete_slowly":"deleted slowly"}` {
		t.Errorf("thread answers %q, want the tool's result once", got)
	}
}
