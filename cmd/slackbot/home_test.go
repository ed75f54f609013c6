package main

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/slackapprove/slackbot/approval"
	"github.com/slackapprove/slackbot/internal/slackfake"
	"github.com/slackapprove/slackbot/internal/slacktest"
)

// homeRoutes: Alice and Bob approve deletions, may grant for up to 8 h,
// and after 25 minutes Dave may decide too.
const homeRoutes = `
routes:
  - name: deletions
    when: {tools: ["delete_*"]}
    channel: C0APPROVALS
    approvers: {users: [U0ALICE, U0BOB]}
    timeout: 1h
    grants: 8h
    escalate:
      after: 25m
      channel: C0GENERAL
      approvers: {users: [U0DAVE]}
`

// openHome sends user's app_home_opened and waits for a Home published
// after it (the n-th version, counting from 1).
func (e *env) openHome(user string) slackfake.View {
	e.t.Helper()
	before := e.homeVersions(user)
	body := slacktest.HomeOpened{Team: testTeam, User: user}.Body()
	if resp := e.post("/slack/events", slacktest.JSONContentType, body, time.Now(), testSecret); resp.StatusCode != http.StatusOK {
		e.t.Fatalf("app_home_opened: status %d", resp.StatusCode)
	}
	return e.waitHome(user, before)
}

// waitCardRecorded waits until every pending call's card is recorded on
// its request: the card shows in Slack a moment before its place is
// stored, and a Home says where each card is.
func (e *env) waitCardRecorded() {
	e.t.Helper()
	e.waitFor("the cards recorded on their requests", func() bool {
		pending, _, err := e.app.store.Pending(e.t.Context(), 100, 0)
		if err != nil || len(pending) == 0 {
			return false
		}
		for _, r := range pending {
			for _, c := range r.Calls {
				if c.Message.ID == "" {
					return false
				}
			}
		}
		return true
	})
}

// homeVersions counts the versions of user's Home published so far.
func (e *env) homeVersions(user string) int {
	v, ok := e.slack.Home(user)
	if !ok {
		return 0
	}
	return len(v.History) + 1
}

// waitHome waits until user's Home was published after its version n.
func (e *env) waitHome(user string, n int) slackfake.View {
	e.t.Helper()
	e.waitFor(user+"'s Home to be published", func() bool { return e.homeVersions(user) > n })
	v, _ := e.slack.Home(user)
	return v
}

// homeClick clicks the i-th button with actionID on home as user (who
// need not be its owner: a forged click) and waits for user's Home to be
// republished with the answer.
func (e *env) homeClick(user string, home slackfake.View, actionID string, i int) slackfake.View {
	e.t.Helper()
	buttons := slacktest.HomeButtons(home, actionID)
	if len(buttons) <= i {
		e.t.Fatalf("the Home has %d %s buttons, want at least %d:\n%s", len(buttons), actionID, i+1, home.JSON)
	}
	before := e.homeVersions(user)
	payload := slacktest.HomeClick{Team: testTeam, User: user, Home: home, Button: buttons[i]}.Payload()
	if resp := e.post("/slack/interactivity", slacktest.FormContentType, slacktest.Form(payload), time.Now(), testSecret); resp.StatusCode != http.StatusOK {
		e.t.Fatalf("Home click: status %d", resp.StatusCode)
	}
	return e.waitHome(user, before)
}

// homeText is the Home's JSON with slack-go's \u003c escapes undone.
func homeText(v slackfake.View) string {
	return strings.NewReplacer(`\u003c`, "<", `\u003e`, ">", `\u0026`, "&").Replace(string(v.JSON))
}

// homeRefreshScheduled reports whether a republish of user's Home waits in
// the job schedule.
func (e *env) homeRefreshScheduled(user string) bool {
	_, err := e.app.deps.Redis.ZScore(e.t.Context(), e.prefix+"jobs:retry", "1 home.refresh - "+user).Result()
	return err == nil
}

// TestHomeListsAndDecides: each approver's Home lists what they may decide
// (a bystander's lists nothing); an Approve on Alice's Home decides once,
// updates the card and republishes her Home and Bob's (who opened his);
// Bob's stale Home click gets "already approved", and Dave's forged click
// is refused and audited.
func TestHomeListsAndDecides(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{routes: homeRoutes, model: deleteNamedModel()})
	e.mention(carol, general, "delete customer C-1")
	card := e.waitCards(1)[0]
	e.waitCardRecorded()

	aliceHome := e.openHome(alice)
	for _, want := range []string{"Waiting for you", "`delete_customer`", "Requested by <@U0CAROL>", "card in <#C0APPROVALS>", `"action_id":"approve_for_480m"`} {
		if !strings.Contains(homeText(aliceHome), want) {
			t.Errorf("Alice's Home does not show %q:\n%s", want, aliceHome.JSON)
		}
	}
	bobHome := e.openHome(bob)
	if len(slacktest.HomeButtons(bobHome, "approve")) != 1 {
		t.Errorf("Bob's Home has no Approve:\n%s", bobHome.JSON)
	}
	daveHome := e.openHome(dave)
	if !strings.Contains(homeText(daveHome), "Nothing waits for your decision") {
		t.Errorf("Dave's Home lists calls he may not decide:\n%s", daveHome.JSON)
	}
	carolHome := e.openHome(carol)
	if !strings.Contains(homeText(carolHome), "Your requests") || len(slacktest.HomeButtons(carolHome, "approve")) != 0 || !strings.Contains(homeText(carolHome), "`delete_customer` · route `deletions`") {
		t.Errorf("Carol's Home does not list her request (without buttons):\n%s", carolHome.JSON)
	}

	// Dave forges a click with Alice's button: refused, audited, nothing decided.
	refusedBefore := e.audited("refused")
	forged := e.homeClick(dave, aliceHome, "approve", 0)
	if !strings.Contains(homeText(forged), "You are not an approver") {
		t.Errorf("Dave's forged Home click was not refused:\n%s", forged.JSON)
	}
	if n := e.audited("refused"); n != refusedBefore+1 {
		t.Errorf("%d refusals audited, want %d", n, refusedBefore+1)
	}

	bobVersions := e.homeVersions(bob)
	after := e.homeClick(alice, aliceHome, "approve", 0)
	if !strings.Contains(homeText(after), "You approved `delete_customer`") || len(slacktest.HomeButtons(after, "approve")) != 0 {
		t.Errorf("Alice's Home after her approval:\n%s", after.JSON)
	}
	e.waitFor("the deletion", func() bool { return len(e.tools.Runs("delete_customer")) == 1 })
	e.waitFor("the card to say approved", func() bool { return strings.Contains(cardText(e.latest(card)), "Approved") })

	// Bob opened his Home: the change republishes it (once the coalescing
	// delay has passed on the test clock), without the call.
	e.waitFor("Bob's Home refresh to be scheduled", func() bool { return e.homeRefreshScheduled(bob) })
	if n := e.homeVersions(bob); n != bobVersions {
		t.Errorf("Bob's Home was republished before the coalescing delay passed")
	}
	e.clock.Add(approval.HomeCoalesce)
	fresh := e.waitHome(bob, bobVersions)
	if len(slacktest.HomeButtons(fresh, "approve")) != 0 {
		t.Errorf("Bob's republished Home still offers the decided call:\n%s", fresh.JSON)
	}
	stale := e.homeClick(bob, bobHome, "approve", 0)
	if !strings.Contains(homeText(stale), "already approved by <@U0ALICE>") {
		t.Errorf("Bob's click on his stale Home:\n%s", stale.JSON)
	}
	if n := len(e.tools.Runs("delete_customer")); n != 1 {
		t.Errorf("the tool ran %d times, want once", n)
	}
}

// TestHomeEscalationGrantAndRevoke: after escalate.after, Dave's Home
// lists the call as escalated to him; Alice's "Approve for 8 h" on her
// Home grants, her grants list it with Revoke, and Revoke ends it.
func TestHomeEscalationGrantAndRevoke(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{routes: homeRoutes, model: deleteNamedModel()})
	e.mention(carol, general, "delete customer C-7")
	e.waitCards(1)
	e.waitCardRecorded()
	e.clock.Add(25 * time.Minute)
	dave := e.openHome(dave)
	if !strings.Contains(homeText(dave), "escalated to you") || len(slacktest.HomeButtons(dave, "approve")) != 1 {
		t.Errorf("Dave's Home after the escalation:\n%s", dave.JSON)
	}

	home := e.openHome(alice)
	granted := e.homeClick(alice, home, "approve_for_480m", 0)
	e.waitFor("the deletion", func() bool { return len(e.tools.Runs("delete_customer")) == 1 })
	if !strings.Contains(homeText(granted), "You approved for 8 h") || len(slacktest.HomeButtons(granted, "revoke_grant")) != 1 {
		t.Fatalf("Alice's Home after granting:\n%s", granted.JSON)
	}
	revoked := e.homeClick(alice, granted, "revoke_grant", 0)
	if !strings.Contains(homeText(revoked), "Grant revoked") || len(slacktest.HomeButtons(revoked, "revoke_grant")) != 0 {
		t.Errorf("Alice's Home after revoking:\n%s", revoked.JSON)
	}
	if g, err := e.app.svc.Grants(t.Context(), alice); err != nil || len(g) != 0 {
		t.Errorf("Alice's grants after Revoke: %+v, %v; want none", g, err)
	}
	again := e.homeClick(alice, granted, "revoke_grant", 0)
	if !strings.Contains(homeText(again), "has ended already") {
		t.Errorf("revoking twice:\n%s", again.JSON)
	}
}

// TestHomePublishRetries429: a views.publish answered 429 is sent again
// after Retry-After (waited on the test clock), and the Home is published
// once.
func TestHomePublishRetries429(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{routes: homeRoutes, model: deleteNamedModel(), sleepOnClock: true})
	e.slack.RateLimit("views.publish", 1, time.Minute)
	e.openHome(bob) // uses the minute's one call
	e.openHome(alice)
	var limited, ok int
	for _, c := range e.slack.Calls("views.publish") {
		switch {
		case c.Status == http.StatusTooManyRequests:
			limited++
		case c.OK():
			ok++
		}
	}
	if limited != 1 || ok != 2 {
		t.Errorf("views.publish: %d rate-limited, %d published; want 1 and 2", limited, ok)
	}
	if n := e.homeVersions(alice); n != 1 {
		t.Errorf("Alice's Home was published %d times, want once", n)
	}
}

// TestHomeOtherTabsPublishNothing: app_home_opened for the Messages tab
// publishes no Home.
func TestHomeOtherTabsPublishNothing(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{routes: homeRoutes, model: deleteNamedModel()})
	body := slacktest.HomeOpened{Team: testTeam, User: alice, Tab: "messages"}.Body()
	if resp := e.post("/slack/events", slacktest.JSONContentType, body, time.Now(), testSecret); resp.StatusCode != http.StatusOK {
		t.Fatalf("app_home_opened: status %d", resp.StatusCode)
	}
	e.openHome(bob) // a Home tab opened after it is published: the first event was handled
	e.app.bot.Close()
	if n := len(e.slack.Calls("views.publish")); n != 1 {
		t.Errorf("%d views.publish calls, want Bob's one", n)
	}
	if _, ok := e.slack.Home(alice); ok {
		t.Error("opening the Messages tab published Alice's Home")
	}
}
