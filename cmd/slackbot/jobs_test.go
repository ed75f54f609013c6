package main

import (
	"net/http"
	"strings"
	"testing"
	"time"
)

// Slack refusing the expired card's update does not leave its buttons: the
// job is retried after its backoff (on the store's clock) until Slack takes
// it, then acknowledged, and the card is not updated again.
func TestExpiredCardUpdateIsRetriedUntilSlackAccepts(t *testing.T) {
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

	e.clock.Add(jobBackoff) // the retry is due
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
