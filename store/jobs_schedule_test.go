package store_test

import (
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/slackapprove/slackbot/agentrunner"
	"github.com/slackapprove/slackbot/approval"
	"github.com/slackapprove/slackbot/store"
)

// Scheduled work waits in the schedule until it is due by the store's
// clock, then becomes one job each, decoded back into the work; work
// scheduled twice (two replicas posting, a retry) is one job.
func TestScheduleReminders(t *testing.T) {
	e := newEnv(t)
	s := e.store()
	q := s.JobQueue(0)
	token := agentrunner.NewToken()
	now := e.clock.Now()
	work := []approval.Scheduled{
		{Kind: approval.Remind, CallID: "call 1", N: 1, At: now.Add(10 * time.Minute)},
		{Kind: approval.Remind, CallID: "call 1", N: 2, At: now.Add(20 * time.Minute)},
		{Kind: approval.Escalate, CallID: "call 1", At: now.Add(15 * time.Minute)},
	}
	for range 2 {
		if err := q.Schedule(t.Context(), token, work...); err != nil {
			t.Fatal(err)
		}
	}
	ttl, err := e.rdb.PTTL(t.Context(), e.prefix+"jobs:retry").Result()
	if err != nil || ttl < 20*time.Minute {
		t.Errorf("the schedule expires in %v (%v), want at least until its last job is due", ttl, err)
	}

	promoteAndRead := func() []approval.Scheduled {
		t.Helper()
		if _, err := q.Promote(t.Context()); err != nil {
			t.Fatal(err)
		}
		var got []approval.Scheduled
		for _, j := range readAll(t, q, "w") {
			w, ok := store.ScheduledJob(j)
			if !ok || j.Token != token {
				t.Fatalf("job %+v does not decode", j)
			}
			got = append(got, w)
			if err := q.Ack(t.Context(), j.ID); err != nil {
				t.Fatal(err)
			}
		}
		return got
	}
	if got := promoteAndRead(); len(got) != 0 {
		t.Fatalf("jobs before they are due: %+v", got)
	}
	e.clock.Advance(16 * time.Minute)
	want := []approval.Scheduled{{Kind: approval.Remind, CallID: "call 1", N: 1}, {Kind: approval.Escalate, CallID: "call 1"}}
	if diff := cmp.Diff(want, promoteAndRead()); diff != "" {
		t.Errorf("due after 16 minutes (-want +got):\n%s", diff)
	}
	e.clock.Advance(10 * time.Minute)
	if diff := cmp.Diff([]approval.Scheduled{{Kind: approval.Remind, CallID: "call 1", N: 2}}, promoteAndRead()); diff != "" {
		t.Errorf("due after 26 minutes (-want +got):\n%s", diff)
	}
	if got := promoteAndRead(); len(got) != 0 {
		t.Errorf("jobs done twice: %+v", got)
	}
}

func TestScheduleRefusesBadWork(t *testing.T) {
	e := newEnv(t)
	q := e.store().JobQueue(0)
	at := e.clock.Now()
	for _, tt := range []struct {
		token string
		w     approval.Scheduled
	}{
		{"not a token", approval.Scheduled{Kind: approval.Remind, CallID: "c", N: 1, At: at}},
		{agentrunner.NewToken(), approval.Scheduled{Kind: "page", CallID: "c", At: at}},
		{agentrunner.NewToken(), approval.Scheduled{Kind: approval.Remind, At: at}},
	} {
		if err := q.Schedule(t.Context(), tt.token, tt.w); !errors.Is(err, approval.ErrInvalid) {
			t.Errorf("Schedule(%q, %+v) = %v, want ErrInvalid", tt.token, tt.w, err)
		}
	}
	if n, _ := e.rdb.ZCard(t.Context(), e.prefix+"jobs:retry").Result(); n != 0 {
		t.Errorf("refused work left %d jobs", n)
	}
	for _, j := range []store.Job{
		{Kind: store.JobCardUpdate, Data: "1 c"},
		{Kind: store.JobRemind, Data: "c"},
		{Kind: store.JobRemind, Data: "x c"},
		{Kind: store.JobRemind, Data: "1 "},
		{Kind: store.JobEscalate, Data: "-1 c"},
	} {
		if w, ok := store.ScheduledJob(j); ok {
			t.Errorf("ScheduledJob(%+v) = %+v, want not ok", j, w)
		}
	}
}

// A job's retry must not shorten the schedule's life below work scheduled
// further out than the store's Retention (a route whose escalation comes
// after days): the schedule would expire on a quiet Redis with the
// escalation in it. Call ids with spaces and newlines come back whole.
func TestScheduleOutlivesRetries(t *testing.T) {
	e := newEnv(t)
	e.opts.Retention = time.Hour
	s := e.store()
	q := s.JobQueue(0)
	token := agentrunner.NewToken()
	id := "call 1\nx y"
	due := e.clock.Now().Add(48 * time.Hour)
	if err := q.Schedule(t.Context(), token, approval.Scheduled{Kind: approval.Escalate, CallID: id, At: due}); err != nil {
		t.Fatal(err)
	}
	if _, err := q.Add(t.Context(), store.JobCardUpdate, token, "c"); err != nil {
		t.Fatal(err)
	}
	jobs := readAll(t, q, "w")
	if len(jobs) != 1 {
		t.Fatalf("jobs: %+v", jobs)
	}
	if err := q.Retry(t.Context(), jobs[0], time.Minute); err != nil {
		t.Fatal(err)
	}
	if ttl, err := e.rdb.PTTL(t.Context(), e.prefix+"jobs:retry").Result(); err != nil || ttl < 48*time.Hour {
		t.Errorf("after a retry the schedule expires in %v (%v), before its escalation is due in 48h", ttl, err)
	}
	e.clock.Advance(48 * time.Hour)
	if _, err := q.Promote(t.Context()); err != nil {
		t.Fatal(err)
	}
	var got []approval.Scheduled
	for _, j := range readAll(t, q, "w") {
		if w, ok := store.ScheduledJob(j); ok {
			got = append(got, w)
		}
	}
	if diff := cmp.Diff([]approval.Scheduled{{Kind: approval.Escalate, CallID: id}}, got); diff != "" {
		t.Errorf("due work (-want +got):\n%s", diff)
	}
}
