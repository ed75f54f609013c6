package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/slackapprove/slackbot/agentrunner"
	"github.com/slackapprove/slackbot/approval"
	"github.com/slackapprove/slackbot/store"
	"github.com/slackapprove/slackbot/store/redistest"
)

// A resolution published while no subscriber listened is not lost: the
// waiter is woken by the re-check that follows every subscription.
func TestMissedNotificationRecheckedOnSubscribe(t *testing.T) {
	e := newEnv(t)
	s := e.store()
	ev := store.NewTokens(s, store.TokensOptions{RecheckEvery: time.Hour})
	a := e.create(t, s, requests("c1"), 1)
	waited := waitAsync(t.Context(), ev, a.Token)
	untilWaiting(t, ev, 1)
	// Run is not running: the notification of this decision reaches no one.
	if _, err := e.otherProcess(t).Decide(t.Context(), a.Token, approve("c1", "UA")); err != nil {
		t.Fatal(err)
	}
	runTokens(t, ev)
	if r := <-waited; r.err != nil || !r.res.Approvals["c1"].Approved {
		t.Fatalf("wait: got %+v, %v; want c1 approved", r.res, r.err)
	}
}

// The subscriber reconnects after its connection is killed, and waiters
// are still woken.
func TestSubscriberReconnects(t *testing.T) {
	srv := redistest.StartServer(t)
	rdb := srv.Client(t)
	c := newClock()
	opts := store.Options{Prefix: "r:", Now: c.Now}
	s := store.New(rdb, opts)
	ev := store.NewTokens(s, store.TokensOptions{RecheckEvery: time.Hour})
	runTokens(t, ev)

	for round := range 3 {
		// Each round's wake-up proves the subscriber is back, so there is
		// exactly one subscription to kill.
		if n := killPubSub(t, srv); n != 1 {
			t.Fatalf("round %d: killed %d pub/sub connections, want 1", round, n)
		}
		a := &approval.Request{Token: agentrunner.NewToken(), Requests: requests("c1"), ExpiresAt: c.Now().Add(time.Hour)}
		if err := s.Create(t.Context(), a); err != nil {
			t.Fatal(err)
		}
		waited := waitAsync(t.Context(), ev, a.Token)
		untilWaiting(t, ev, 1)
		if _, err := store.New(srv.Client(t), opts).Decide(t.Context(), a.Token, approve("c1", "UA")); err != nil {
			t.Fatal(err)
		}
		if r := <-waited; r.err != nil {
			t.Fatalf("round %d: wait: %v", round, r.err)
		}
	}
}

// killPubSub closes every pub/sub connection of the test's own server and
// returns how many it closed.
func killPubSub(t *testing.T, srv *redistest.Server) int64 {
	t.Helper()
	admin := srv.Client(t)
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	n, err := admin.Do(ctx, "CLIENT", "KILL", "TYPE", "pubsub").Int64()
	if err != nil {
		t.Fatal(err)
	}
	return n
}
