package bot

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/slack-go/slack"

	"github.com/slackapprove/slackbot/internal/slackfake"
	"github.com/slackapprove/slackbot/internal/slackfaketest"
	"github.com/slackapprove/slackbot/runs"
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
	a := runs.Answer{Key: "run-1/tok/complete", Channel: "C0GENERAL", ThreadTS: m.TS, Text: "Done: deleted 42."}
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
	b2 := runs.Answer{Key: "run-2/tok/complete", Channel: "C0GENERAL", ThreadTS: m.TS, Text: "Done: deleted 43."}
	fake.LoseResponseNext("chat.postMessage", 1)
	if _, err := b.PostAnswer(t.Context(), b2, false); err != nil {
		t.Fatal(err)
	}
	a = b2
	if n := answers(); n != 1 {
		t.Errorf("answer after a lost response: posted %d times, want 1", n)
	}
	// A different end of the run is another answer.
	c := runs.Answer{Key: "run-1/tok2/complete", Channel: "C0GENERAL", ThreadTS: m.TS, Text: "Done: deleted 42."}
	if _, err := b.PostAnswer(t.Context(), c, true); err != nil {
		t.Fatal(err)
	}
	a = c
	if n := answers(); n != 2 {
		t.Errorf("two ends with the same text: %d answers, want 2", n)
	}
}

// TestPostAnswerWhenTheLookupIsRefused: an answer is never lost because
// Slack refuses to show the thread it may already be in (a scope or a
// channel membership the app lacks, a method it does not offer): after
// such a permanent refusal the answer is posted anyway, and counted. A
// transient failure of the look-up (a 5xx) is retried as before, and the
// answer already there is found, not posted again.
func TestPostAnswerWhenTheLookupIsRefused(t *testing.T) {
	fake, srv := slackfaketest.NewTestServer(t, slackfake.WithDemoWorkspace())
	metrics := &countingMetrics{}
	b := newTestBot(testConfig{Slack: slack.New(fake.Token(), slack.OptionAPIURL(slackfaketest.APIURL(srv))), Metrics: metrics,
		Retry: Retry{Attempts: 4, Sleep: func(context.Context, time.Duration) error { return nil }}})
	m, err := fake.PostAsUser("C0GENERAL", "U0CAROL", "delete customer 42", "")
	if err != nil {
		t.Fatal(err)
	}
	count := func(text string) int { // in the channel or its threads
		n := 0
		for _, r := range fake.Messages("C0GENERAL") {
			if r.Text == text {
				n++
			}
		}
		return n
	}
	for i, tt := range []struct {
		method, code string
		inThread     bool
	}{
		{"conversations.replies", "missing_scope", true},
		{"conversations.replies", "not_in_channel", true},
		{"conversations.history", "unknown_method", false},
		{"conversations.history", "method_not_supported_for_channel_type", false},
	} {
		a := runs.Answer{Key: fmt.Sprintf("run-%d/tok/complete", i), Channel: "C0GENERAL", Text: fmt.Sprintf("Done: answer %d.", i)}
		if tt.inThread {
			a.ThreadTS = m.TS
		}
		fake.ErrorNext(tt.method, tt.code, 10)
		ts, err := b.PostAnswer(t.Context(), a, true)
		if err != nil || ts == "" {
			t.Errorf("%s refused with %s: %q, %v; want the answer posted", tt.method, tt.code, ts, err)
		}
		if n := count(a.Text); n != 1 {
			t.Errorf("%s refused with %s: the answer is there %d times, want 1", tt.method, tt.code, n)
		}
		fake.ErrorNext(tt.method, tt.code, 0)
	}
	if got := metrics.unchecked(); !slices.Equal(got, []string{"missing_scope", "not_in_channel", "unknown_method", "method_not_supported_for_channel_type"}) {
		t.Errorf("answers counted as posted without a look-up: %v, want one per refusal, by its code", got)
	}

	// A method a proxy in front of Slack does not serve (404) is refused
	// too; Slack's own internal_error is not: the post fails and its job
	// is tried again later, as before.
	a := runs.Answer{Key: "run-7/tok/complete", Channel: "C0GENERAL", Text: "Done: behind a proxy."}
	fake.FailNext("conversations.history", http.StatusNotFound, 10)
	if _, err := b.PostAnswer(t.Context(), a, true); err != nil || count(a.Text) != 1 {
		t.Errorf("conversations.history answering 404: %v, posted %d times; want posted once", err, count(a.Text))
	}
	fake.FailNext("conversations.history", http.StatusNotFound, 0)
	a = runs.Answer{Key: "run-8/tok/complete", Channel: "C0GENERAL", Text: "Done: later."}
	fake.ErrorNext("conversations.history", "internal_error", 1)
	if _, err := b.PostAnswer(t.Context(), a, true); err == nil || count(a.Text) != 0 {
		t.Errorf("conversations.history answering internal_error: %v, posted %d times; want an error and nothing posted", err, count(a.Text))
	}
	if got := metrics.unchecked(); len(got) != 5 || got[4] != "http_404" {
		t.Errorf("answers counted as posted without a look-up: %v, want the four refusals and http_404", got)
	}

	// A 5xx is transient: the look-up is tried again and finds the answer.
	a = runs.Answer{Key: "run-9/tok/complete", Channel: "C0GENERAL", ThreadTS: m.TS, Text: "Done: once."}
	if _, err := b.PostAnswer(t.Context(), a, false); err != nil {
		t.Fatal(err)
	}
	fake.FailNext("conversations.replies", 503, 2)
	if _, err := b.PostAnswer(t.Context(), a, true); err != nil {
		t.Fatal(err)
	}
	if n := count(a.Text); n != 1 {
		t.Errorf("after a transient look-up failure the answer is there %d times, want 1", n)
	}
	if got := metrics.unchecked(); len(got) != 5 {
		t.Errorf("a transient failure was counted as a refused look-up: %v", got)
	}
}
