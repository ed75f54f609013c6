package store_test

import (
	"strconv"
	"testing"
	"time"

	"github.com/slackapprove/slackbot/store"
)

// TestAttackCancelOvertakesTracking: a cancel that finds no call of its
// id (the call reached its replica but is not tracked yet) still cancels
// the call of that id tracked within CancelMarkTTL, and only of that id
// and client; past CancelMarkTTL it is forgotten; a client remembers at
// most MaxCancelMarks such cancels, however many ids it names.
func TestAttackCancelOvertakesTracking(t *testing.T) {
	e := newEnv(t)
	a, b := e.store(), e.otherProcess(t)
	ctx := t.Context()
	now := e.clock.Now()
	tokA, tokB, tokC, tokD := "tokenAAAAAAAAAAAAAAAAAAAA", "tokenBBBBBBBBBBBBBBBBBBBB", "tokenCCCCCCCCCCCCCCCCCCCC", "tokenDDDDDDDDDDDDDDDDDDDD"

	if got, err := b.CancelRequestID(ctx, "billing", "7"); err != nil || len(got) != 0 {
		t.Fatalf("cancel of an id nobody waits on yet = %v, %v; want none", got, err)
	}
	if c, err := a.TrackRequestID(ctx, "billing", "7", tokA, now.Add(time.Minute)); err != nil || !c {
		t.Errorf("first track of the cancelled id: %v, %v; want cancelled", c, err)
	}
	if c, err := a.TrackRequestID(ctx, "billing", "8", tokB, now.Add(time.Minute)); err != nil || c {
		t.Errorf("track of another id: %v, %v; want not cancelled", c, err)
	}
	if c, err := a.TrackRequestID(ctx, "opsbot", "7", tokC, now.Add(time.Minute)); err != nil || c {
		t.Errorf("track of another client's id 7: %v, %v; want not cancelled", c, err)
	}
	e.clock.Advance(store.CancelMarkTTL + time.Second)
	if c, err := a.TrackRequestID(ctx, "billing", "7", tokD, e.clock.Now().Add(time.Minute)); err != nil || c {
		t.Errorf("track of id 7 past CancelMarkTTL: %v, %v; want not cancelled", c, err)
	}

	for i := range store.MaxCancelMarks + 50 {
		if _, err := b.CancelRequestID(ctx, "flood", strconv.Itoa(1000+i)); err != nil {
			t.Fatal(err)
		}
	}
	if n, err := e.rdb.HLen(ctx, store.CancelMarksKey(a, "flood")).Result(); err != nil || n > store.MaxCancelMarks {
		t.Errorf("%d cancels remembered (%v); want at most %d", n, err, store.MaxCancelMarks)
	}
	// The newest is remembered.
	last := strconv.Itoa(1000 + store.MaxCancelMarks + 49)
	if c, err := a.TrackRequestID(ctx, "flood", last, tokA, e.clock.Now().Add(time.Minute)); err != nil || !c {
		t.Errorf("track of the newest cancelled id: %v, %v; want cancelled", c, err)
	}
}
