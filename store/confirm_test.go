package store_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

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

// hookedClient returns a client of e's primary whose WAIT commands w
// records; reads wait as long as any WAIT may.
func (e *confirmEnv) hookedClient(t *testing.T, w *waitRecorder) redis.UniversalClient {
	t.Helper()
	rdb := redis.NewClient(&redis.Options{Addr: e.primary.Addr(), ReadTimeout: time.Minute})
	rdb.AddHook(w)
	t.Cleanup(func() { _ = rdb.Close() })
	return rdb
}

// caughtUp returns once the replica has acknowledged everything the
// primary holds, so that the next write's WAIT is answered however slowly
// a loaded host resumes the replica.
func (e *confirmEnv) caughtUp(t *testing.T) {
	t.Helper()
	rdb := e.primary.Client(t)
	for {
		// WAIT counts the acknowledgements of this connection's own
		// writes: write, then wait, on one connection.
		p := rdb.Pipeline()
		p.Set(t.Context(), "w:caught-up", "1", 0)
		wait := p.Do(t.Context(), "wait", 1, 1000)
		if _, err := p.Exec(t.Context()); err != nil {
			t.Fatalf("the replica did not catch up: %v", err)
		}
		if n, _ := wait.Int(); n >= 1 {
			return
		}
	}
}

// waitRecorder is a go-redis hook that records the timeout of every WAIT
// sent, alone or in a pipeline.
type waitRecorder struct {
	mu sync.Mutex
	ms []time.Duration
}

func (w *waitRecorder) record(cmd redis.Cmder) {
	args := cmd.Args()
	if !strings.EqualFold(cmd.Name(), "wait") || len(args) != 3 {
		return
	}
	ms, err := strconv.ParseInt(fmt.Sprint(args[2]), 10, 64)
	if err != nil {
		ms = -1 // not a number: fails any bound
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.ms = append(w.ms, time.Duration(ms)*time.Millisecond)
}

// take returns the timeouts recorded since the last take.
func (w *waitRecorder) take() []time.Duration {
	w.mu.Lock()
	defer w.mu.Unlock()
	ms := w.ms
	w.ms = nil
	return ms
}

func (w *waitRecorder) DialHook(next redis.DialHook) redis.DialHook { return next }

func (w *waitRecorder) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		w.record(cmd)
		return next(ctx, cmd)
	}
}

func (w *waitRecorder) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		for _, cmd := range cmds {
			w.record(cmd)
		}
		return next(ctx, cmds)
	}
}

// With REDIS_WAIT_REPLICAS=1 every write a person or client is answered
// on is confirmed by the replica; while the replica does not answer,
// each fails with ErrUnconfirmed within its budget (held on the primary,
// in effect for nobody), is counted by operation, and repeating the same
// decision once the replica is back confirms it and applies it.
func TestWaitReplicas(t *testing.T) {
	e := newConfirmEnv(t)
	ctx := t.Context()
	// A click's budget, its context's deadline or its NotAfter, bounds
	// the WAIT the store sends, however long WaitTimeout allows: Redis is
	// asked to wait no longer than the budget leaves, less the store's
	// margin. Asserted on what is sent, not on how long it took.
	waits := &waitRecorder{}
	budgeted := store.New(e.hookedClient(t, waits), store.Options{Prefix: "w:", WaitReplicas: 1, WaitTimeout: time.Minute, OnUnconfirmed: e.unconfirmed.add, Now: e.clock.Now})
	boundedBy := func(what string, budget time.Duration) {
		t.Helper()
		got := waits.take()
		if len(got) == 0 {
			t.Errorf("%s sent no WAIT", what)
		}
		for _, ms := range got {
			if limit := budget - store.WaitMargin; ms > limit {
				t.Errorf("%s with a %s budget sent WAIT with a %s timeout, want at most %s", what, budget, ms, limit)
			}
		}
	}
	ok := e.create(t, "c1")
	dctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	_, err := budgeted.Decide(dctx, ok.Token, approve("c1", "UA"))
	cancel()
	if err != nil {
		t.Fatalf("decide, replica up: %v", err)
	}
	boundedBy("decide by a context's deadline", 10*time.Second)
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
	// Unconfirmed within its budget: a NotAfter long enough that no
	// stall of the host makes the click too late.
	click := approve("c1", "UA")
	click.NotAfter = time.Now().Add(2 * time.Second)
	_, err = budgeted.Decide(ctx, decided.Token, click)
	unconfirmed("decide", err, "decide", 1)
	boundedBy("decide by its NotAfter", 2*time.Second)
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
	e.caughtUp(t)

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
