package bot

import (
	"context"
	"testing"
	"time"

	"github.com/slack-go/slack"

	"github.com/slackapprove/slackbot/internal/slackfake"
	"github.com/slackapprove/slackbot/internal/slackfaketest"
)

// TestPostAnswerOnce: an answer is posted once in its thread, however many
// attempts post it: after an attempt that may have posted (a takeover, or
// a response lost after Slack acted), the thread is searched for the
// answer's marker first.
func TestPostAnswerOnce(t *testing.T) {
	fake, srv := slackfaketest.NewTestServer(t, slackfake.WithDemoWorkspace())
	b := newTestBot(testConfig{Slack: slack.New(fake.Token(), slack.OptionAPIURL(slackfaketest.APIURL(srv))),
		Retry: Retry{Attempts: 4, Sleep: func(context.Context, time.Duration) error { return nil }}})
	m, err := fake.PostAsUser("C0GENERAL", "U0CAROL", "delete customer 42", "")
	if err != nil {
		t.Fatal(err)
	}
	a := Answer{Key: "run-1/tok/complete", Channel: "C0GENERAL", ThreadTS: m.TS, Text: "Done: deleted 42."}
	answers := func() int {
		n := 0
		for _, r := range fake.Replies("C0GENERAL", m.TS) {
			if r.Text == a.Text {
				n++
			}
		}
		return n
	}
	ts, err := b.PostAnswer(t.Context(), a, false)
	if err != nil || ts == "" {
		t.Fatalf("first post: %q, %v", ts, err)
	}
	// A second process that took the job over looks first.
	again, err := b.PostAnswer(t.Context(), a, true)
	if err != nil || again != ts {
		t.Fatalf("post after a takeover: %q, %v; want the first answer %q", again, err, ts)
	}
	// A post whose response is lost after Slack acted is not repeated.
	b2 := Answer{Key: "run-2/tok/complete", Channel: "C0GENERAL", ThreadTS: m.TS, Text: "Done: deleted 43."}
	fake.LoseResponseNext("chat.postMessage", 1)
	if _, err := b.PostAnswer(t.Context(), b2, false); err != nil {
		t.Fatal(err)
	}
	a = b2
	if n := answers(); n != 1 {
		t.Errorf("answer after a lost response: posted %d times, want 1", n)
	}
	// A different end of the run is another answer.
	c := Answer{Key: "run-1/tok2/complete", Channel: "C0GENERAL", ThreadTS: m.TS, Text: "Done: deleted 42."}
	if _, err := b.PostAnswer(t.Context(), c, true); err != nil {
		t.Fatal(err)
	}
	a = c
	if n := answers(); n != 2 {
		t.Errorf("two ends with the same text: %d answers, want 2", n)
	}
}
