package store_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/slackapprove/slackbot/agentrunner"
	"github.com/slackapprove/slackbot/approval"
	"github.com/slackapprove/slackbot/store"
	"github.com/slackapprove/slackbot/store/redistest"
)

// failoverEnv is one process of slackbot on a Sentinel topology: a store
// on the failover client Open makes of the topology's URL.
type failoverEnv struct {
	st   *redistest.Sentinel
	rdb  redis.UniversalClient
	opts store.Options
}

func newFailoverEnv(t *testing.T, owner string) *failoverEnv {
	t.Helper()
	st := redistest.StartSentinel(t, redistest.SentinelOptions{})
	return &failoverEnv{st: st, rdb: openURL(t, st.URL()), opts: store.Options{Prefix: "{slackbot}:", Owner: owner}}
}

// openURL opens redisURL with store.Open, closed when t ends.
func openURL(t *testing.T, redisURL string) redis.UniversalClient {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	rdb, closeFn, err := store.Open(ctx, redisURL)
	if err != nil {
		t.Fatalf("open %s: %v", redisURL, err)
	}
	t.Cleanup(func() { _ = closeFn() })
	return rdb
}

// otherProcess returns a store of another process: its own failover
// client of the same topology.
func (f *failoverEnv) otherProcess(t *testing.T, owner string) *store.Store {
	t.Helper()
	opts := f.opts
	opts.Owner = owner
	return store.New(openURL(t, f.st.URL()), opts)
}

// replicated waits until every replica has every write so far (WAIT).
func replicated(t *testing.T, primary *redistest.Server, replicas int) {
	t.Helper()
	n, err := primary.Client(t).Do(t.Context(), "WAIT", replicas, 5000).Int()
	if err != nil || n < replicas {
		t.Fatalf("WAIT %d: %d replicas, %v", replicas, n, err)
	}
}

func cachedScripts(t *testing.T, n *redistest.Server) string {
	t.Helper()
	info := n.Client(t).Info(t.Context(), "memory").Val()
	for line := range strings.SplitSeq(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "number_of_cached_scripts:"); ok {
			return v
		}
	}
	return ""
}

// After Sentinel promotes a replica of a SIGKILLed primary, one process's
// store keeps working through the failover client: it reconnects, its
// scripts run on the new primary (whose script cache is empty: EVALSHA
// falls back to EVAL), its pub/sub re-subscribes and wakes a waiter, a
// lease taken before is still held, a run whose process died is resumed
// from the resume queue even though its consumer group never reached the
// new primary (NOGROUP: recreated), and a decision made after the failover
// whose wake-up may be lost still wakes its waiter.
func TestSentinelFailover(t *testing.T) {
	f := newFailoverEnv(t, "A")
	ctx := t.Context()
	s := store.New(f.rdb, f.opts)
	ev := store.NewTokens(s, store.TokensOptions{Owner: "A", RecheckEvery: time.Hour})
	runTokens(t, ev)
	other := f.otherProcess(t, "B")

	newReq := func(runID string) *approval.Request {
		a := &approval.Request{Token: agentrunner.NewToken(), RunID: runID, Requests: requests("c1"), ExpiresAt: time.Now().Add(time.Hour)}
		if err := s.Create(ctx, a); err != nil {
			t.Fatal(err)
		}
		return a
	}
	woken, raced, orphan := newReq("run-woken"), newReq("run-raced"), newReq("run-orphan")
	wokenWait := waitAsync(ctx, ev, woken.Token)
	racedWait := waitAsync(ctx, ev, raced.Token)
	untilWaiting(t, ev, 2)
	release, err := s.Lock(ctx, "card", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	old := f.st.Primary(t)
	replica := f.st.Replicas(t)[0]
	q := s.ResumeQueue(store.ResumeQueueOptions{})
	if _, err := q.Read(ctx, "A", 0); err != nil {
		t.Fatal(err)
	}
	replicated(t, old, 1)

	f.st.KillPrimary(t)
	primary := f.st.WaitFailover(t, old)
	if primary != replica {
		t.Fatalf("new primary %s, want the replica %s", primary.Addr(), replica.Addr())
	}
	// Scripts replicate as their effects: the new primary has none cached,
	// so the first EVALSHA of each gets NOSCRIPT and go-redis sends EVAL.
	if got := cachedScripts(t, primary); got != "0" {
		t.Fatalf("the promoted replica has %s cached scripts, want 0", got)
	}

	// Decided at once by another process: its wake-up may be published
	// before A re-subscribes; the re-check on re-subscription covers it.
	if _, err := other.Decide(ctx, raced.Token, approve("c1", "UB")); err != nil {
		t.Fatalf("decide on the new primary: %v", err)
	}
	if r := <-racedWait; r.err != nil || !r.res.Approvals["c1"].Approved {
		t.Fatalf("wait on a token decided during re-subscription: %+v, %v", r.res, r.err)
	}

	// Once A is subscribed again (and its re-check is done), a wake-up
	// comes by pub/sub: RecheckEvery is an hour.
	waitUntil(t, "A's subscription on the new primary", func() bool {
		ch := f.opts.Prefix + "ended"
		return primary.Client(t).PubSubNumSub(ctx, ch).Val()[ch] >= 1
	})
	time.Sleep(200 * time.Millisecond)
	if got := cachedScripts(t, primary); got == "0" || got == "" {
		t.Fatalf("the new primary has %q cached scripts after decisions, want some", got)
	}
	if _, err := s.Decide(ctx, woken.Token, approve("c1", "UA")); err != nil {
		t.Fatalf("decide through the reconnected client: %v", err)
	}
	if r := <-wokenWait; r.err != nil || !r.res.Approvals["c1"].Approved {
		t.Fatalf("wait woken after the failover: %+v, %v", r.res, r.err)
	}

	// The orphan's process is gone: the resume queue hands its run out,
	// from a consumer group recreated on the new primary. The group is
	// destroyed there as a failover to a replica that never received it
	// would have lost it (this process still believes it exists).
	if err := primary.Client(t).XGroupDestroy(ctx, f.opts.Prefix+"resume", "resumers").Err(); err != nil {
		t.Fatal(err)
	}
	if _, err := other.Decide(ctx, orphan.Token, approve("c1", "UB")); err != nil {
		t.Fatal(err)
	}
	found := false
	for _, j := range readJobs(t, q, "A") {
		if j.Token == orphan.Token {
			found = true
			if ok, err := s.ClaimResume(ctx, j.Token, "A/queue", 0); !ok || err != nil {
				t.Errorf("claim the orphan's run: %v, %v; want it claimed", ok, err)
			}
		}
	}
	if !found {
		t.Error("the resume queue did not hand out the orphan's run after the failover")
	}

	// The lease taken before the failover is still held.
	lctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	if _, err := other.Lock(lctx, "card", time.Minute); err == nil {
		t.Error("another process took a lease held since before the failover")
	}
	cancel()
	release()
	if rel, err := other.Lock(ctx, "card", time.Minute); err != nil {
		t.Errorf("lease after its release: %v", err)
	} else {
		rel()
	}

}

// readJobs reads q as consumer until a read returns nothing.
func readJobs(t *testing.T, q *store.ResumeQueue, consumer string) []store.ResumeJob {
	t.Helper()
	var out []store.ResumeJob
	for range 10 {
		jobs, err := q.Read(t.Context(), consumer, 0)
		if err != nil {
			t.Fatalf("read the resume queue: %v", err)
		}
		if len(jobs) == 0 {
			break
		}
		out = append(out, jobs...)
	}
	return out
}

// With WaitReplicas 1 on Sentinel, a decision reported done is on the
// replica: after the primary is SIGKILLed and the replica promoted, it is
// still there (the guarantee REDIS_WAIT_REPLICAS gives).
func TestConfirmedDecisionSurvivesFailover(t *testing.T) {
	f := newFailoverEnv(t, "A")
	f.opts.WaitReplicas = 1
	f.opts.WaitTimeout = 2 * time.Second // a loaded test machine; the default is 500ms
	s := store.New(f.rdb, f.opts)
	ctx := t.Context()
	a := &approval.Request{Token: agentrunner.NewToken(), RunID: "run-1", Requests: requests("c1"), ExpiresAt: time.Now().Add(time.Hour)}
	if err := s.Create(ctx, a); err != nil {
		t.Fatal(err)
	}
	dctx, cancel := context.WithTimeout(ctx, 2500*time.Millisecond) // a click's budget
	if _, err := s.Decide(dctx, a.Token, approve("c1", "UA")); err != nil {
		t.Fatalf("decide with WAIT 1: %v", err)
	}
	cancel()
	old := f.st.KillPrimary(t)
	f.st.WaitFailover(t, old)
	got, err := s.Get(ctx, a.Token)
	if err != nil {
		t.Fatalf("read after the failover: %v", err)
	}
	if got.State != approval.StateResolved || got.Call("c1").Status != approval.CallApproved {
		t.Errorf("after the failover: state %s, c1 %s; want the confirmed approval", got.State, got.Call("c1").Status)
	}
}
