package store_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/slackapprove/slackbot/agentrunner"
	"github.com/slackapprove/slackbot/approval"
	"github.com/slackapprove/slackbot/store"
)

// waitAsync waits on token as a run does (approval.RunTokens over ev) on a goroutine and returns its result channel.
func waitAsync(ctx context.Context, ev *store.Tokens, token string) <-chan waitResult {
	ch := make(chan waitResult, 1)
	go func() {
		res, err := approval.RunTokens{TokenStore: ev}.Wait(ctx, token)
		ch <- waitResult{res, err}
	}()
	return ch
}

type waitResult struct {
	res *agentrunner.DeferredToolResults
	err error
}

// untilWaiting blocks until n goroutines wait in ev (no time limit but the
// test's).
func untilWaiting(t *testing.T, ev *store.Tokens, n int) {
	t.Helper()
	for ev.Waiting() < n {
		select {
		case <-t.Context().Done():
			t.Fatalf("waiting for %d waiters: %v", n, t.Context().Err())
		case <-time.After(time.Millisecond):
		}
	}
}

// Two fully separate processes (clients, stores, Tokens): a decision made
// through one wakes the run waiting in the other.
func TestEventsAcrossProcesses(t *testing.T) {
	e := newEnv(t)
	sA, sB := e.store(), e.otherProcess(t)
	evA := store.NewTokens(sA, store.TokensOptions{Owner: "A"})
	evB := store.NewTokens(sB, store.TokensOptions{Owner: "B"})
	runTokens(t, evA)
	runTokens(t, evB)

	t.Run("decision in B wakes A", func(t *testing.T) {
		token := agentrunner.NewToken()
		if err := sA.Create(t.Context(), &approval.Request{Token: token, RunID: "r1", Requests: requests("c1")}); err != nil {
			t.Fatal(err)
		}
		if err := evA.Watch(t.Context(), token); err != nil {
			t.Fatal(err)
		}
		got := waitAsync(t.Context(), evA, token)
		untilWaiting(t, evA, 1)
		if _, err := sB.Decide(t.Context(), token, approve("c1", "UB")); err != nil {
			t.Fatal(err)
		}
		r := <-got
		if r.err != nil {
			t.Fatalf("wait: %v", r.err)
		}
		if a := r.res.Approvals["c1"]; !a.Approved || r.res.AnsweredBy["c1"] != "UB" {
			t.Errorf("wait: got %+v, want c1 approved by UB", r.res)
		}
	})

	t.Run("answer in B wakes A", func(t *testing.T) {
		token := agentrunner.NewToken()
		if err := sA.Create(t.Context(), &approval.Request{Token: token, Requests: requests("c1")}); err != nil {
			t.Fatal(err)
		}
		got := waitAsync(t.Context(), evA, token)
		untilWaiting(t, evA, 1)
		res := agentrunner.NewDeferredToolResults()
		res.Approvals["c1"] = agentrunner.Deny("nope")
		if _, err := sB.Answer(t.Context(), token, "api:x", res); err != nil {
			t.Fatal(err)
		}
		r := <-got
		if r.err != nil || r.res.Approvals["c1"].Approved {
			t.Fatalf("wait: got %+v, %v; want c1 denied", r.res, r.err)
		}
	})

	t.Run("cancel in B ends the wait in A", func(t *testing.T) {
		token := agentrunner.NewToken()
		if err := sA.Create(t.Context(), &approval.Request{Token: token, Requests: requests("c1")}); err != nil {
			t.Fatal(err)
		}
		got := waitAsync(t.Context(), evA, token)
		untilWaiting(t, evA, 1)
		if _, err := sB.Cancel(t.Context(), token, "UREQ"); err != nil {
			t.Fatal(err)
		}
		r := <-got
		var nd *agentrunner.NoDecisionError
		if !errors.As(r.err, &nd) || !errors.Is(r.err, agentrunner.ErrTokenCancelled) || nd.Reason != agentrunner.ReasonCancelled {
			t.Fatalf("wait: got %v, want a NoDecisionError for cancellation", r.err)
		}
	})
}

// A token resolved before anyone waits is answered at once; an unknown
// token is an error; a wait whose context ends leaves the token open.
func TestWaitEdges(t *testing.T) {
	e := newEnv(t)
	s := e.store()
	ev := store.NewTokens(s, store.TokensOptions{})
	runTokens(t, ev)

	a := e.create(t, s, requests("c1"), 1)
	if _, err := s.Decide(t.Context(), a.Token, approve("c1", "UA")); err != nil {
		t.Fatal(err)
	}
	res, err := approval.RunTokens{TokenStore: ev}.Wait(t.Context(), a.Token)
	if err != nil || !res.Approvals["c1"].Approved {
		t.Fatalf("wait on resolved token: got %+v, %v", res, err)
	}

	_, err = approval.RunTokens{TokenStore: ev}.Wait(t.Context(), agentrunner.NewToken())
	wantErr(t, "wait on unknown token", err, agentrunner.ErrTokenNotFound)

	b := e.create(t, s, requests("c1"), 1)
	ctx, cancel := context.WithCancel(t.Context())
	got := waitAsync(ctx, ev, b.Token)
	untilWaiting(t, ev, 1)
	cancel()
	wantErr(t, "wait with cancelled context", (<-got).err, context.Canceled)
	if g, err := s.Get(t.Context(), b.Token); err != nil || g.State != approval.StatePending {
		t.Errorf("after the wait ended: got %v, %v; want the token open", g.State, err)
	}
}

// Expiry with an injected clock: the waiting run gets the timeout denial,
// Sweep hands each expired token to exactly one of several sweepers.
func TestExpiry(t *testing.T) {
	e := newEnv(t)
	s := e.store()
	ev := store.NewTokens(s, store.TokensOptions{SweepEvery: -1})
	runTokens(t, ev)

	const n = 20
	tokens := make([]string, n)
	waits := make([]<-chan waitResult, n)
	for i := range n {
		a := &approval.Request{Token: agentrunner.NewToken(), RunID: fmt.Sprint("run-", i), Requests: requests("c1", "c2"), ExpiresAt: e.clock.Now().Add(time.Second)}
		if err := s.Create(t.Context(), a); err != nil {
			t.Fatal(err)
		}
		tokens[i] = a.Token
		waits[i] = waitAsync(t.Context(), ev, a.Token)
	}
	untilWaiting(t, ev, n)
	if got, err := s.Sweep(t.Context()); err != nil || len(got) != 0 {
		t.Fatalf("sweep before the deadline: got %d, %v; want none", len(got), err)
	}
	e.clock.Advance(2 * time.Second)

	// Four replicas sweep at once.
	sweepers := []*store.Store{s, e.otherProcess(t), e.otherProcess(t), e.otherProcess(t)}
	var mu sync.Mutex
	claimed := map[string]int{}
	var wg sync.WaitGroup
	for _, sw := range sweepers {
		wg.Go(func() {
			got, err := sw.Sweep(t.Context())
			if err != nil {
				t.Errorf("sweep: %v", err)
			}
			mu.Lock()
			defer mu.Unlock()
			for _, a := range got {
				claimed[a.Token]++
				if a.State != approval.StateExpired {
					t.Errorf("swept %s: state %s, want expired", a.Token, a.State)
				}
			}
		})
	}
	wg.Wait()
	for _, tok := range tokens {
		if claimed[tok] != 1 {
			t.Errorf("token %s claimed %d times, want 1", tok, claimed[tok])
		}
	}
	for i, w := range waits {
		r := <-w
		var nd *agentrunner.NoDecisionError
		if !errors.As(r.err, &nd) || !errors.Is(r.err, agentrunner.ErrTokenExpired) || nd.Reason != agentrunner.ReasonExpired {
			t.Errorf("waiter %d: got %v, want NoDecisionError{ReasonExpired, ErrTokenExpired}", i, r.err)
		}
	}
	a, err := s.Get(t.Context(), tokens[0])
	if err != nil {
		t.Fatal(err)
	}
	want := agentrunner.NoDecision(requests("c1", "c2"), agentrunner.ReasonExpired)
	jsonEqual(t, "expired results", mustJSON(t, a.Results(nil)), mustJSON(t, want))
	if c := a.Call("c1"); c.Status != approval.CallExpired {
		t.Errorf("call of an expired token: status %s, want expired", c.Status)
	}
	if got := auditCounts(t, s)[store.AuditExpired]; got != n {
		t.Errorf("expired audit events: got %d, want %d", got, n)
	}
	if got, err := s.Sweep(t.Context()); err != nil || len(got) != 0 {
		t.Errorf("second sweep: got %d, %v; want none", len(got), err)
	}
}

// Tokens.Run sweeps by itself, through its Sweep (the Service's, in the
// program).
func TestRunSweeps(t *testing.T) {
	e := newEnv(t)
	s := e.store()
	expired := make(chan *approval.Request, 1)
	ev := store.NewTokens(s, store.TokensOptions{
		SweepEvery: time.Millisecond,
		Sweep: func(ctx context.Context) error {
			got, err := s.Sweep(ctx)
			for _, a := range got {
				expired <- a
			}
			return err
		},
	})
	a := e.create(t, s, requests("c1"), 1)
	e.clock.Advance(2 * time.Hour)
	runTokens(t, ev)
	if got := <-expired; got.Token != a.Token || got.State != approval.StateExpired {
		t.Errorf("Sweep: got %s %s, want %s expired", got.Token, got.State, a.Token)
	}
}

// Ten thousand waiters in one process share one pub/sub connection.
func TestManyWaitersOneConnection(t *testing.T) {
	if testing.Short() {
		t.Skip("10,000 waiters")
	}
	const n = 10_000
	e := newEnv(t)
	s := e.store()
	ev := store.NewTokens(s, store.TokensOptions{})
	runTokens(t, ev)
	other := e.otherProcess(t)

	tokens := make([]string, n)
	for i := range tokens {
		tokens[i] = agentrunner.NewToken()
	}
	parallel(t, tokens, func(tok string) error {
		return s.Create(t.Context(), &approval.Request{Token: tok, Requests: requests("c1")})
	})
	var wg sync.WaitGroup
	var failed sync.Map
	for _, tok := range tokens {
		wg.Go(func() {
			if _, err := (approval.RunTokens{TokenStore: ev}).Wait(t.Context(), tok); err != nil {
				failed.Store(tok, err)
			}
		})
	}
	untilWaiting(t, ev, n)

	poolSize := e.rdb.(*redis.Client).Options().PoolSize
	stats := e.rdb.PoolStats()
	numsub := e.rdb.PubSubNumSub(t.Context(), e.prefix+"ended").Val()[e.prefix+"ended"]
	t.Logf("%d waiters: %d pub/sub connection(s), %d subscriber(s) on the channel, %d pooled command connections (pool size %d)",
		n, stats.PubSubStats.Active, numsub, stats.TotalConns, poolSize)
	if stats.PubSubStats.Active != 1 || numsub != 1 {
		t.Errorf("got %d pub/sub connections and %d subscribers, want 1 and 1", stats.PubSubStats.Active, numsub)
	}
	if int(stats.TotalConns) > poolSize {
		t.Errorf("got %d command connections, want at most the pool size %d", stats.TotalConns, poolSize)
	}

	parallel(t, tokens, func(tok string) error {
		_, err := other.Decide(t.Context(), tok, approve("c1", "UA"))
		return err
	})
	wg.Wait()
	failed.Range(func(k, v any) bool {
		t.Errorf("wait %v: %v", k, v)
		return true
	})
}

// parallel calls f for every item on a few goroutines.
func parallel(t *testing.T, items []string, f func(string) error) {
	t.Helper()
	ch := make(chan string)
	var wg sync.WaitGroup
	for range 16 {
		wg.Go(func() {
			for it := range ch {
				if err := f(it); err != nil {
					t.Errorf("%s: %v", it, err)
				}
			}
		})
	}
	for _, it := range items {
		ch <- it
	}
	close(ch)
	wg.Wait()
}
