package store_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/slackapprove/slackbot/agentrunner"
	"github.com/slackapprove/slackbot/approval"
	"github.com/slackapprove/slackbot/store"
	"github.com/slackapprove/slackbot/store/redistest"
)

// counts is an Options.OnUnconfirmed that counts by operation.
type counts struct {
	mu sync.Mutex
	n  map[string]int
}

func (c *counts) add(op string) { c.mu.Lock(); defer c.mu.Unlock(); c.n[op]++ }
func (c *counts) get(op string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n[op]
}

// confirmEnv is a primary with one replica and a store on the primary
// that waits for one replica (REDIS_WAIT_REPLICAS=1).
type confirmEnv struct {
	primary, replica *redistest.Server
	s                *store.Store
	unconfirmed      *counts
	clock            *clock
}

func newConfirmEnv(t *testing.T) *confirmEnv {
	t.Helper()
	primary := redistest.StartServer(t)
	replica := redistest.StartReplica(t, primary)
	c := &counts{n: map[string]int{}}
	clk := newClock()
	s := store.New(primary.Client(t), store.Options{Prefix: "w:", WaitReplicas: 1, WaitTimeout: time.Second, OnUnconfirmed: c.add, Now: clk.Now})
	return &confirmEnv{primary: primary, replica: replica, s: s, unconfirmed: c, clock: clk}
}

func (e *confirmEnv) create(t *testing.T, ids ...string) *approval.Request {
	t.Helper()
	a := &approval.Request{Token: agentrunner.NewToken(), RunID: "run-" + agentrunner.NewToken()[:6], Requests: requests(ids...), ExpiresAt: e.clock.Now().Add(time.Hour)}
	if err := e.s.Create(t.Context(), a); err != nil {
		t.Fatalf("create: %v", err)
	}
	return a
}

// With REDIS_WAIT_REPLICAS=1 every write a person or client is answered
// on is confirmed by the replica; while the replica does not answer,
// each fails with ErrUnconfirmed within its budget (held on the primary,
// in effect for nobody), is counted by operation, and repeating the same
// decision once the replica is back confirms it and applies it.
func TestWaitReplicas(t *testing.T) {
	e := newConfirmEnv(t)
	ctx := t.Context()
	ok := e.create(t, "c1")
	if _, err := e.s.Decide(ctx, ok.Token, approve("c1", "UA")); err != nil {
		t.Fatalf("decide, replica up: %v", err)
	}
	flushed := e.create(t, "c1")
	decided := e.create(t, "c1")
	toCancel, toFail, toAnswer := e.create(t, "c1"), e.create(t, "c1"), e.create(t, "c1")

	e.replica.Pause(t)
	defer e.replica.Resume(t)
	unconfirmed := func(what string, err error, op string, n int) {
		t.Helper()
		if !errors.Is(err, approval.ErrUnconfirmed) || approval.ErrorCode(err) != approval.EUNCONFIRMED {
			t.Errorf("%s, replica paused: %v, want ErrUnconfirmed", what, err)
		}
		if got := e.unconfirmed.get(op); got != n {
			t.Errorf("%s: %d unconfirmed %q writes counted, want %d", what, got, op, n)
		}
	}
	// A click's budget: the WAIT ends before the context's deadline.
	cctx, cancel := context.WithTimeout(ctx, 400*time.Millisecond)
	start := time.Now()
	_, err := e.s.Decide(cctx, decided.Token, approve("c1", "UA"))
	if cctx.Err() != nil {
		t.Errorf("decide with a 400ms budget returned after %s, past its deadline", time.Since(start))
	}
	cancel()
	unconfirmed("decide", err, "decide", 1)
	_, err = e.s.Cancel(ctx, toCancel.Token, "api:c")
	unconfirmed("cancel", err, "cancel", 1)
	_, err = e.s.Fail(ctx, toFail.Token, "api:c", "asking failed")
	unconfirmed("fail", err, "fail", 1)
	res := agentrunner.NewDeferredToolResults()
	res.Approvals["c1"] = agentrunner.ApprovalResult{Approved: true}
	_, err = e.s.Answer(ctx, toAnswer.Token, "api:c", res)
	unconfirmed("answer", err, "answer", 1)
	a := &approval.Request{Token: agentrunner.NewToken(), Requests: requests("c1"), ExpiresAt: e.clock.Now().Add(time.Hour)}
	unconfirmed("create", e.s.Create(ctx, a), "create", 1)
	e.replica.Resume(t)

	// The decision is held on the primary; the same click again is
	// confirmed, and applied.
	got, err := e.s.Decide(ctx, decided.Token, approve("c1", "UA"))
	if err != nil {
		t.Fatalf("the same click, replica back: %v", err)
	}
	if !got.Changed || got.Call.Status != approval.CallApproved {
		t.Errorf("the same click: changed %v, status %s; want the held approval applied", got.Changed, got.Call.Status)
	}
	// A flushed script cache (as on a new primary): EVALSHA in the
	// pipeline fails with NOSCRIPT and the pipeline is sent again with EVAL.
	if err := e.primary.Client(t).ScriptFlush(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	if _, err := e.s.Decide(ctx, flushed.Token, approve("c1", "UA")); err != nil {
		t.Errorf("decide after SCRIPT FLUSH: %v", err)
	}
	if n := e.unconfirmed.get("decide"); n != 1 {
		t.Errorf("%d unconfirmed decisions counted, want still 1", n)
	}
}

// Without WaitReplicas no WAIT is sent: a paused replica changes nothing.
func TestWaitReplicasOff(t *testing.T) {
	primary := redistest.StartServer(t)
	replica := redistest.StartReplica(t, primary)
	s := store.New(primary.Client(t), store.Options{Prefix: "w:"})
	replica.Pause(t)
	defer replica.Resume(t)
	a := &approval.Request{Token: agentrunner.NewToken(), Requests: requests("c1"), ExpiresAt: time.Now().Add(time.Hour)}
	if err := s.Create(t.Context(), a); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Decide(t.Context(), a.Token, approve("c1", "UA")); err != nil {
		t.Fatalf("decide with WaitReplicas 0 and the replica paused: %v", err)
	}
}
