package store_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/slackapprove/slackbot/agentrunner"
	"github.com/slackapprove/slackbot/approval"
	"github.com/slackapprove/slackbot/store"
	"github.com/slackapprove/slackbot/store/redistest"
)

// The main lifecycle runs the same against redis-server and against the
// embedded miniredis that `slackbot dev` uses.
func TestLifecycle(t *testing.T) {
	t.Run("redis-server", func(t *testing.T) {
		rdb, prefix := redistest.Client(t)
		opt, err := redis.ParseURL(redistest.URL(t))
		if err != nil {
			t.Fatal(err)
		}
		other := redis.NewClient(opt)
		t.Cleanup(func() { _ = other.Close() })
		lifecycle(t, rdb, other, prefix)
	})
	t.Run("miniredis", func(t *testing.T) {
		rdb, closeFn, err := store.Open(t.Context(), "")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = closeFn() })
		other := redis.NewClient(&redis.Options{Addr: rdb.(*redis.Client).Options().Addr})
		t.Cleanup(func() { _ = other.Close() })
		lifecycle(t, rdb, other, "slackbot:")
	})
}

func lifecycle(t *testing.T, rdbA, rdbB redis.UniversalClient, prefix string) {
	ctx := t.Context()
	c := newClock()
	opts := store.Options{Prefix: prefix, Now: c.Now}
	sA, sB := store.New(rdbA, opts), store.New(rdbB, opts)
	evA := store.NewTokens(sA, store.TokensOptions{Owner: "A", SweepEvery: -1})
	runTokens(t, evA)

	// 1. Open, create, wait in A; a blocked queue read in B; approve from B.
	token := agentrunner.NewToken()
	if err := sA.Create(ctx, &approval.Request{Token: token, RunID: "run-1", Requests: requests("c1", "c2")}); err != nil {
		t.Fatalf("create: %v", err)
	}
	if err := evA.Watch(ctx, token); err != nil {
		t.Fatal(err)
	}
	if err := sA.SaveRun(ctx, store.RunState{RunID: "run-1", Token: token}); err != nil {
		t.Fatalf("save run: %v", err)
	}
	if err := sA.SetMessage(ctx, token, "c1", approval.MessageRef{Channel: "C1", ID: "1.1"}); err != nil {
		t.Fatalf("set message: %v", err)
	}
	waited := waitAsync(ctx, evA, token)
	untilWaiting(t, evA, 1)
	if _, err := sB.Decide(ctx, token, approve("c1", "UA")); err != nil {
		t.Fatalf("decide c1: %v", err)
	}
	out, err := sB.Decide(ctx, token, deny("c2", "UB", "no"))
	if err != nil || !out.Resolved {
		t.Fatalf("decide c2: got %+v, %v; want it to resolve", out, err)
	}
	r := <-waited
	if r.err != nil || !r.res.Approvals["c1"].Approved || r.res.Approvals["c2"].Approved {
		t.Fatalf("wait: got %+v, %v", r.res, r.err)
	}
	if _, err := sB.Decide(ctx, token, approve("c1", "UZ")); !errors.Is(err, approval.ErrDecided) {
		t.Errorf("late click: got %v, want ErrDecided", err)
	}

	// 2. A run whose waiter is gone resumes from the queue: a blocked read
	// wakes when the decision lands; a dead consumer's entry is reclaimed.
	q := sB.ResumeQueue(store.ResumeQueueOptions{})
	if _, err := q.Read(ctx, "dead", 0); err != nil {
		t.Fatalf("read: %v", err)
	}
	orphan := agentrunner.NewToken()
	if err := sA.Create(ctx, &approval.Request{Token: orphan, RunID: "run-2", Requests: requests("c1")}); err != nil {
		t.Fatal(err)
	}
	read := make(chan []store.ResumeJob, 1)
	go func() {
		jobs, err := q.Read(context.WithoutCancel(ctx), "dead", 10*time.Second)
		if err != nil {
			t.Errorf("blocked read: %v", err)
		}
		read <- jobs
	}()
	if _, err := sA.Decide(ctx, orphan, approve("c1", "UA")); err != nil {
		t.Fatal(err)
	}
	if jobs := <-read; len(jobs) != 1 || jobs[0].Token != orphan {
		t.Fatalf("blocked read: got %+v, want the job of the orphan token", jobs)
	}
	jobs, err := q.Reclaim(ctx, "alive", 0)
	if err != nil || len(jobs) != 1 || jobs[0].RunID != "run-2" {
		t.Fatalf("reclaim: got %+v, %v; want run-2", jobs, err)
	}
	if ok, err := sB.ClaimResume(ctx, orphan, "alive", 0); !ok || err != nil {
		t.Fatalf("claim: %v, %v", ok, err)
	}
	if err := q.Ack(ctx, jobs[0].ID); err != nil {
		t.Fatal(err)
	}
	if jobs, err := q.Reclaim(ctx, "alive", 0); err != nil || len(jobs) != 0 {
		t.Errorf("reclaim after ack: got %+v, %v; want nothing", jobs, err)
	}

	// 3. Expiry: the waiter gets the timeout denial, once.
	late := agentrunner.NewToken()
	if err := sA.Create(ctx, &approval.Request{Token: late, Requests: requests("c1"), ExpiresAt: c.Now().Add(time.Minute)}); err != nil {
		t.Fatal(err)
	}
	waited = waitAsync(ctx, evA, late)
	untilWaiting(t, evA, 1)
	c.Advance(2 * time.Minute)
	expired, err := sB.Sweep(ctx)
	if err != nil || len(expired) != 1 || expired[0].Token != late {
		t.Fatalf("sweep: got %v, %v; want the late token", expired, err)
	}
	if r := <-waited; !errors.Is(r.err, agentrunner.ErrTokenExpired) {
		t.Errorf("wait on expired token: got %v, want ErrTokenExpired", r.err)
	}
	if _, err := sB.Decide(ctx, late, approve("c1", "UA")); !errors.Is(err, approval.ErrExpired) {
		t.Errorf("decide after expiry: got %v, want ErrExpired", err)
	}

	// 4. Dedupe, audit, and a TTL on every key.
	if first, err := sA.Dedupe(ctx, "ev-1", time.Minute); !first || err != nil {
		t.Errorf("dedupe: got %v, %v", first, err)
	}
	if first, _ := sB.Dedupe(ctx, "ev-1", time.Minute); first {
		t.Error("dedupe: second occurrence reported first")
	}
	counts := auditCounts(t, sA)
	if counts[store.AuditRequested] != 4 || counts[store.AuditDecided] != 3 || counts[store.AuditExpired] != 1 || counts[store.AuditRefused] != 2 {
		t.Errorf("audit: got %v", counts)
	}
	for _, k := range scanKeys(t, rdbA, prefix) {
		if ttl := rdbA.PTTL(ctx, k).Val(); ttl <= 0 {
			t.Errorf("key %s: PTTL %v, want > 0", k, ttl)
		}
	}
}
