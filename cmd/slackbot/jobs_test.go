package main

import (
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/slackapprove/slackbot/runs"
	"github.com/slackapprove/slackbot/store"
)

// Slack refusing the expired card's update does not leave its buttons: the
// job is retried after its backoff (on the store's clock) until Slack takes
// it, then acknowledged, and the card is not updated again.
func TestExpiredCardUpdateIsRetriedUntilSlackAccepts(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{sleepOnClock: true})
	thread := e.mention(carol, general, "delete customer a")
	card := e.waitCards(1)[0]
	// One job attempt is bot.Retry's 5 calls; the 7 failures spill over
	// into the second attempt, which then succeeds.
	e.slack.FailNext("chat.update", http.StatusInternalServerError, 7)
	e.clock.Add(31 * time.Minute)
	e.waitReply(general, thread)
	waitUntil(t, 10*time.Second, "the first attempt to fail", func() bool { return len(e.slack.Calls("chat.update")) >= 5 })
	time.Sleep(200 * time.Millisecond) // the consumer reads the queue every 100ms
	if strings.Contains(cardText(e.latest(card)), "Expired") {
		t.Fatal("the card says expired although Slack refused every update")
	}

	e.clock.Add(store.DefaultJobBackoff) // the retry is due
	waitUntil(t, 10*time.Second, "the card to say expired", func() bool { return strings.Contains(cardText(e.latest(card)), "Expired") })
	if got := cardText(e.latest(card)); strings.Contains(got, `"type":"actions"`) {
		t.Errorf("the expired card still has buttons: %s", got)
	}
	n := len(e.slack.Calls("chat.update"))
	e.clock.Add(time.Hour)
	time.Sleep(500 * time.Millisecond)
	if got := len(e.slack.Calls("chat.update")); got != n {
		t.Errorf("chat.update called %d more times after the card was updated: the job was not acknowledged", got-n)
	}
	pending, err := e.app.jobs.Reclaim(t.Context(), "inspector", 0)
	if err != nil || len(pending) != 0 {
		t.Errorf("jobs left pending: %+v, %v", pending, err)
	}
}

// A run's answer is posted once by whichever replica does its job: while
// another live replica is posting it the job waits (errAnswerBusy) and
// posts nothing; once that replica is dead, the thread is searched for
// the answer before posting; after it was posted, nothing more is posted.
func TestAnswerJobPostsOnce(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{})
	msg, err := e.slack.PostAsUser(general, carol, "delete customer a", "")
	if err != nil {
		t.Fatal(err)
	}
	rdb := e.app.store.Client()
	if err := rdb.Set(t.Context(), e.prefix+"proc:other", "1", time.Minute).Err(); err != nil {
		t.Fatal(err)
	}
	ans := runs.Answer{Key: "run-x/tok/complete", Channel: general, ThreadTS: msg.TS, Text: "done"}
	if _, err := e.app.store.BeginAnswer(t.Context(), ans.Key, "other/1"); err != nil {
		t.Fatal(err)
	}
	if err := e.app.postAnswer(t.Context(), ans); !errors.Is(err, errAnswerBusy) {
		t.Fatalf("while another replica posts: %v, want errAnswerBusy", err)
	}
	if got := e.replies(general, msg.TS); len(got) != 0 {
		t.Fatalf("posted while another replica posts: %q", got)
	}
	rdb.Del(t.Context(), e.prefix+"proc:other")
	for range 2 {
		if err := e.app.postAnswer(t.Context(), ans); err != nil {
			t.Fatal(err)
		}
	}
	if got := e.replies(general, msg.TS); len(got) != 1 || got[0] != "done" {
		t.Errorf("answers: %q, want one", got)
	}
	if n := len(e.slack.Calls("conversations.replies")); n != 1 {
		t.Errorf("conversations.replies called %d times, want once (after the dead replica's attempt)", n)
	}
}

// An answer whose look-up for an earlier post Slack refuses for good (the
// app lacks the scope to read the thread) is posted anyway, once, and
// counted in slackbot_answers_unchecked_total by the refusal's code: a
// rare duplicate beats a lost answer.
func TestAnswerJobPostsWhenTheLookupIsRefused(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{})
	msg, err := e.slack.PostAsUser(general, carol, "delete customer a", "")
	if err != nil {
		t.Fatal(err)
	}
	// A replica that died began posting it: the thread must be searched.
	ans := runs.Answer{Key: "run-y/tok/complete", Channel: general, ThreadTS: msg.TS, Text: "done"}
	if _, err := e.app.store.BeginAnswer(t.Context(), ans.Key, "gone/1"); err != nil {
		t.Fatal(err)
	}
	e.slack.ErrorNext("conversations.replies", "missing_scope", 100)
	if err := e.app.postAnswer(t.Context(), ans); err != nil {
		t.Fatalf("post with the look-up refused: %v, want the answer posted", err)
	}
	if got := e.replies(general, msg.TS); len(got) != 1 || got[0] != "done" {
		t.Errorf("answers: %q, want one", got)
	}
	if got := e.scrapeMetric(`slackbot_answers_unchecked_total{reason="missing_scope"}`); got != "1" {
		t.Errorf(`slackbot_answers_unchecked_total{reason="missing_scope"} = %q, want 1`, got)
	}
	// Posted and recorded: the job done again posts nothing more.
	if err := e.app.postAnswer(t.Context(), ans); err != nil {
		t.Fatal(err)
	}
	if got := e.replies(general, msg.TS); len(got) != 1 {
		t.Errorf("answers after the job ran again: %q, want one", got)
	}
}
