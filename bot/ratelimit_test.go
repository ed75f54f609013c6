package bot

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/slack-go/slack"

	"github.com/slackapprove/slackbot/internal/slackfake"
	"github.com/slackapprove/slackbot/internal/slackfaketest"
)

// TestRateLimitsAreCounted: every 429 Slack answers is counted as rate
// limited under its method, where the call is retried (in the attempt,
// as PostInThread counts its failures, or around it, as ephemeral does)
// and where Usergroups waits it out; a 429 waited out and followed by
// success is not a failed call, one Retry gives up on is, and a refusal
// that is not a 429 is an error only.
func TestRateLimitsAreCounted(t *testing.T) {
	clock := &testClock{t: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
	fake, srv := slackfaketest.NewTestServer(t, slackfake.WithDemoWorkspace(), slackfake.WithClock(clock.Now))
	api := slack.New(fake.Token(), slack.OptionAPIURL(slackfaketest.APIURL(srv)))
	m := &countingMetrics{}
	retry := Retry{Sleep: func(_ context.Context, d time.Duration) error { clock.Add(d); return nil }}
	b := New(Config{Slack: api, Retry: retry, Metrics: m})
	t.Cleanup(b.Close)
	ctx := t.Context()
	check := func(what string, wantErrs, wantLimited []string) {
		t.Helper()
		errs, limited := m.slack()
		if !slices.Equal(errs, wantErrs) || !slices.Equal(limited, wantLimited) {
			t.Errorf("%s: errors %v, rate limited %v; want %v, %v", what, errs, limited, wantErrs, wantLimited)
		}
	}

	fake.RateLimit("chat.postMessage", 1, 10*time.Second)
	for range 2 {
		if err := b.PostInThread(ctx, smCardChan, "", "hello"); err != nil {
			t.Fatalf("PostInThread: %v", err)
		}
	}
	if n := len(fake.Calls("chat.postMessage")); n != 3 {
		t.Fatalf("chat.postMessage calls: %d, want 3 (a post, a 429, its retry)", n)
	}
	check("a post retried after a 429", nil, []string{MethodPostMessage})

	fake.RateLimit("chat.postEphemeral", 1, 10*time.Second)
	for range 2 {
		if err := b.ephemeral(ctx, smCardChan, smApprover, "hello"); err != nil {
			t.Fatalf("ephemeral: %v", err)
		}
	}
	check("an ephemeral retried after a 429", nil, []string{MethodPostMessage, MethodPostEphemeral})

	// A Retry that may not wait that long gives up: a failed call too.
	b.retry.MaxRateLimitWait = time.Second
	if err := b.ephemeral(ctx, smCardChan, smApprover, "hello"); err == nil {
		t.Fatal("ephemeral past MaxRateLimitWait: no error")
	}
	check("an ephemeral given up on", []string{MethodPostEphemeral}, []string{MethodPostMessage, MethodPostEphemeral, MethodPostEphemeral})

	fake.RateLimit("chat.postMessage", 0, 0)
	fake.ErrorNext("chat.postMessage", "channel_not_found", 1)
	if err := b.PostInThread(ctx, smCardChan, "", "hello"); err == nil {
		t.Fatal("PostInThread to a channel Slack does not find: no error")
	}
	check("a refusal", []string{MethodPostEphemeral, MethodPostMessage}, []string{MethodPostMessage, MethodPostEphemeral, MethodPostEphemeral})

	groups, gfake := newTestUsergroups(t, clock)
	gm := &countingMetrics{}
	groups.Metrics = gm
	gfake.RateLimit("usergroups.users.list", 1, time.Second)
	for _, g := range []string{smGroup, "S0OTHER"} {
		if _, err := groups.Members(ctx, g); err != nil {
			t.Fatalf("members of %s: %v", g, err)
		}
	}
	if errs, limited := gm.slack(); len(errs) != 0 || !slices.Equal(limited, []string{MethodUsergroupsUsersList}) {
		t.Errorf("a usergroup lookup that waited out a 429: errors %v, rate limited %v; want none and one", errs, limited)
	}
}
