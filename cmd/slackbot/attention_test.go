package main

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"
)

// attentionRoutes: deletions remind Alice and Bob every 10 minutes and,
// after 25 minutes, escalate to Dave in #general.
const attentionRoutes = `
routes:
  - name: deletions
    when: {tools: ["delete_*"]}
    channel: C0APPROVALS
    approvers: {users: [U0ALICE, U0BOB]}
    timeout: 1h
    remind_every: 10m
    escalate:
      after: 25m
      channel: C0GENERAL
      approvers: {users: [U0DAVE]}
`

// botReplies are the bot's replies in a card's thread that contain want.
func (e *env) botReplies(card, want string) []string {
	var out []string
	for _, r := range e.replies(approvalsCh, card) {
		if strings.Contains(r, want) {
			out = append(out, r)
		}
	}
	return out
}

// jobsSettled reports that no job is due or being worked: every job that
// came due by the test clock was done.
func (e *env) jobsSettled() bool {
	ctx, rdb := e.t.Context(), e.app.deps.Redis
	due, err := rdb.ZCount(ctx, e.prefix+"jobs:retry", "-inf", fmt.Sprint(e.clock.Now().UnixMilli())).Result()
	if err != nil {
		e.t.Fatal(err)
	}
	queued, err := rdb.XLen(ctx, e.prefix+"jobs").Result()
	if err != nil {
		e.t.Fatal(err)
	}
	return due == 0 && queued == 0
}

// audited counts the audit events of type typ.
func (e *env) audited(typ string) int {
	events, err := e.app.store.ReadAudit(e.t.Context(), "", 0)
	if err != nil {
		e.t.Fatal(err)
	}
	n := 0
	for _, ev := range events {
		if string(ev.Type) == typ {
			n++
		}
	}
	return n
}

// TestRemindersUntilDecided: while a call waits, its approvers are
// mentioned in the card's thread every remind_every, once each across two
// replicas; once decided, the reminders stop. The clock is the test's: no
// sleeping for ten minutes.
func TestRemindersUntilDecided(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{routes: attentionRoutes})
	e.replica("replica-b") // consumes the same job queue
	e.mention(carol, general, "delete customer C-1")
	card := e.waitCards(1)[0]

	e.clock.Add(10 * time.Minute)
	e.waitFor("the first reminder", func() bool { return len(e.botReplies(card.TS, "Reminder")) == 1 })
	first := e.botReplies(card.TS, "Reminder")[0]
	for _, want := range []string{"Reminder 1 of 3", "<@U0ALICE> <@U0BOB>", "`delete_customer`", "is still waiting for a decision"} {
		if !strings.Contains(first, want) {
			t.Errorf("reminder %q does not say %q", first, want)
		}
	}
	e.clock.Add(10 * time.Minute)
	e.waitFor("the second reminder", func() bool { return len(e.botReplies(card.TS, "Reminder")) == 2 })
	e.waitFor("the jobs to settle", e.jobsSettled)

	if code := e.click(alice, e.latest(card), "approve"); code != http.StatusOK {
		t.Fatalf("approve: status %d", code)
	}
	e.waitFor("the card to say approved", func() bool { return strings.Contains(cardText(e.latest(card)), "Approved") })
	// The third reminder and the escalation come due: nothing is said.
	e.clock.Add(20 * time.Minute)
	e.waitFor("the jobs to settle", e.jobsSettled)
	if got := e.botReplies(card.TS, "Reminder"); len(got) != 2 {
		t.Errorf("%d reminders, want 2 (none after the decision):\n%s", len(got), strings.Join(got, "\n"))
	}
	for _, m := range e.slack.Messages(general) {
		if strings.Contains(m.Text, "Escalated") {
			t.Errorf("a decided call escalated: %q", m.Text)
		}
	}
	if n := e.audited("reminded"); n != 2 {
		t.Errorf("%d reminders audited, want 2", n)
	}
	if n := e.audited("escalated"); n != 0 {
		t.Errorf("%d escalations audited, want 0", n)
	}
}

// TestEscalation: a call nobody decided in escalate.after escalates once:
// Dave, who could not decide it before, is mentioned in #general with a
// link to the card, the card's thread and the card say so, and now Dave's
// approval counts, audited as a decision after escalation.
func TestEscalation(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{routes: attentionRoutes})
	e.replica("replica-b")
	e.mention(carol, general, "delete customer C-2")
	card := e.waitCards(1)[0]

	if code := e.click(dave, card, "approve"); code != http.StatusOK {
		t.Fatalf("dave's early click: status %d", code)
	}
	e.waitFor("dave's refusal", func() bool {
		return strings.Contains(strings.Join(e.ephemeralsFor(dave), "\n"), "You are not an approver")
	})

	e.clock.Add(25 * time.Minute)
	escalations := func() []string {
		var out []string
		for _, m := range e.slack.Messages(general) {
			if strings.Contains(m.Text, "Escalated") {
				out = append(out, m.Text)
			}
		}
		return out
	}
	e.waitFor("the escalation in #general", func() bool { return len(escalations()) == 1 })
	e.waitFor("the jobs to settle", e.jobsSettled)
	msg := escalations()[0]
	for _, want := range []string{"<@U0DAVE>", "`delete_customer`", "has waited 25 min with no decision", "|open the request>"} {
		if !strings.Contains(msg, want) {
			t.Errorf("escalation %q does not say %q", msg, want)
		}
	}
	if got := e.botReplies(card.TS, "escalated to <@U0DAVE> in <#C0GENERAL>"); len(got) != 1 {
		t.Errorf("%d thread notes of the escalation, want 1: %q", len(got), e.replies(approvalsCh, card.TS))
	}
	e.waitFor("the card to name who may decide now", func() bool {
		return strings.Contains(cardText(e.latest(card)), `Escalated: \u003c@U0DAVE\u003e may decide too`)
	})
	if n := e.audited("escalated"); n != 1 {
		t.Errorf("%d escalations audited, want 1", n)
	}
	// Two reminders came due on the way (10 and 20 minutes).
	if got := e.botReplies(card.TS, "Reminder"); len(got) != 2 {
		t.Errorf("%d reminders, want 2", len(got))
	}

	if code := e.click(dave, e.latest(card), "approve"); code != http.StatusOK {
		t.Fatalf("dave's click after the escalation: status %d", code)
	}
	e.waitFor("the card to say approved", func() bool { return strings.Contains(cardText(e.latest(card)), "Approved") })
	e.waitFor("the deletion to run", func() bool { return len(e.tools.Runs("delete_customer")) == 1 })
	e.waitFor("the decision audited as after escalation", func() bool { return e.audited("escalation_decided") == 1 })
}
