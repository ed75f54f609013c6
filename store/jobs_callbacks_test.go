package store_test

import (
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/slackapprove/slackbot/agentrunner"
	"github.com/slackapprove/slackbot/approval"
	"github.com/slackapprove/slackbot/store"
)

// Every way a token with a callback URL ends queues exactly one job;
// tokens without one queue none.
func TestCallbackQueuedOnEveryEnd(t *testing.T) {
	e := newEnv(t)
	s := e.store()
	ctx := t.Context()
	q := s.CallbackQueue(0)
	const cb = "https://agent.example/cb"

	resolved := createAPI(t, e, s, requests("a1"), cb)
	if _, err := s.Decide(ctx, resolved.Token, approve("a1", "U0ALICE")); err != nil {
		t.Fatal(err)
	}
	answered := createAPI(t, e, s, requests("a1"), cb)
	one := agentrunner.NewDeferredToolResults()
	one.Approvals["a1"] = agentrunner.Approve()
	if _, err := s.Answer(ctx, answered.Token, "billing", one); err != nil {
		t.Fatal(err)
	}
	cancelled := createAPI(t, e, s, requests("a1"), cb)
	if _, err := s.Cancel(ctx, cancelled.Token, "billing"); err != nil {
		t.Fatal(err)
	}
	failed := createAPI(t, e, s, requests("a1"), cb)
	if _, err := s.Fail(ctx, failed.Token, "slackbot", "asking failed"); err != nil {
		t.Fatal(err)
	}
	silent := createAPI(t, e, s, requests("a1"), "") // no callback URL
	if _, err := s.Cancel(ctx, silent.Token, "billing"); err != nil {
		t.Fatal(err)
	}
	expired := createAPI(t, e, s, requests("a1"), cb)
	e.clock.Advance(2 * time.Hour)
	if _, err := s.Sweep(ctx); err != nil {
		t.Fatal(err)
	}
	// A repeated click after the end queues nothing more.
	if _, err := s.Decide(ctx, resolved.Token, approve("a1", "U0ALICE")); err != nil {
		t.Fatal(err)
	}

	jobs, err := q.Read(ctx, "replica-1", 0)
	if err != nil {
		t.Fatal(err)
	}
	want := []store.CallbackJob{
		{Token: resolved.Token, State: approval.StateResolved, Attempt: 1},
		{Token: answered.Token, State: approval.StateResolved, Attempt: 1},
		{Token: cancelled.Token, State: approval.StateCancelled, Attempt: 1},
		{Token: failed.Token, State: approval.StateFailed, Attempt: 1},
		{Token: expired.Token, State: approval.StateExpired, Attempt: 1},
	}
	if diff := cmp.Diff(want, jobs, cmpopts.IgnoreFields(store.CallbackJob{}, "ID")); diff != "" {
		t.Errorf("callback jobs (-want +got):\n%s", diff)
	}
	// Another replica reading the group gets nothing: each job goes to one.
	if more, err := q.Read(ctx, "replica-2", 0); err != nil || len(more) != 0 {
		t.Errorf("second consumer: got %v, %v; want no jobs", more, err)
	}
}

func TestCallbackRetryAndReclaim(t *testing.T) {
	e := newEnv(t)
	s := e.store()
	ctx := t.Context()
	q1, q2 := s.CallbackQueue(0), e.otherProcess(t).CallbackQueue(0)

	a := createAPI(t, e, s, requests("a1"), "https://agent.example/cb")
	if _, err := s.Cancel(ctx, a.Token, "billing"); err != nil {
		t.Fatal(err)
	}
	jobs, err := q1.Read(ctx, "replica-1", 0)
	if err != nil || len(jobs) != 1 {
		t.Fatalf("read: got %v, %v; want one job", jobs, err)
	}

	// The attempt failed: schedule the next one in a minute.
	if err := q1.Retry(ctx, jobs[0], e.clock.Now().Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	if n, err := q2.Promote(ctx); n != 0 || err != nil {
		t.Errorf("promote before due: got %d, %v; want 0", n, err)
	}
	if stale, _ := q2.Reclaim(ctx, "replica-2", 0); len(stale) != 0 {
		t.Errorf("a retried job was left pending: reclaimed %v", stale)
	}
	e.clock.Advance(time.Minute)
	// Two replicas promote at once: the attempt is moved once.
	var wg sync.WaitGroup
	moved := make([]int, 2)
	for i, q := range []*store.CallbackQueue{q1, q2} {
		wg.Go(func() {
			n, err := q.Promote(ctx)
			if err != nil {
				t.Error(err)
			}
			moved[i] = n
		})
	}
	wg.Wait()
	if moved[0]+moved[1] != 1 {
		t.Errorf("promoted %v; want one attempt moved once", moved)
	}

	// replica-2 takes attempt 2 and dies without acknowledging it.
	jobs, err = q2.Read(ctx, "replica-2", 0)
	if err != nil || len(jobs) != 1 || jobs[0].Attempt != 2 || jobs[0].State != approval.StateCancelled || jobs[0].Token != a.Token {
		t.Fatalf("read attempt 2: got %+v, %v", jobs, err)
	}
	stale, err := q1.Reclaim(ctx, "replica-1", 0)
	if err != nil || len(stale) != 1 || stale[0].ID != jobs[0].ID || stale[0].Attempt != 2 {
		t.Fatalf("reclaim: got %+v, %v; want attempt 2 taken over", stale, err)
	}
	if err := q1.Ack(ctx, stale[0].ID); err != nil {
		t.Fatal(err)
	}
	if stale, _ := q2.Reclaim(ctx, "replica-2", 0); len(stale) != 0 {
		t.Errorf("an acknowledged job came back: %v", stale)
	}
}

func TestAuditCallback(t *testing.T) {
	e := newEnv(t)
	s := e.store()
	ctx := t.Context()
	token := agentrunner.NewToken()
	attempts := []store.CallbackAttempt{
		{Token: token, Client: "billing", Attempt: 1, Outcome: store.CallbackRetrying, Status: 503, Error: "receiver answered 503 Service Unavailable"},
		{Token: token, Client: "billing", Attempt: 2, Outcome: store.CallbackRetrying, Error: "connection refused"},
		{Token: token, Client: "billing", Attempt: 3, Outcome: store.CallbackDelivered, Status: 204},
	}
	for _, a := range attempts {
		if err := s.AuditCallback(ctx, a); err != nil {
			t.Fatal(err)
		}
	}
	evs, err := s.ReadAudit(ctx, "", 0)
	if err != nil {
		t.Fatal(err)
	}
	want := []store.AuditEvent{
		{Type: store.AuditCallback, Token: token, By: "billing", Decision: "retrying", Reason: "receiver answered 503 Service Unavailable", Detail: "attempt 1, HTTP 503"},
		{Type: store.AuditCallback, Token: token, By: "billing", Decision: "retrying", Reason: "connection refused", Detail: "attempt 2"},
		{Type: store.AuditCallback, Token: token, By: "billing", Decision: "delivered", Detail: "attempt 3, HTTP 204"},
	}
	if diff := cmp.Diff(want, evs, cmpopts.IgnoreFields(store.AuditEvent{}, "ID", "At")); diff != "" {
		t.Errorf("audit (-want +got):\n%s", diff)
	}
}

// The callback stream, the retry schedule and idempotency keys expire.
func TestAPIKeysHaveTTL(t *testing.T) {
	e := newEnv(t)
	s := e.store()
	ctx := t.Context()
	a := createAPI(t, e, s, requests("a1"), "https://agent.example/cb")
	if _, _, err := s.ClaimIdempotency(ctx, "billing", "k", a.Token, "fp", time.Minute); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Cancel(ctx, a.Token, "billing"); err != nil {
		t.Fatal(err)
	}
	q := s.CallbackQueue(0)
	jobs, err := q.Read(ctx, "replica-1", 0)
	if err != nil || len(jobs) != 1 {
		t.Fatalf("read: %v, %v", jobs, err)
	}
	if err := q.Retry(ctx, jobs[0], e.clock.Now().Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, k := range scanKeys(t, e.rdb, e.prefix) {
		if ttl := e.rdb.PTTL(ctx, k).Val(); ttl <= 0 {
			t.Errorf("key %s: PTTL %v, want > 0", k, ttl)
		}
		seen[k[len(e.prefix):]] = true
	}
	for _, k := range []string{"callbacks", "callbacks:retry"} {
		if !seen[k] {
			t.Errorf("no %q key was created; the test does not cover it", k)
		}
	}
}

// The callback scripts run on the embedded Redis of `slackbot dev` too.
func TestCallbackQueueMiniredis(t *testing.T) {
	rdb, closeFn, err := store.Open(t.Context(), "")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = closeFn() })
	ctx := t.Context()
	c := newClock()
	s := store.New(rdb, store.Options{Now: c.Now})
	a := &approval.Request{Token: agentrunner.NewToken(), Requests: requests("a1"), Origin: approval.Origin{Client: "billing"}, CallbackURL: "http://127.0.0.1:1/cb"}
	if err := s.Create(ctx, a); err != nil {
		t.Fatal(err)
	}
	one := agentrunner.NewDeferredToolResults()
	one.Approvals["a1"] = agentrunner.Approve()
	if _, err := s.Answer(ctx, a.Token, "billing", one); err != nil {
		t.Fatal(err)
	}
	q := s.CallbackQueue(0)
	jobs, err := q.Read(ctx, "r1", 0)
	if err != nil || len(jobs) != 1 || jobs[0].State != approval.StateResolved {
		t.Fatalf("read: got %+v, %v", jobs, err)
	}
	if err := q.Retry(ctx, jobs[0], c.Now()); err != nil {
		t.Fatal(err)
	}
	if n, err := q.Promote(ctx); n != 1 || err != nil {
		t.Fatalf("promote: got %d, %v", n, err)
	}
	jobs, err = q.Read(ctx, "r1", 0)
	if err != nil || len(jobs) != 1 || jobs[0].Attempt != 2 {
		t.Fatalf("read attempt 2: got %+v, %v", jobs, err)
	}
	if stale, err := q.Reclaim(ctx, "r2", 0); err != nil || len(stale) != 1 {
		t.Fatalf("reclaim: got %+v, %v", stale, err)
	}
	got, first, err := s.ClaimIdempotency(ctx, "billing", "k", a.Token, "fp", time.Minute)
	if err != nil || !first || got.Token != a.Token {
		t.Fatalf("claim: %+v %v %v", got, first, err)
	}
	if err := s.KeepIdempotency(ctx, "billing", "k", a.Token); err != nil {
		t.Fatal(err)
	}
}

// A callback job of a replica that died is taken over within seconds,
// not after the idle bound: ReclaimDead hands it on once the consumer's
// heartbeat is gone, and leaves a live consumer's job alone.
func TestCallbackReclaimDead(t *testing.T) {
	e := newEnv(t)
	s := e.store()
	ctx := t.Context()
	q1, q2 := s.CallbackQueue(0), e.otherProcess(t).CallbackQueue(0)
	a := createAPI(t, e, s, requests("a1"), "https://agent.example/cb")
	if _, err := s.Cancel(ctx, a.Token, "billing"); err != nil {
		t.Fatal(err)
	}
	e.alive(t, "replica-1")
	jobs, err := q1.Read(ctx, "replica-1", 0)
	if err != nil || len(jobs) != 1 {
		t.Fatalf("read: got %v, %v; want one job", jobs, err)
	}
	time.Sleep(1100 * time.Millisecond) // past the takeover's exclusive idle time
	if got, err := q2.ReclaimDead(ctx, "replica-2"); err != nil || len(got) != 0 {
		t.Fatalf("reclaim while replica-1 lives: got %v, %v; want nothing", got, err)
	}
	e.dies(t, "replica-1")
	got, err := q2.ReclaimDead(ctx, "replica-2")
	if err != nil || len(got) != 1 || got[0].ID != jobs[0].ID {
		t.Fatalf("reclaim after replica-1 died: got %v, %v; want its job", got, err)
	}
}
