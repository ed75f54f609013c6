package store_test

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/slackapprove/slackbot/store"
)

// A card update asks who of a call's people opened their Home lately;
// each process answers from its copy of the viewers, read from Redis at
// most once a second: its own Home opens show at once, another process's
// once the copy is renewed; a set too large to copy is asked directly.
func TestHomeViewersCopy(t *testing.T) {
	e := newEnv(t)
	a, b := e.store(), e.otherProcess(t)
	users := []string{"U0ALICE", "U0BOB"}
	viewers := func(s *store.Store) []string {
		t.Helper()
		v, err := s.HomeViewers(t.Context(), users, time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	if v := viewers(b); len(v) != 0 {
		t.Fatalf("viewers before anyone opened a Home: %v", v)
	}
	if err := a.HomeOpened(t.Context(), "U0ALICE", time.Hour); err != nil {
		t.Fatal(err)
	}
	viewers(a) // a's copy is read now...
	if err := a.HomeOpened(t.Context(), "U0BOB", time.Hour); err != nil {
		t.Fatal(err)
	}
	if v := viewers(a); !slices.Equal(v, users) {
		t.Errorf("the process that saw the Homes opened: %v, want both at once", v)
	}
	if v := viewers(b); len(v) != 0 {
		t.Errorf("another process's fresh copy: %v, want still none (it is under a second old)", v)
	}
	store.ExpireHomeCache(b)
	if v := viewers(b); !slices.Equal(v, users) {
		t.Errorf("another process once its copy is renewed: %v, want both", v)
	}

	// More viewers than a copy holds: each question goes to Redis.
	now := float64(e.clock.Now().UnixMilli())
	zs := make([]redis.Z, 5001)
	for i := range zs {
		zs[i] = redis.Z{Score: now, Member: fmt.Sprintf("U%05d", i)}
	}
	if err := e.rdb.ZAdd(t.Context(), e.prefix+"homes", zs...).Err(); err != nil {
		t.Fatal(err)
	}
	store.ExpireHomeCache(b)
	viewers(b)
	if err := e.rdb.ZAdd(t.Context(), e.prefix+"homes", redis.Z{Score: now, Member: "U0CAROL"}).Err(); err != nil {
		t.Fatal(err)
	}
	users = []string{"U0CAROL"}
	if v := viewers(b); !slices.Equal(v, users) {
		t.Errorf("with %d viewers, a Home opened elsewhere: %v, want it seen at once", len(zs), v)
	}
}
