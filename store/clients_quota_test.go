package store_test

import (
	"errors"
	"testing"
	"time"

	"github.com/slackapprove/slackbot/agentrunner"
	"github.com/slackapprove/slackbot/approval"
	"github.com/slackapprove/slackbot/store"
)

func wantLimited(t *testing.T, err error, limit string) *store.RateLimitError {
	t.Helper()
	var rl *store.RateLimitError
	if !errors.As(err, &rl) || !errors.Is(err, approval.ErrRateLimit) || rl.Limit != limit {
		t.Fatalf("got %v, want rate limited by %s", err, limit)
	}
	if rl.RetryAfter <= 0 {
		t.Errorf("RetryAfter %v, want a positive wait", rl.RetryAfter)
	}
	return rl
}

// MaxOpen counts a client's open tokens across replicas; a token that
// ends (however) or passes its deadline stops counting.
func TestQuotaMaxOpen(t *testing.T) {
	e := newEnv(t)
	s, other := e.store(), e.otherProcess(t)
	q := store.Quota{MaxOpen: 2}
	exp := e.clock.Now().Add(time.Hour)
	take := func(s *store.Store, client string) (*approval.Request, error) {
		a := &approval.Request{Token: agentrunner.NewToken(), Origin: approval.Origin{Client: client}, Requests: requests("c1"), ExpiresAt: exp}
		if err := s.TakeQuota(t.Context(), client, a.Token, exp, q); err != nil {
			return nil, err
		}
		if err := s.Create(t.Context(), a); err != nil {
			t.Fatal(err)
		}
		return a, nil
	}
	first, err := take(s, "billing")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := take(other, "billing"); err != nil {
		t.Fatal(err)
	}
	_, err = take(s, "billing")
	wantLimited(t, err, "max_open")
	_, err = take(other, "billing")
	wantLimited(t, err, "max_open")
	// Another client has its own quota.
	if _, err := take(s, "support"); err != nil {
		t.Fatalf("another client: %v", err)
	}
	if n, err := s.ClientOpenCount(t.Context(), "billing"); err != nil || n != 2 {
		t.Errorf("ClientOpenCount = %d, %v; want 2", n, err)
	}

	// Ending a token frees its slot.
	if _, err := other.Cancel(t.Context(), first.Token, "billing"); err != nil {
		t.Fatal(err)
	}
	third, err := take(s, "billing")
	if err != nil {
		t.Fatalf("after a cancellation: %v", err)
	}
	_, err = take(s, "billing")
	wantLimited(t, err, "max_open")

	// A token that is taken but never created can be given back.
	tok := agentrunner.NewToken()
	if err := s.ReleaseQuota(t.Context(), "billing", third.Token); err != nil {
		t.Fatal(err)
	}
	if err := s.TakeQuota(t.Context(), "billing", tok, exp, q); err != nil {
		t.Fatalf("after a release: %v", err)
	}

	// Past their deadline, tokens stop counting even before the sweep.
	e.clock.Advance(time.Hour + time.Second)
	if _, err := take(s, "billing"); err != nil {
		t.Fatalf("after the deadlines: %v", err)
	}
}

// Rate admits bursts of twice the rate, then one create per 1/Rate s.
func TestQuotaRate(t *testing.T) {
	e := newEnv(t)
	s, other := e.store(), e.otherProcess(t)
	q := store.Quota{Rate: 5}
	exp := e.clock.Now().Add(time.Hour)
	take := func(s *store.Store) error {
		return s.TakeQuota(t.Context(), "billing", agentrunner.NewToken(), exp, q)
	}
	for i := range 10 {
		st := s
		if i%2 == 1 {
			st = other
		}
		if err := take(st); err != nil {
			t.Fatalf("create %d of a burst of 10: %v", i+1, err)
		}
	}
	rl := wantLimited(t, take(other), "rate")
	if rl.RetryAfter > 200*time.Millisecond {
		t.Errorf("RetryAfter %v, want at most 200ms at 5/s", rl.RetryAfter)
	}
	e.clock.Advance(rl.RetryAfter)
	if err := take(s); err != nil {
		t.Fatalf("after RetryAfter: %v", err)
	}
	wantLimited(t, take(s), "rate")
	// A second later the bucket holds 5 again, not more.
	e.clock.Advance(time.Second)
	for i := range 5 {
		if err := take(s); err != nil {
			t.Fatalf("create %d after a second: %v", i+1, err)
		}
	}
	wantLimited(t, take(s), "rate")
	if err := s.TakeQuota(t.Context(), "other-client", agentrunner.NewToken(), exp, q); err != nil {
		t.Errorf("another client: %v", err)
	}
}

// A client at its open limit that keeps retrying is held to its rate: a
// refused attempt counts against the rate like an admitted one, since
// each one at the open limit makes Redis read the open tokens' records.
func TestQuotaRefusedAttemptsCountAgainstTheRate(t *testing.T) {
	e := newEnv(t)
	s := e.store()
	q := store.Quota{MaxOpen: 1, Rate: 1} // bursts of 2
	exp := e.clock.Now().Add(time.Hour)
	take := func() error {
		return s.TakeQuota(t.Context(), "billing", agentrunner.NewToken(), exp, q)
	}
	if err := take(); err != nil {
		t.Fatal(err)
	}
	wantLimited(t, take(), "max_open")
	// The burst of 2 is spent by one admitted and one refused attempt.
	wantLimited(t, take(), "rate")
	e.clock.Advance(time.Second)
	wantLimited(t, take(), "max_open")
}
