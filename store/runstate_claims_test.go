package store_test

import (
	"testing"

	"github.com/slackapprove/slackbot/agentrunner"
	"github.com/slackapprove/slackbot/approval"
	"github.com/slackapprove/slackbot/store"
)

// A token of a suspending run has no waiter: the process that
// records its decision claims the run directly, exactly once, while the
// job stays on the queue until the run finished.
func TestSuspendedTokenIsClaimedDirectly(t *testing.T) {
	e := newEnv(t)
	ctx := t.Context()
	s := e.store()
	a := store.NewTokens(s, store.TokensOptions{Owner: "A"})
	runTokens(t, a)
	// While A waits on a token in place, the direct claim leaves the run
	// to it.
	waited := agentrunner.NewToken()
	if err := s.Create(ctx, &approval.Request{Token: waited, RunID: "run-0", Requests: requests("c1")}); err != nil {
		t.Fatal(err)
	}
	if err := a.Watch(ctx, waited); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Decide(ctx, waited, approve("c1", "UA")); err != nil {
		t.Fatal(err)
	}
	if ok, err := s.ClaimDirect(ctx, waited, "B/direct"); ok || err != nil {
		t.Fatalf("direct claim with a live waiter: got %v, %v; want false", ok, err)
	}

	token := agentrunner.NewToken()
	if err := s.Create(ctx, &approval.Request{Token: token, RunID: "run-1", Requests: requests("c1")}); err != nil {
		t.Fatal(err)
	}
	b := e.otherProcess(t)
	bt := store.NewTokens(b, store.TokensOptions{Owner: "B"})
	runTokens(t, bt)
	q := b.ResumeQueue(store.ResumeQueueOptions{})
	if _, err := q.Read(ctx, "C", 0); err != nil { // the group exists before the job
		t.Fatal(err)
	}
	if _, err := b.Decide(ctx, token, approve("c1", "UA")); err != nil {
		t.Fatal(err)
	}
	if ok, err := b.ClaimDirect(ctx, token, "B/direct"); !ok || err != nil {
		t.Fatalf("direct claim by the decider: got %v, %v; want true", ok, err)
	}
	for _, owner := range []string{"A/direct", "A/queue", "C/queue"} {
		if ok, err := s.ClaimResume(ctx, token, owner, 0); ok || err != nil {
			t.Errorf("claim by %s after the direct claim: got %v, %v; want false", owner, ok, err)
		}
	}
	if ok, err := s.ClaimDirect(ctx, token, "A/direct"); ok || err != nil {
		t.Errorf("second direct claim: got %v, %v; want false", ok, err)
	}
	// The job stays on the queue, left to B while B lives.
	if got, err := q.Read(ctx, "C", 0); err != nil || len(got) != 0 {
		t.Errorf("queue read while B resumes: got %v, %v; want nothing", got, err)
	}
	if err := b.FinishResume(ctx, token); err != nil {
		t.Fatal(err)
	}
	if got, err := q.Reclaim(ctx, "C", 0); err != nil || len(got) != 0 {
		t.Errorf("reclaim after the run finished: got %v, %v; want nothing", got, err)
	}
}
