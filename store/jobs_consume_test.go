package store_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/slackapprove/slackbot/store"
)

// consume runs f on its own goroutine until the test ends, and waits for
// it to return then.
func consume(t *testing.T, f func(ctx context.Context)) context.CancelFunc {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		f(ctx)
	}()
	stop := func() {
		cancel()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Error("Consume did not return within 10s of its context's end")
		}
	}
	t.Cleanup(stop)
	return stop
}

// waitUntil polls cond, failing the test after 10 seconds.
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// streamLen returns how many entries the stream named name holds.
func (e *env) streamLen(t *testing.T, name string) int64 {
	t.Helper()
	n, err := e.rdb.XLen(t.Context(), e.prefix+name).Result()
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// ResumeQueue.Consume hands each new job to the handler, takes over the
// job of a consumer whose process died, hands again a job the handler did
// not acknowledge once it sat past ReclaimIdle, and returns when its
// context ends.
func TestResumeQueueConsume(t *testing.T) {
	e := newEnv(t)
	s := e.store()
	q := s.ResumeQueue(store.ResumeQueueOptions{})
	e.alive(t, "A")
	e.alive(t, "D")
	deadsToken := e.decided(t, s, "run-dead")
	if jobs, err := q.Read(t.Context(), "D", 0); err != nil || len(jobs) != 1 {
		t.Fatalf("D's read: %v, %v; want its one job", jobs, err)
	}
	e.dies(t, "D")
	time.Sleep(1100 * time.Millisecond) // ReclaimDead's idle check is Redis's own clock
	fresh := e.decided(t, s, "run-new")
	unacked := e.decided(t, s, "run-unacked")

	var mu sync.Mutex
	seen := map[string]int{}
	stop := consume(t, func(ctx context.Context) {
		q.Consume(ctx, "A", store.ConsumeOptions{Block: 50 * time.Millisecond, ReclaimIdle: 200 * time.Millisecond},
			func(ctx context.Context, j store.ResumeJob) {
				mu.Lock()
				seen[j.Token]++
				n := seen[j.Token]
				mu.Unlock()
				if j.Token == unacked && n == 1 {
					return // left unacknowledged: handed out again
				}
				if err := q.Ack(ctx, j.ID); err != nil {
					t.Error(err)
				}
			})
	})
	count := func(token string) int { mu.Lock(); defer mu.Unlock(); return seen[token] }
	waitUntil(t, "the unacknowledged job handed out again", func() bool { return count(unacked) == 2 })
	waitUntil(t, "the dead consumer's job", func() bool { return count(deadsToken) == 1 })
	// Ack deletes a job from the stream: once it is empty every job was
	// acknowledged, and none can be handed out again.
	waitUntil(t, "every job acknowledged", func() bool { return e.streamLen(t, "resume") == 0 })
	stop()
	for token, want := range map[string]int{deadsToken: 1, fresh: 1, unacked: 2} {
		if got := count(token); got != want {
			t.Errorf("job of %s handed out %d times, want %d", token, got, want)
		}
	}
}

// JobQueue.Consume acknowledges a job done, retries a failed one with its
// next attempt and gives it up after Attempts, looks again at a busy one
// without spending an attempt, leaves ErrJobLeft's pending, and works at
// most Parallel jobs at once.
func TestJobQueueConsume(t *testing.T) {
	e := newEnv(t)
	// The retry schedule is on the store's clock: a real one here.
	s := store.New(e.rdb, store.Options{Prefix: e.prefix})
	q := s.JobQueue(0)
	e.alive(t, "w1")
	add := func(data string) {
		if _, err := q.Add(t.Context(), store.JobThreadAnswer, "", data); err != nil {
			t.Fatal(err)
		}
	}
	for _, d := range []string{"ok", "fail", "busy", "left", "slow", "slow", "slow", "slow"} {
		add(d)
	}
	var mu sync.Mutex
	attempts := map[string][]int{}
	var running, most atomic.Int32
	stop := consume(t, func(ctx context.Context) {
		opts := store.JobConsumeOptions{
			ConsumeOptions: store.ConsumeOptions{Block: 50 * time.Millisecond, ReclaimIdle: time.Hour},
			Attempts:       2, Backoff: time.Millisecond, MaxBackoff: time.Millisecond, Parallel: 2,
		}
		q.Consume(ctx, "w1", opts, func(ctx context.Context, j store.Job) error {
			n := running.Add(1)
			defer running.Add(-1)
			for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
			}
			mu.Lock()
			attempts[j.Data] = append(attempts[j.Data], j.Attempt)
			tries := len(attempts[j.Data])
			mu.Unlock()
			switch j.Data {
			case "fail":
				return errors.New("Slack is down")
			case "busy":
				if tries == 1 {
					return store.ErrJobBusy
				}
			case "left":
				return store.ErrJobLeft
			case "slow":
				time.Sleep(20 * time.Millisecond)
			}
			return nil
		})
	})
	got := func(data string) []int { mu.Lock(); defer mu.Unlock(); return append([]int(nil), attempts[data]...) }
	waitUntil(t, "the failing job given up", func() bool { return len(got("fail")) == 2 })
	waitUntil(t, "the busy job looked at again", func() bool { return len(got("busy")) == 2 })
	waitUntil(t, "the slow jobs", func() bool { return len(got("slow")) == 4 })
	// Nothing more comes once the stream holds only the job left pending
	// (ReclaimIdle is an hour) and no retry is scheduled: Ack and Retry
	// delete a job from the stream.
	waitUntil(t, "every other job acknowledged", func() bool {
		n, err := e.rdb.ZCard(t.Context(), e.prefix+"jobs:retry").Result()
		return err == nil && n == 0 && e.streamLen(t, "jobs") == 1
	})
	stop()

	want := map[string][]int{"ok": {1}, "fail": {1, 2}, "busy": {1, 1}, "left": {1}, "slow": {1, 1, 1, 1}}
	for data, w := range want {
		if g := got(data); len(g) != len(w) || (len(g) > 0 && (g[0] != w[0] || g[len(g)-1] != w[len(w)-1])) {
			t.Errorf("%s: attempts %v, want %v", data, g, w)
		}
	}
	if m := most.Load(); m > 2 {
		t.Errorf("%d jobs worked on at once, want at most Parallel (2)", m)
	}
	pending, err := q.Reclaim(t.Context(), "inspector", 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(pending) != 1 || pending[0].Data != "left" {
		t.Errorf("pending after Consume: %+v, want only the job left for another consumer", pending)
	}
}

// A job whose attempt ends with Consume's context (shutdown) is neither
// acknowledged nor retried: it stays pending for another consumer.
func TestJobQueueConsumeLeavesJobAtShutdown(t *testing.T) {
	e := newEnv(t)
	s := e.store()
	q := s.JobQueue(0)
	e.alive(t, "w1")
	if _, err := q.Add(t.Context(), store.JobThreadAnswer, "", "answer-1"); err != nil {
		t.Fatal(err)
	}
	started := make(chan struct{})
	stop := consume(t, func(ctx context.Context) {
		q.Consume(ctx, "w1", store.JobConsumeOptions{ConsumeOptions: store.ConsumeOptions{Block: 50 * time.Millisecond}},
			func(ctx context.Context, j store.Job) error {
				close(started)
				<-ctx.Done()
				return ctx.Err()
			})
	})
	<-started
	stop()
	pending, err := q.Reclaim(t.Context(), "inspector", 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(pending) != 1 || pending[0].Data != "answer-1" || pending[0].Attempt != 1 {
		t.Errorf("pending after shutdown: %+v, want the job, at its first attempt", pending)
	}
}
