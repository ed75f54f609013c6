package store_test

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/slackapprove/slackbot/store"
	"github.com/slackapprove/slackbot/store/redistest"
)

// alive gives owner a process heartbeat, as Tokens.Run does.
func (e *env) alive(t *testing.T, owner string) {
	t.Helper()
	if err := e.rdb.Set(t.Context(), e.prefix+"proc:"+owner, "1", time.Minute).Err(); err != nil {
		t.Fatal(err)
	}
}

// readAll reads q as consumer until it returns nothing.
func readAll(t *testing.T, q *store.JobQueue, consumer string) []store.Job {
	t.Helper()
	var out []store.Job
	for {
		jobs, err := q.Read(t.Context(), consumer, 0)
		if err != nil {
			t.Fatalf("read jobs as %s: %v", consumer, err)
		}
		if len(jobs) == 0 {
			return out
		}
		out = append(out, jobs...)
	}
}

// The sweep that claims an expiry queues, in the same script, exactly one
// card update job for the token, however many replicas sweep at once.
func TestSweepQueuesOneCardUpdatePerExpiry(t *testing.T) {
	e := newEnv(t)
	s := e.store()
	const n = 10
	tokens := map[string]bool{}
	for range n {
		tokens[e.create(t, s, requests("c1"), 1).Token] = true
	}
	e.clock.Advance(2 * time.Hour)
	var wg sync.WaitGroup
	for _, sw := range []*store.Store{s, e.otherProcess(t), e.otherProcess(t)} {
		wg.Go(func() {
			if _, err := sw.Sweep(t.Context()); err != nil {
				t.Errorf("sweep: %v", err)
			}
		})
	}
	wg.Wait()

	seen := map[string]int{}
	for _, j := range readAll(t, s.JobQueue(0), "w1") {
		if j.Kind != store.JobCardUpdate || j.Attempt != 1 || j.Data != "" {
			t.Errorf("job %+v: want kind %s, attempt 1, no data", j, store.JobCardUpdate)
		}
		seen[j.Token]++
	}
	for tok := range tokens {
		if seen[tok] != 1 {
			t.Errorf("token %s: %d card update jobs, want 1", tok, seen[tok])
		}
	}
	if len(seen) != n {
		t.Errorf("jobs for %d tokens, want %d", len(seen), n)
	}
}

// Two consumers reading at once get every job exactly once between them.
func TestJobsGoToOneConsumer(t *testing.T) {
	e := newEnv(t)
	s := e.store()
	q := s.JobQueue(4)
	const n = 60
	for i := range n {
		if _, err := q.Add(t.Context(), store.JobCardUpdate, "", fmt.Sprint("job-", i)); err != nil {
			t.Fatal(err)
		}
	}
	e.alive(t, "w1")
	e.alive(t, "w2")
	var mu sync.Mutex
	got := map[string]int{}
	var wg sync.WaitGroup
	for _, w := range []string{"w1", "w2"} {
		qw := e.otherProcess(t).JobQueue(4)
		wg.Go(func() {
			for {
				jobs, err := qw.Read(t.Context(), w, 0)
				if err != nil {
					t.Errorf("read as %s: %v", w, err)
					return
				}
				dead, err := qw.ReclaimDead(t.Context(), w)
				if err != nil {
					t.Errorf("reclaim dead as %s: %v", w, err)
					return
				}
				jobs = append(jobs, dead...)
				if len(jobs) == 0 {
					return
				}
				mu.Lock()
				for _, j := range jobs {
					got[j.Data]++
				}
				mu.Unlock()
				for _, j := range jobs {
					if err := qw.Ack(t.Context(), j.ID); err != nil {
						t.Error(err)
					}
				}
			}
		})
	}
	wg.Wait()
	for i := range n {
		if k := fmt.Sprint("job-", i); got[k] != 1 {
			t.Errorf("%s handled %d times, want 1", k, got[k])
		}
	}
}

// A job read by a consumer that died (its heartbeat is gone) is taken over
// by exactly one other consumer; a live consumer's job is left alone by
// ReclaimDead until Reclaim's idle bound passes; an acknowledged job is
// never seen again.
func TestJobReclaim(t *testing.T) {
	e := newEnv(t)
	s := e.store()
	q := s.JobQueue(0)
	a := e.create(t, s, requests("c1"), 1)
	b := e.create(t, s, requests("c1"), 1)
	if _, err := q.Add(t.Context(), store.JobCardUpdate, a.Token, ""); err != nil {
		t.Fatal(err)
	}
	if got := readAll(t, q, "dead"); len(got) != 1 || got[0].Token != a.Token {
		t.Fatalf("read as dead: got %+v, want the job of %s", got, a.Token)
	}
	e.alive(t, "busy")
	if _, err := q.Add(t.Context(), store.JobCardUpdate, b.Token, ""); err != nil {
		t.Fatal(err)
	}
	if got := readAll(t, q, "busy"); len(got) != 1 || got[0].Token != b.Token {
		t.Fatalf("read as busy: got %+v, want the job of %s", got, b.Token)
	}
	e.alive(t, "r1")
	e.alive(t, "r2")
	if got, err := q.ReclaimDead(t.Context(), "r1"); err != nil || len(got) != 0 {
		t.Fatalf("reclaim dead at once: got %+v, %v; want none (too fresh)", got, err)
	}
	time.Sleep(1100 * time.Millisecond) // XPENDING idle times run on Redis's clock

	var mu sync.Mutex
	var taken []store.Job
	var wg sync.WaitGroup
	for _, r := range []string{"r1", "r2"} {
		qr := e.otherProcess(t).JobQueue(0)
		wg.Go(func() {
			got, err := qr.ReclaimDead(t.Context(), r)
			if err != nil {
				t.Errorf("reclaim dead as %s: %v", r, err)
			}
			mu.Lock()
			taken = append(taken, got...)
			mu.Unlock()
		})
	}
	wg.Wait()
	if len(taken) != 1 || taken[0].Token != a.Token {
		t.Fatalf("reclaimed from the dead consumer: got %+v, want exactly the job of %s once", taken, a.Token)
	}
	if err := q.Ack(t.Context(), taken[0].ID); err != nil {
		t.Fatal(err)
	}

	// The live consumer's job is reclaimed only once it sat past the bound.
	if got, err := q.Reclaim(t.Context(), "r1", time.Minute); err != nil || len(got) != 0 {
		t.Fatalf("reclaim within the bound: got %+v, %v; want none", got, err)
	}
	got, err := q.Reclaim(t.Context(), "r1", time.Second)
	if err != nil || len(got) != 1 || got[0].Token != b.Token {
		t.Fatalf("reclaim past the bound: got %+v, %v; want the job of %s", got, err, b.Token)
	}
	if err := q.Ack(t.Context(), got[0].ID); err != nil {
		t.Fatal(err)
	}
	time.Sleep(1100 * time.Millisecond)
	for _, r := range []string{"r1", "r2"} {
		if got, err := q.ReclaimDead(t.Context(), r); err != nil || len(got) != 0 {
			t.Errorf("reclaim dead after the acks as %s: got %+v, %v; want none", r, got, err)
		}
		if got, err := q.Reclaim(t.Context(), r, time.Millisecond); err != nil || len(got) != 0 {
			t.Errorf("reclaim after the acks as %s: got %+v, %v; want none", r, got, err)
		}
	}
	if got := readAll(t, q, "r2"); len(got) != 0 {
		t.Errorf("read after the acks: got %+v, want none", got)
	}
}

// A failed attempt is acknowledged and comes back, once, as the next
// attempt when it is due by the store's clock, with its payload intact.
func TestJobRetry(t *testing.T) {
	e := newEnv(t)
	s := e.store()
	q := s.JobQueue(0)
	a := e.create(t, s, requests("c1"), 1)
	data := "a payload with spaces\nand a newline"
	if _, err := q.Add(t.Context(), "thread.answer", a.Token, data); err != nil {
		t.Fatal(err)
	}
	if _, err := q.Add(t.Context(), "bad kind", a.Token, ""); err == nil {
		t.Error("add with a kind holding a space: got no error")
	}
	if _, err := q.Add(t.Context(), store.JobCardUpdate, "not a token", ""); err == nil {
		t.Error("add with a malformed token: got no error")
	}
	jobs := readAll(t, q, "w1")
	if len(jobs) != 1 {
		t.Fatalf("read: got %d jobs, want 1", len(jobs))
	}
	if err := q.Retry(t.Context(), jobs[0], 5*time.Second); err != nil {
		t.Fatal(err)
	}
	if n, err := q.Promote(t.Context()); err != nil || n != 0 {
		t.Fatalf("promote before due: got %d, %v; want 0", n, err)
	}
	if got, err := q.Reclaim(t.Context(), "w2", 0); err != nil || len(got) != 0 {
		t.Fatalf("reclaim of a job scheduled for retry: got %+v, %v; want none (it was acknowledged)", got, err)
	}
	e.clock.Advance(6 * time.Second)
	for _, p := range []*store.Store{s, e.otherProcess(t)} {
		if _, err := p.JobQueue(0).Promote(t.Context()); err != nil {
			t.Fatal(err)
		}
	}
	again := readAll(t, q, "w2")
	want := store.Job{Kind: "thread.answer", Token: a.Token, Data: data, Attempt: 2}
	if len(again) != 1 {
		t.Fatalf("after promote: got %d jobs, want 1: %+v", len(again), again)
	}
	again[0].ID = ""
	if again[0] != want {
		t.Errorf("retried job: got %+v, want %+v", again[0], want)
	}
}

// The card update of an expiry goes through its whole life the same on
// redis-server and on the embedded miniredis that `slackbot dev` uses:
// queued by the sweep, read by a consumer that dies, taken over, retried,
// acknowledged.
func TestJobLifecycleOnBothRedises(t *testing.T) {
	t.Run("redis-server", func(t *testing.T) {
		rdb, prefix := redistest.Client(t)
		jobLifecycle(t, rdb, prefix)
	})
	t.Run("miniredis", func(t *testing.T) {
		rdb, closeFn, err := store.Open(t.Context(), "")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = closeFn() })
		jobLifecycle(t, rdb, "slackbot:")
	})
}

func jobLifecycle(t *testing.T, rdb redis.UniversalClient, prefix string) {
	c := newClock()
	e := &env{rdb: rdb, prefix: prefix, clock: c, opts: store.Options{Prefix: prefix, Now: c.Now}}
	s := e.store()
	q := s.JobQueue(0)
	a := e.create(t, s, requests("c1"), 1)
	c.Advance(2 * time.Hour)
	if got, err := s.Sweep(t.Context()); err != nil || len(got) != 1 {
		t.Fatalf("sweep: got %d, %v; want 1 expired", len(got), err)
	}
	if got := readAll(t, q, "dead"); len(got) != 1 || got[0].Token != a.Token || got[0].Kind != store.JobCardUpdate {
		t.Fatalf("read: got %+v, want the card update of %s", got, a.Token)
	}
	e.alive(t, "live")
	time.Sleep(1100 * time.Millisecond)
	taken, err := q.ReclaimDead(t.Context(), "live")
	if err != nil || len(taken) != 1 || taken[0].Token != a.Token {
		t.Fatalf("reclaim dead: got %+v, %v; want the job of %s", taken, err, a.Token)
	}
	if err := q.Retry(t.Context(), taken[0], time.Second); err != nil {
		t.Fatal(err)
	}
	c.Advance(2 * time.Second)
	if n, err := q.Promote(t.Context()); err != nil || n != 1 {
		t.Fatalf("promote: got %d, %v; want 1", n, err)
	}
	again := readAll(t, q, "live")
	if len(again) != 1 || again[0].Attempt != 2 || again[0].Token != a.Token {
		t.Fatalf("after promote: got %+v, want attempt 2 of %s", again, a.Token)
	}
	if err := q.Ack(t.Context(), again[0].ID); err != nil {
		t.Fatal(err)
	}
	if got, err := q.Reclaim(t.Context(), "other", 0); err != nil || len(got) != 0 {
		t.Errorf("reclaim after ack: got %+v, %v; want none", got, err)
	}
}
