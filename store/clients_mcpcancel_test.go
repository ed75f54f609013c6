package store_test

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/slackapprove/slackbot/store"
)

// TestRequestIDs: a JSON-RPC id tracked in one process is cancelled from
// another; ids are per client; a cancel that came while the request was
// being created is seen when it is tracked again; untracked and expired
// entries are not cancelled, and the hash lives as long as its last entry.
func TestRequestIDs(t *testing.T) {
	e := newEnv(t)
	a, b := e.store(), e.otherProcess(t)
	ctx := t.Context()
	now := e.clock.Now()
	sorted := cmpopts.SortSlices(func(x, y string) bool { return x < y })

	tokA, tokB, tokC := "tokenAAAAAAAAAAAAAAAAAAAA", "tokenBBBBBBBBBBBBBBBBBBBB", "tokenCCCCCCCCCCCCCCCCCCCC"
	for _, tok := range []string{tokA, tokB} { // two connections of billing, both with id 9
		if c, err := a.TrackRequestID(ctx, "billing", "9", tok, now.Add(time.Minute)); err != nil || c {
			t.Fatalf("track %s: %v, %v; want not cancelled", tok, c, err)
		}
	}
	if _, err := a.TrackRequestID(ctx, "opsbot", "9", tokC, now.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}

	if got, err := b.CancelRequestID(ctx, "billing", "10"); err != nil || len(got) != 0 {
		t.Errorf("cancel of an unknown id = %v, %v; want none", got, err)
	}
	got, err := b.CancelRequestID(ctx, "billing", "9")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{tokA, tokB}, got, sorted); diff != "" {
		t.Errorf("cancelled tokens (-want +got):\n%s", diff)
	}
	// The request of tokA was being created: tracking it again with its
	// real expiry tells it a cancel came.
	if c, err := a.TrackRequestID(ctx, "billing", "9", tokA, now.Add(time.Hour)); err != nil || !c {
		t.Errorf("track after the cancel: %v, %v; want cancelled", c, err)
	}
	ttl, err := e.rdb.PTTL(ctx, store.RequestIDKey(a, "billing", "9")).Result()
	if err != nil || ttl <= 59*time.Minute || ttl > time.Hour {
		t.Errorf("TTL of the hash = %v, %v; want the last entry's expiry, an hour", ttl, err)
	}

	// Untracked: not cancelled again; another client's id is its own.
	if err := a.UntrackRequestID(ctx, "billing", "9", tokB); err != nil {
		t.Fatal(err)
	}
	got, err = b.CancelRequestID(ctx, "billing", "9")
	if err != nil || !cmp.Equal([]string{tokA}, got) {
		t.Errorf("cancel after tokB returned = %v, %v; want only tokA", got, err)
	}
	if got, err := b.CancelRequestID(ctx, "opsbot", "9"); err != nil || !cmp.Equal([]string{tokC}, got) {
		t.Errorf("opsbot's cancel = %v, %v; want only its own token", got, err)
	}

	// Expired entries are neither cancelled nor kept.
	e.clock.Advance(2 * time.Hour)
	if got, err := b.CancelRequestID(ctx, "billing", "9"); err != nil || len(got) != 0 {
		t.Errorf("cancel past the expiry = %v, %v; want none", got, err)
	}
	if n, err := e.rdb.HLen(ctx, store.RequestIDKey(a, "billing", "9")).Result(); err != nil || n != 0 {
		t.Errorf("%d entries left past the expiry (%v); want none", n, err)
	}
}
