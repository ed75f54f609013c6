package store_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/slackapprove/slackbot/store"
)

// Lock excludes: 20 goroutines on two processes incrementing a counter
// under the lock never overlap, and the lease expires if not released.
func TestLock(t *testing.T) {
	e := newEnv(t)
	stores := []interface {
		Lock(context.Context, string, time.Duration) (func(), error)
	}{e.store(), e.otherProcess(t)}
	var mu sync.Mutex
	inside, maxInside := 0, 0
	var wg sync.WaitGroup
	for i := range 20 {
		wg.Go(func() {
			release, err := stores[i%2].Lock(t.Context(), "card:x", 5*time.Second)
			if err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			inside++
			maxInside = max(maxInside, inside)
			mu.Unlock()
			time.Sleep(time.Millisecond)
			mu.Lock()
			inside--
			mu.Unlock()
			release()
		})
	}
	wg.Wait()
	if maxInside != 1 {
		t.Errorf("%d holders at once, want 1", maxInside)
	}
	// A holder that never releases blocks others only for the lease.
	if _, err := stores[0].Lock(t.Context(), "card:y", 50*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	if _, err := stores[1].Lock(ctx, "card:y", time.Second); err != nil {
		t.Errorf("lease did not expire: %v", err)
	}
}

// A lease of a process with a heartbeat dies with it: while A lives B
// waits for A's lease; once A's heartbeat is gone B takes it at once,
// long before its ttl.
func TestLockDiesWithOwner(t *testing.T) {
	e := newEnv(t)
	optsA, optsB := e.opts, e.opts
	optsA.Owner, optsB.Owner = "A", "B"
	a, b := store.New(e.rdb, optsA), store.New(e.rdb, optsB)
	e.alive(t, "A")
	e.alive(t, "B")
	if _, err := a.Lock(t.Context(), "card:z", time.Hour); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
	if _, err := b.Lock(ctx, "card:z", time.Hour); err == nil {
		t.Fatal("B took the lease of a live A")
	}
	cancel()
	e.dies(t, "A")
	ctx, cancel = context.WithTimeout(t.Context(), 2*time.Second)
	defer cancel()
	release, err := b.Lock(ctx, "card:z", time.Hour)
	if err != nil {
		t.Fatalf("B after A died: %v, want the lease", err)
	}
	release()
}
