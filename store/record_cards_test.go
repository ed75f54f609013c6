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
)

// retrySchedule returns the job retry set: member -> due (ms).
func (e *env) retrySchedule(t *testing.T) map[string]int64 {
	t.Helper()
	zs, err := e.rdb.ZRangeWithScores(t.Context(), e.prefix+"jobs:retry", 0, -1).Result()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]int64{}
	for _, z := range zs {
		out[z.Member.(string)] = int64(z.Score)
	}
	return out
}

func withJob(d approval.Decision) (approval.Decision, string) {
	d.CardJob = agentrunner.NewToken()
	return d, d.CardJob
}

// A decision that changes a call schedules, in its own script, the durable
// update of the call's card (due CardJobDelay later, one member per
// decision) and takes the card's lease for the decider when it is free;
// ReleaseCard frees the lease and drops the job in one step; a job nobody
// dropped is promoted onto the job stream when due, as a card.update of
// the token.
func TestDecideSchedulesCardJob(t *testing.T) {
	e := newEnv(t)
	s := e.store()
	ctx := t.Context()
	a := e.create(t, s, requests("c1"), 2)
	leaseKey := e.prefix + "lock:card:" + a.Token + ":c1"
	due := e.clock.Now().Add(store.CardJobDelay).UnixMilli()

	d1, job1 := withJob(approve("c1", "UA"))
	res, err := s.Decide(ctx, a.Token, d1)
	if err != nil {
		t.Fatal(err)
	}
	if !res.Changed || !res.CardLeased {
		t.Fatalf("first vote: Changed %v CardLeased %v, want both", res.Changed, res.CardLeased)
	}
	if got, _ := e.rdb.Get(ctx, leaseKey).Result(); got != "/"+job1 {
		t.Errorf("card lease holder %q, want %q", got, "/"+job1)
	}
	member1 := "1 card.update " + a.Token + " " + job1 + " c1"
	if got := e.retrySchedule(t); len(got) != 1 || got[member1] != due {
		t.Errorf("scheduled %v, want %q due at %d", got, member1, due)
	}

	// The second vote decides the call while the first decider still
	// holds the card: its job is scheduled too, the lease is not its.
	d2, job2 := withJob(approve("c1", "UB"))
	res, err = s.Decide(ctx, a.Token, d2)
	if err != nil {
		t.Fatal(err)
	}
	if !res.Changed || res.CardLeased || !res.Resolved {
		t.Fatalf("second vote: Changed %v CardLeased %v Resolved %v, want true false true", res.Changed, res.CardLeased, res.Resolved)
	}
	member2 := "1 card.update " + a.Token + " " + job2 + " c1"
	if got := e.retrySchedule(t); len(got) != 2 || got[member2] != due {
		t.Errorf("scheduled %v, want also %q", got, member2)
	}

	// A repeat and a refused decision schedule nothing.
	d3, _ := withJob(approve("c1", "UB"))
	if res, err := s.Decide(ctx, a.Token, d3); err != nil || res.Changed || res.CardLeased {
		t.Fatalf("repeat: %+v, %v", res, err)
	}
	d4, _ := withJob(deny("c1", "UC", ""))
	if _, err := s.Decide(ctx, a.Token, d4); err == nil {
		t.Fatal("a denial after the approval was recorded")
	}
	if got := e.retrySchedule(t); len(got) != 2 {
		t.Errorf("scheduled %v after a repeat and a refusal, want the 2 members", got)
	}

	if err := s.ReleaseCard(ctx, a.Token, "c1", job1, job1); err != nil {
		t.Fatal(err)
	}
	if n, _ := e.rdb.Exists(ctx, leaseKey).Result(); n != 0 {
		t.Error("card lease still held after its release")
	}
	if got := e.retrySchedule(t); len(got) != 1 || got[member2] == 0 {
		t.Errorf("scheduled %v after the first release, want only %q", got, member2)
	}

	q := s.JobQueue(0)
	if n, err := q.Promote(ctx); err != nil || n != 0 {
		t.Fatalf("promoted %d (%v) before the job was due", n, err)
	}
	e.clock.Advance(store.CardJobDelay)
	if n, err := q.Promote(ctx); err != nil || n != 1 {
		t.Fatalf("promoted %d (%v) once due, want 1", n, err)
	}
	jobs := readAll(t, q, "w1")
	if len(jobs) != 1 || jobs[0].Kind != store.JobCardUpdate || jobs[0].Token != a.Token || jobs[0].Data != job2+" c1" || jobs[0].Attempt != 1 {
		t.Fatalf("jobs %+v, want one card.update of the token with data %q", jobs, job2+" c1")
	}
}

// A decision without a card job schedules nothing and takes no lease (the
// Service's own paths that update cards themselves); a malformed job name
// is refused before anything is recorded.
func TestDecideWithoutCardJob(t *testing.T) {
	e := newEnv(t)
	s := e.store()
	a := e.create(t, s, requests("c1"), 1)
	bad := approve("c1", "UA")
	bad.CardJob = "two words"
	if _, err := s.Decide(t.Context(), a.Token, bad); !errors.Is(err, approval.ErrInvalid) {
		t.Fatalf("bad card job: %v, want ErrInvalid", err)
	}
	res, err := s.Decide(t.Context(), a.Token, approve("c1", "UA"))
	if err != nil || !res.Changed || res.CardLeased {
		t.Fatalf("decide: %+v, %v", res, err)
	}
	if got := e.retrySchedule(t); len(got) != 0 {
		t.Errorf("scheduled %v, want nothing", got)
	}
	if keys := scanKeys(t, e.rdb, e.prefix+"lock:"); len(keys) != 0 {
		t.Errorf("leases %v, want none", keys)
	}
}

// LockCard waits while another live process holds the card's lease,
// returns the record as read under the lease (with what changed while it
// waited), takes over the lease of a process whose heartbeat is gone, and
// holds nothing for a token that is gone.
func TestLockCard(t *testing.T) {
	e := newEnv(t)
	optsA := e.opts
	optsA.Owner = "procA"
	a := store.New(e.rdb, optsA)
	b := e.otherProcess(t)
	ctx := t.Context()
	req := e.create(t, a, requests("c1", "c2"), 1)
	e.alive(t, "procA")

	if _, err := a.LockCard(ctx, req.Token, "c1", "holderA"); err != nil {
		t.Fatal(err)
	}
	got := make(chan *approval.Request, 1)
	go func() {
		r, err := b.LockCard(ctx, req.Token, "c1", "holderB")
		if err != nil {
			t.Error(err)
		}
		got <- r
	}()
	select {
	case <-got:
		t.Fatal("B took a lease A holds")
	case <-time.After(100 * time.Millisecond):
	}
	if _, err := a.Decide(ctx, req.Token, approve("c1", "UA")); err != nil {
		t.Fatal(err)
	}
	if err := a.ReleaseCard(ctx, req.Token, "c1", "holderA", ""); err != nil {
		t.Fatal(err)
	}
	select {
	case r := <-got:
		if c := r.Call("c1"); c == nil || c.Status != approval.CallApproved {
			t.Errorf("B read %+v under the lease, want c1 approved", c)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("B never took the released lease")
	}

	// A's lease on another card dies with A's heartbeat.
	if _, err := a.LockCard(ctx, req.Token, "c2", "holderA2"); err != nil {
		t.Fatal(err)
	}
	if err := e.rdb.Del(ctx, e.prefix+"proc:procA").Err(); err != nil {
		t.Fatal(err)
	}
	short, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	if _, err := b.LockCard(short, req.Token, "c2", "holderB2"); err != nil {
		t.Errorf("lease of a dead process not taken over: %v", err)
	}

	if _, err := b.LockCard(ctx, agentrunner.NewToken(), "c1", "h"); !errors.Is(err, approval.ErrNotFound) {
		t.Errorf("unknown token: %v, want ErrNotFound", err)
	}
	if keys := scanKeys(t, e.rdb, e.prefix+"lock:card:"); len(keys) != 2 {
		t.Errorf("leases %v, want the two taken (none for the unknown token)", keys)
	}
}

// ScheduleCards schedules the update of every card of a token under its
// job's name (data without a call), due CardJobDelay later; ReleaseCard
// with no call drops it; a malformed name schedules nothing.
func TestScheduleCards(t *testing.T) {
	e := newEnv(t)
	s := e.store()
	ctx := t.Context()
	a := e.create(t, s, requests("c1", "c2"), 1)
	if err := s.ScheduleCards(ctx, a.Token, "bad name"); !errors.Is(err, approval.ErrInvalid) {
		t.Fatalf("bad job name: %v, want ErrInvalid", err)
	}
	if err := s.ScheduleCards(ctx, a.Token, "job1"); err != nil {
		t.Fatal(err)
	}
	if err := s.ScheduleCards(ctx, a.Token, "job2"); err != nil {
		t.Fatal(err)
	}
	due := e.clock.Now().Add(store.CardJobDelay).UnixMilli()
	m1, m2 := "1 card.update "+a.Token+" job1", "1 card.update "+a.Token+" job2"
	if got := e.retrySchedule(t); len(got) != 2 || got[m1] != due || got[m2] != due {
		t.Fatalf("scheduled %v, want %q and %q due at %d", got, m1, m2, due)
	}
	if err := s.ReleaseCard(ctx, a.Token, "", "", "job1"); err != nil {
		t.Fatal(err)
	}
	if got := e.retrySchedule(t); len(got) != 1 || got[m2] != due {
		t.Fatalf("scheduled %v after dropping job1, want only %q", got, m2)
	}
	e.clock.Advance(store.CardJobDelay)
	q := s.JobQueue(0)
	if n, err := q.Promote(ctx); err != nil || n != 1 {
		t.Fatalf("promoted %d (%v), want 1", n, err)
	}
	if jobs := readAll(t, q, "w1"); len(jobs) != 1 || jobs[0].Token != a.Token || jobs[0].Data != "job2" {
		t.Fatalf("jobs %+v, want job2's card update of the token", jobs)
	}
}

// Scheduling a card job never shortens the TTL of the job schedule, which
// holds work due later too (reminders, escalations).
func TestCardJobsKeepALongerScheduleTTL(t *testing.T) {
	e := newEnv(t)
	s := e.store()
	ctx := t.Context()
	a := e.create(t, s, requests("c1"), 1)
	key := e.prefix + "jobs:retry"
	const long = 365 * 24 * time.Hour
	if err := e.rdb.ZAdd(ctx, key, redis.Z{Score: 1, Member: "1 call.remind " + a.Token + " 1 c1"}).Err(); err != nil {
		t.Fatal(err)
	}
	if err := e.rdb.PExpire(ctx, key, long).Err(); err != nil {
		t.Fatal(err)
	}
	d, _ := withJob(approve("c1", "UA"))
	if _, err := s.Decide(ctx, a.Token, d); err != nil {
		t.Fatal(err)
	}
	if err := s.ScheduleCards(ctx, a.Token, "job1"); err != nil {
		t.Fatal(err)
	}
	if ttl, err := e.rdb.PTTL(ctx, key).Result(); err != nil || ttl < long-time.Hour {
		t.Errorf("schedule TTL %v (%v) after card jobs, want it kept near %v", ttl, err, long)
	}
}
