package store_test

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/slackapprove/slackbot/approval"
	"github.com/slackapprove/slackbot/store"
)

// session is a deferred Claude Code session of the request token's call.
func session(client, resumer, token, call string) *approval.AgentSession {
	return &approval.AgentSession{Client: client, Resumer: resumer, Agent: "claude-code", Token: token, CallID: call,
		SessionID: "0b7feff6-468a-461d-8737-4cee10039b86", Cwd: "/home/dev/shop", Args: []string{"--model", "opus"}}
}

// TestSessionRegistry: a registered session lives as long as its
// request's record, is found again when registered twice, is listed and
// read only by the client that registered it, and is refused once the
// request's record is gone.
func TestSessionRegistry(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	s := e.store()
	req := e.create(t, s, requests("toolu_1"), 1)

	first, err := s.RegisterSession(t.Context(), session("ci", "runner-1", req.Token, "toolu_1"))
	if err != nil {
		t.Fatal(err)
	}
	if first.State != approval.SessionWaiting || first.ID == "" || first.Attempts != 0 {
		t.Errorf("registered %+v, want a waiting session with an id", first)
	}
	again, err := s.RegisterSession(t.Context(), session("ci", "runner-1", req.Token, "toolu_1"))
	if err != nil || again.ID != first.ID {
		t.Errorf("registered again: %+v, %v; want the same session %s", again, err, first.ID)
	}
	recTTL := e.rdb.PTTL(t.Context(), e.prefix+"a:"+req.Token).Val()
	sessTTL := e.rdb.PTTL(t.Context(), e.prefix+"asess:{"+firstGroup(first.ID)+"}:"+first.ID).Val()
	if sessTTL <= 0 || sessTTL > recTTL {
		t.Errorf("the session lives %s, its request's record %s: want at most as long", sessTTL, recTTL)
	}

	got, err := s.Sessions(t.Context(), "ci", "runner-1")
	if err != nil || len(got) != 1 || got[0].ID != first.ID {
		t.Fatalf("listed %v, %v; want the one session", got, err)
	}
	if diff := cmp.Diff([]string{"--model", "opus"}, got[0].Args); diff != "" {
		t.Errorf("args (-want +got):\n%s", diff)
	}
	for _, tt := range []struct{ client, resumer string }{{"other", "runner-1"}, {"ci", "runner-2"}} {
		if got, err := s.Sessions(t.Context(), tt.client, tt.resumer); err != nil || len(got) != 0 {
			t.Errorf("%s's resumer %s lists %v, %v; want nothing", tt.client, tt.resumer, got, err)
		}
	}
	if _, err := s.Session(t.Context(), "other", first.ID); approval.ErrorCode(err) != approval.ENOTFOUND {
		t.Errorf("another client reads the session: %v; want ENOTFOUND", err)
	}
	if _, err := s.ClaimSession(t.Context(), "other", "runner-1", first.ID, time.Minute); approval.ErrorCode(err) != approval.ENOTFOUND {
		t.Errorf("another client claims the session: %v; want ENOTFOUND", err)
	}
	if _, err := s.RegisterSession(t.Context(), session("ci", "runner-1", "no-such-token", "toolu_1")); approval.ErrorCode(err) != approval.ENOTFOUND {
		t.Errorf("a session of an unknown request: %v; want ENOTFOUND", err)
	}
}

func firstGroup(id string) string {
	for i := range id {
		if id[i] == '.' {
			return id[:i]
		}
	}
	return id
}

// TestSessionClaimRace: two resumers (two processes) claim one session at
// once; exactly one wins, the other gets ECONFLICT, and after the winner
// finishes nobody can claim it again.
func TestSessionClaimRace(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	s := e.store()
	req := e.create(t, s, requests("toolu_1"), 1)
	sess, err := s.RegisterSession(t.Context(), session("ci", "runner-1", req.Token, "toolu_1"))
	if err != nil {
		t.Fatal(err)
	}
	stores := []*store.Store{s, e.otherProcess(t)}
	errs := make([]error, len(stores))
	var wg sync.WaitGroup
	for i, st := range stores {
		wg.Go(func() { _, errs[i] = st.ClaimSession(t.Context(), "ci", "runner-1", sess.ID, time.Minute) })
	}
	wg.Wait()
	won := 0
	for _, err := range errs {
		switch approval.ErrorCode(err) {
		case "":
			won++
		case approval.ECONFLICT:
		default:
			t.Errorf("claim: %v", err)
		}
	}
	if won != 1 {
		t.Fatalf("%d claims won (%v), want exactly one", won, errs)
	}
	done, err := s.FinishSession(t.Context(), "ci", sess.ID, 1, "resumed")
	if err != nil || done.State != approval.SessionDone || done.Outcome != "resumed" {
		t.Fatalf("finish: %+v, %v", done, err)
	}
	if _, err := s.ClaimSession(t.Context(), "ci", "runner-1", sess.ID, time.Minute); approval.ErrorCode(err) != approval.ECONFLICT {
		t.Errorf("claim of a session resumed already: %v; want ECONFLICT", err)
	}
}

// TestSessionLease: a resumer that crashed after its claim never
// finishes; once its lease ends another claim takes the session over
// (and the stale claim can no longer finish it), and past
// MaxSessionAttempts the session is marked failed for the resumer to
// report instead of being retried for ever.
func TestSessionLease(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	s := e.store()
	req := e.create(t, s, requests("toolu_1"), 1)
	sess, err := s.RegisterSession(t.Context(), session("ci", "runner-1", req.Token, "toolu_1"))
	if err != nil {
		t.Fatal(err)
	}
	for attempt := 1; attempt <= approval.MaxSessionAttempts; attempt++ {
		got, err := s.ClaimSession(t.Context(), "ci", "runner-1", sess.ID, time.Minute)
		if err != nil || got.State != approval.SessionClaimed || got.Attempts != attempt {
			t.Fatalf("claim %d: %+v, %v", attempt, got, err)
		}
		if _, err := s.ClaimSession(t.Context(), "ci", "runner-1", sess.ID, time.Minute); approval.ErrorCode(err) != approval.ECONFLICT {
			t.Fatalf("claim under a running lease: %v; want ECONFLICT", err)
		}
		e.clock.Advance(time.Minute)
	}
	if _, err := s.FinishSession(t.Context(), "ci", sess.ID, 1, "resumed"); approval.ErrorCode(err) != approval.ECONFLICT {
		t.Errorf("finish under a stale claim: %v; want ECONFLICT", err)
	}
	got, err := s.ClaimSession(t.Context(), "ci", "runner-1", sess.ID, time.Minute)
	if err != nil || got.State != approval.SessionFailed {
		t.Fatalf("claim past %d attempts: %+v, %v; want it marked failed", approval.MaxSessionAttempts, got, err)
	}
	// A failed session may be registered afresh (the agent deferred again).
	again, err := s.RegisterSession(t.Context(), session("ci", "runner-1", req.Token, "toolu_1"))
	if err != nil || again.State != approval.SessionWaiting || again.Attempts != 0 {
		t.Errorf("registered after failing: %+v, %v; want waiting again", again, err)
	}
}

// TestSessionsBounded: one client's resumer holds at most
// MaxSessionsPerResumer sessions; the next is refused with ERATELIMITED.
func TestSessionsBounded(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	s := e.store()
	req := e.create(t, s, requests("toolu_1"), 1)
	for i := range store.MaxSessionsPerResumer {
		if _, err := s.RegisterSession(t.Context(), session("ci", "runner-1", req.Token, fmt.Sprint("toolu_", i))); err != nil {
			t.Fatalf("session %d: %v", i, err)
		}
	}
	_, err := s.RegisterSession(t.Context(), session("ci", "runner-1", req.Token, "toolu_one_more"))
	if approval.ErrorCode(err) != approval.ERATELIMITED {
		t.Errorf("session %d: %v; want ERATELIMITED", store.MaxSessionsPerResumer+1, err)
	}
	if _, err := s.RegisterSession(t.Context(), session("ci", "runner-2", req.Token, "toolu_one_more")); err != nil {
		t.Errorf("another resumer's session: %v; want it registered", err)
	}
}
