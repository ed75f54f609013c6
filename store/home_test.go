package store_test

import (
	"slices"
	"testing"
	"time"

	"github.com/slackapprove/slackbot/approval"
	"github.com/slackapprove/slackbot/store"
)

// Pending lists the requests still pending, soonest deadline first, up to
// its limit: not those ended or past their deadline (before the sweep).
func TestPending(t *testing.T) {
	e := newEnv(t)
	s := e.store()
	var tokens []string
	for i := range 4 {
		a := e.create(t, s, requests("a"), 1)
		tokens = append(tokens, a.Token)
		e.clock.Advance(time.Duration(i+1) * time.Minute)
	}
	if _, err := s.Decide(t.Context(), tokens[1], deny("a", "U0ALICE", "")); err != nil {
		t.Fatal(err)
	}
	got := func(limit int) []string {
		t.Helper()
		rs, err := s.Pending(t.Context(), limit)
		if err != nil {
			t.Fatalf("Pending: %v", err)
		}
		var out []string
		for _, r := range rs {
			if r.State != approval.StatePending || len(r.Calls) != 1 {
				t.Errorf("Pending returned %+v", r)
			}
			out = append(out, r.Token)
		}
		return out
	}
	if want := []string{tokens[0], tokens[2], tokens[3]}; !slices.Equal(got(10), want) {
		t.Errorf("Pending(10) = %v, want %v (the denied one left out)", got(10), want)
	}
	if l := got(2); len(l) > 2 {
		t.Errorf("Pending(2) returned %d requests", len(l))
	}
	if l := got(0); len(l) != 0 {
		t.Errorf("Pending(0) = %v", l)
	}
	e.clock.Advance(time.Hour - 5*time.Minute) // past every deadline but the last
	if want := []string{tokens[3]}; !slices.Equal(got(10), want) {
		t.Errorf("Pending after deadlines = %v, want %v", got(10), want)
	}
}

// A Home viewer counts for ttl after they opened their Home.
func TestHomeViewers(t *testing.T) {
	e := newEnv(t)
	s := e.store()
	if err := s.HomeOpened(t.Context(), "U0ALICE", time.Hour); err != nil {
		t.Fatal(err)
	}
	e.clock.Advance(30 * time.Minute)
	if err := s.HomeOpened(t.Context(), "U0BOB", time.Hour); err != nil {
		t.Fatal(err)
	}
	viewers := func() []string {
		t.Helper()
		v, err := s.HomeViewers(t.Context(), []string{"U0ALICE", "U0BOB", "U0CAROL"}, time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	if v := viewers(); !slices.Equal(v, []string{"U0ALICE", "U0BOB"}) {
		t.Errorf("viewers = %v, want Alice and Bob", v)
	}
	e.clock.Advance(31 * time.Minute)
	if v := viewers(); !slices.Equal(v, []string{"U0BOB"}) {
		t.Errorf("viewers after Alice's hour = %v, want Bob", v)
	}
	if err := s.HomeOpened(t.Context(), "", time.Hour); err == nil {
		t.Error("HomeOpened with no user: want an error")
	}
}

// A Home refresh scheduled several times before it is due is one job,
// due at the first time asked, carrying the user; once promoted, the next
// change schedules a new one.
func TestScheduleHomeCoalesces(t *testing.T) {
	e := newEnv(t)
	s := e.store()
	q := s.JobQueue(0)
	for range 3 {
		if err := q.ScheduleHome(t.Context(), "U0ALICE", 2*time.Second); err != nil {
			t.Fatal(err)
		}
		e.clock.Advance(500 * time.Millisecond)
	}
	if err := q.ScheduleHome(t.Context(), "U0BOB", 2*time.Second); err != nil {
		t.Fatal(err)
	}
	if n, _ := q.Promote(t.Context()); n != 0 {
		t.Fatalf("promoted %d before they were due", n)
	}
	e.clock.Advance(600 * time.Millisecond) // Alice's is due, Bob's not
	if n, err := q.Promote(t.Context()); n != 1 || err != nil {
		t.Fatalf("promoted %d (%v), want Alice's one job", n, err)
	}
	jobs := readAll(t, q, "w")
	if len(jobs) != 1 || jobs[0].Kind != store.JobHomeRefresh || jobs[0].Data != "U0ALICE" || jobs[0].Token != "" {
		t.Fatalf("jobs = %+v, want one home.refresh for U0ALICE", jobs)
	}
	if err := q.ScheduleHome(t.Context(), "U0ALICE", 2*time.Second); err != nil {
		t.Fatal(err)
	}
	e.clock.Advance(2 * time.Second)
	if n, _ := q.Promote(t.Context()); n != 2 {
		t.Errorf("promoted %d, want Bob's and Alice's next one", n)
	}
	if err := q.ScheduleHome(t.Context(), "", time.Second); err == nil {
		t.Error("ScheduleHome with no user: want an error")
	}
}
