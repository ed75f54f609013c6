package store_test

import (
	"context"
	"sync"
	"testing"
	"time"
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
