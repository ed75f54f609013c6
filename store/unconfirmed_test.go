package store_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/slackapprove/slackbot/agentrunner"
	"github.com/slackapprove/slackbot/approval"
	"github.com/slackapprove/slackbot/store"
)

// effects counts what a token's end set off in Redis: resume jobs,
// callback deliveries, scheduled card updates and "decided" audit events.
type effects struct{ resumes, callbacks, cardJobs, decided int }

func effectsOf(t *testing.T, rdb redis.UniversalClient, prefix, token string) effects {
	t.Helper()
	ctx := t.Context()
	var e effects
	count := func(stream string, match func(map[string]any) bool) int {
		msgs, err := rdb.XRange(ctx, prefix+stream, "-", "+").Result()
		if err != nil {
			t.Fatalf("read %s: %v", stream, err)
		}
		n := 0
		for _, m := range msgs {
			if m.Values["token"] == token && match(m.Values) {
				n++
			}
		}
		return n
	}
	all := func(map[string]any) bool { return true }
	e.resumes = count("resume", all)
	e.callbacks = count("callbacks", all)
	e.decided = count("audit", func(v map[string]any) bool { return v["type"] == "decided" })
	jobs, err := rdb.ZRange(ctx, prefix+"jobs:retry", 0, -1).Result()
	if err != nil {
		t.Fatalf("read the job schedule: %v", err)
	}
	for _, j := range jobs {
		if strings.Contains(j, " "+token+" ") {
			e.cardJobs++
		}
	}
	return e
}

// stillWaiting fails t unless a long poll on token (Tokens.Await) is
// still waiting when ctx's short deadline ends it: the request has not
// ended for anyone watching it.
func stillWaiting(t *testing.T, ev *store.Tokens, token string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
	defer cancel()
	if a, err := ev.Await(ctx, token); !errors.Is(err, context.DeadlineExceeded) {
		state := approval.State("")
		if a != nil {
			state = a.State
		}
		t.Errorf("a long poll on the request returned %s, %v; want it still waiting", state, err)
	}
}

// confirmAll runs the confirmer until it applied n changes.
func confirmAll(t *testing.T, s *store.Store, n int) []approval.Confirmed {
	t.Helper()
	var got []approval.Confirmed
	waitUntil(t, "the confirmer to apply the unconfirmed change", func() bool {
		c, err := s.Confirm(t.Context())
		if err != nil {
			t.Fatalf("confirm: %v", err)
		}
		got = append(got, c...)
		return len(got) >= n
	})
	return got
}

// With REDIS_WAIT_REPLICAS=1 and the replica stopped, a click is told it
// is not confirmed, and nothing acts on it: the request reads pending,
// its long poll waits, no run is queued for resumption, no callback and
// no card update are scheduled, nothing is audited as decided. The same
// click again is still unconfirmed; another approver is told a decision
// is being recorded. Once the replica is back the confirmer applies the
// click, exactly once, and everything follows it.
func TestUnconfirmedDecisionActsOnNothing(t *testing.T) {
	e := newConfirmEnv(t)
	ctx := t.Context()
	ev := store.NewTokens(e.s, store.TokensOptions{Owner: "A", RecheckEvery: time.Hour})
	runTokens(t, ev)
	a := &approval.Request{Token: agentrunner.NewToken(), RunID: "run-1", Requests: requests("c1"),
		ExpiresAt: e.clock.Now().Add(time.Hour), CallbackURL: "https://hooks.example.com/done"}
	if err := e.s.Create(ctx, a); err != nil {
		t.Fatal(err)
	}
	rdb := e.primary.Client(t)

	e.replica.Pause(t)
	defer e.replica.Resume(t)
	d := approve("c1", "UA")
	d.CardJob = "job-1"
	res, err := e.s.Decide(ctx, a.Token, d)
	if approval.ErrorCode(err) != approval.EUNCONFIRMED {
		t.Fatalf("decide, replica stopped: %v, want EUNCONFIRMED", err)
	}
	if res != nil && (res.Changed || res.Resolved || res.CardLeased) {
		t.Errorf("an unconfirmed decision reads changed %v, resolved %v, leased %v; want none", res.Changed, res.Resolved, res.CardLeased)
	}
	got, err := e.s.Get(ctx, a.Token)
	if err != nil {
		t.Fatal(err)
	}
	if got.State != approval.StatePending || got.Call("c1").Status != approval.CallPending {
		t.Errorf("after an unconfirmed click the request reads %s, c1 %s; want pending", got.State, got.Call("c1").Status)
	}
	stillWaiting(t, ev, a.Token)
	if fx := effectsOf(t, rdb, "w:", a.Token); fx != (effects{}) {
		t.Errorf("an unconfirmed decision set off %+v; want nothing", fx)
	}

	// The same click again: still unconfirmed, still nothing done.
	if _, err := e.s.Decide(ctx, a.Token, d); approval.ErrorCode(err) != approval.EUNCONFIRMED {
		t.Errorf("the same click again, replica stopped: %v, want EUNCONFIRMED", err)
	}
	// Anyone else: a decision is being recorded, nothing changes.
	if _, err := e.s.Decide(ctx, a.Token, deny("c1", "UB", "no")); approval.ErrorCode(err) != approval.ERECORDING {
		t.Errorf("another approver's click: %v, want ERECORDING", err)
	}
	res2 := agentrunner.NewDeferredToolResults()
	res2.Approvals["c1"] = agentrunner.ApprovalResult{Approved: false}
	if _, err := e.s.Answer(ctx, a.Token, "api:billing", res2); approval.ErrorCode(err) != approval.ERECORDING {
		t.Errorf("an API answer meanwhile: %v, want ERECORDING", err)
	}
	if _, err := e.s.Cancel(ctx, a.Token, "api:billing"); approval.ErrorCode(err) != approval.ERECORDING {
		t.Errorf("a cancellation meanwhile: %v, want ERECORDING", err)
	}
	// Its deadline is not the sweeper's to take while it waits to be confirmed
	// unless it passed: it has not.
	if expired, err := e.s.Sweep(ctx); err != nil || len(expired) != 0 {
		t.Errorf("sweep: %d expired, %v", len(expired), err)
	}
	if fx := effectsOf(t, rdb, "w:", a.Token); fx != (effects{}) {
		t.Errorf("after the refused clicks: %+v; want nothing", fx)
	}

	e.replica.Resume(t)
	done := confirmAll(t, e.s, 1)
	if len(done) != 1 {
		t.Fatalf("the confirmer applied %d changes, want 1", len(done))
	}
	c := done[0]
	if c.Decision.CallID != "c1" || c.Decision.By != "UA" || c.Decision.Action != approval.ActionApprove || c.Decision.CardJob == "" {
		t.Errorf("confirmed decision %+v; want UA's approval of c1 with a card job", c.Decision)
	}
	if !c.Decided.Changed || !c.Decided.Resolved || !c.Decided.CardLeased || c.Decided.Call.Status != approval.CallApproved {
		t.Errorf("confirmed: changed %v, resolved %v, leased %v, c1 %s; want the approval that resolved the request, with the card's lease",
			c.Decided.Changed, c.Decided.Resolved, c.Decided.CardLeased, c.Decided.Call.Status)
	}
	if err := e.s.ReleaseCard(ctx, a.Token, "c1", c.Decision.CardJob, ""); err != nil {
		t.Fatal(err)
	}
	ended, err := ev.Await(ctx, a.Token)
	if err != nil || ended.State != approval.StateResolved || ended.Call("c1").DecidedBy != "UA" {
		t.Fatalf("the long poll after the confirmation: %v; want resolved, approved by UA", err)
	}
	want := effects{resumes: 1, callbacks: 1, cardJobs: 1, decided: 1}
	if fx := effectsOf(t, rdb, "w:", a.Token); fx != want {
		t.Errorf("after the confirmation: %+v, want %+v", fx, want)
	}
	if more, err := e.s.Confirm(ctx); err != nil || len(more) != 0 {
		t.Errorf("confirming again: %d changes, %v; want none", len(more), err)
	}
	again, err := e.s.Decide(ctx, a.Token, approve("c1", "UA"))
	if err != nil || again.Changed || again.Call.Status != approval.CallApproved {
		t.Errorf("the same click after the confirmation: %v; want the recorded approval, unchanged", err)
	}
	if fx := effectsOf(t, rdb, "w:", a.Token); fx != want {
		t.Errorf("after a repeated click: %+v, want still %+v", fx, want)
	}
}

// The clicker who repeats an unconfirmed click once the replica is back
// applies it themselves, as if the first had been confirmed; the
// confirmer then finds nothing left. An API answer and a cancellation
// are held and applied the same way.
func TestUnconfirmedChangesRepeated(t *testing.T) {
	e := newConfirmEnv(t)
	ctx := t.Context()
	clicked, answered, cancelled := e.create(t, "c1"), e.create(t, "c1"), e.create(t, "c1")
	results := agentrunner.NewDeferredToolResults()
	results.Approvals["c1"] = agentrunner.ApprovalResult{Approved: true}

	e.replica.Pause(t)
	defer e.replica.Resume(t)
	for what, err := range map[string]error{
		"decide": func() error { _, err := e.s.Decide(ctx, clicked.Token, approve("c1", "UA")); return err }(),
		"answer": func() error { _, err := e.s.Answer(ctx, answered.Token, "api:c", results); return err }(),
		"cancel": func() error { _, err := e.s.Cancel(ctx, cancelled.Token, "api:c"); return err }(),
	} {
		if approval.ErrorCode(err) != approval.EUNCONFIRMED {
			t.Errorf("%s, replica stopped: %v, want EUNCONFIRMED", what, err)
		}
	}
	for _, tok := range []string{clicked.Token, answered.Token, cancelled.Token} {
		if got, err := e.s.Get(ctx, tok); err != nil || got.State != approval.StatePending {
			t.Errorf("an unconfirmed change: the request reads %v, %v; want pending", got.State, err)
		}
	}
	e.replica.Resume(t)

	res, err := e.s.Decide(ctx, clicked.Token, approve("c1", "UA"))
	if err != nil || !res.Changed || !res.Resolved || res.Call.Status != approval.CallApproved {
		t.Fatalf("the same click, replica back: %v; want it applied now", err)
	}
	a, err := e.s.Answer(ctx, answered.Token, "api:c", results)
	if err != nil || a.State != approval.StateResolved {
		t.Fatalf("the same answer, replica back: %v; want it applied now", err)
	}
	a, err = e.s.Cancel(ctx, cancelled.Token, "api:c")
	if err != nil || a.State != approval.StateCancelled {
		t.Fatalf("the same cancellation, replica back: %v; want it applied now", err)
	}
	if more, err := e.s.Confirm(ctx); err != nil || len(more) != 0 {
		t.Errorf("the confirmer after the repeats: %d changes, %v; want none", len(more), err)
	}
	// Applied once each: one audit event of the decision, one resume job.
	for _, tok := range []string{clicked.Token, answered.Token, cancelled.Token} {
		fx := effectsOf(t, e.primary.Client(t), "w:", tok)
		if fx.resumes != 1 {
			t.Errorf("%s: %d resume jobs, want 1", tok[:6], fx.resumes)
		}
	}
	if fx := effectsOf(t, e.primary.Client(t), "w:", clicked.Token); fx.decided != 1 {
		t.Errorf("the repeated click: %d decided events, want 1", fx.decided)
	}
}

// An unconfirmed decision whose request reaches its deadline first is
// void: the sweeper expires the request and drops it, and the confirmer
// finds nothing to apply.
func TestUnconfirmedDecisionAtTheDeadline(t *testing.T) {
	e := newConfirmEnv(t)
	ctx := t.Context()
	a := e.create(t, "c1")
	e.replica.Pause(t)
	defer e.replica.Resume(t)
	if _, err := e.s.Decide(ctx, a.Token, approve("c1", "UA")); approval.ErrorCode(err) != approval.EUNCONFIRMED {
		t.Fatalf("decide, replica stopped: %v", err)
	}
	e.clock.Advance(2 * time.Hour)
	expired, err := e.s.Sweep(ctx)
	if err != nil || len(expired) != 1 || expired[0].Call("c1").Status == approval.CallApproved {
		t.Fatalf("sweep past the deadline: %d expired, %v; want the request expired, undecided", len(expired), err)
	}
	e.replica.Resume(t)
	if done, err := e.s.Confirm(ctx); err != nil || len(done) != 0 {
		t.Errorf("the confirmer after the expiry: %d changes, %v; want none", len(done), err)
	}
	if _, err := e.s.Decide(ctx, a.Token, approve("c1", "UA")); !errors.Is(err, approval.ErrExpired) {
		t.Errorf("the same click after the expiry: %v, want ErrExpired", err)
	}
}

// A failover to a replica that never received an unconfirmed decision
// loses it: the request is pending again on the new primary (and was
// never anything else for anyone watching), the confirmer finds nothing,
// and a click decides it.
func TestUnconfirmedDecisionLostInFailover(t *testing.T) {
	f := newFailoverEnv(t, "A")
	f.opts.WaitReplicas = 1
	f.opts.WaitTimeout = 300 * time.Millisecond
	s := store.New(f.rdb, f.opts)
	ctx := t.Context()
	a := &approval.Request{Token: agentrunner.NewToken(), RunID: "run-1", Requests: requests("c1"), ExpiresAt: time.Now().Add(time.Hour)}
	if err := s.Create(ctx, a); err != nil {
		t.Fatal(err)
	}
	old := f.st.Primary(t)
	replica := f.st.Replicas(t)[0]

	// The replica stops and its link is cut: nothing written from now on
	// reaches it, not even from its socket's buffer once it runs again.
	replica.Pause(t)
	if err := old.Client(t).ClientKillByFilter(ctx, "TYPE", "replica").Err(); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Decide(ctx, a.Token, approve("c1", "UA")); approval.ErrorCode(err) != approval.EUNCONFIRMED {
		t.Fatalf("decide, replica cut off: %v, want EUNCONFIRMED", err)
	}
	if got, err := s.Get(ctx, a.Token); err != nil || got.Call("c1").Status != approval.CallPending {
		t.Fatalf("before the failover: %v; want c1 pending", err)
	}
	if fx := effectsOf(t, old.Client(t), f.opts.Prefix, a.Token); fx != (effects{}) {
		t.Errorf("before the failover, on the old primary: %+v; want nothing", fx)
	}

	f.st.KillPrimary(t)
	replica.Resume(t)
	if primary := f.st.WaitFailover(t, old); primary != replica {
		t.Fatalf("new primary %s, want the replica %s", primary.Addr(), replica.Addr())
	}
	got, err := s.Get(ctx, a.Token)
	if err != nil || got.State != approval.StatePending || got.Call("c1").Status != approval.CallPending {
		t.Fatalf("after the failover: %v; want the request pending again", err)
	}
	if done, err := s.Confirm(ctx); err != nil || len(done) != 0 {
		t.Errorf("the confirmer on the new primary: %d changes, %v; want none", len(done), err)
	}

	// A click decides it. The new primary has no replica left to confirm
	// it (bringing the old primary back as one waits on the Sentinels,
	// which a loaded host makes take minutes), so this replica of slackbot
	// runs without REDIS_WAIT_REPLICAS: what is checked is that the call
	// is open to a decision, not WAIT again.
	rdb := replica.Client(t)
	opts := f.opts
	opts.WaitReplicas = 0
	s = store.New(f.rdb, opts)
	res, err := s.Decide(ctx, a.Token, deny("c1", "UB", "not now"))
	if err != nil || !res.Resolved || res.Call.Status != approval.CallDenied {
		t.Fatalf("a click after the failover: %v; want it to decide the request", err)
	}
	if fx := effectsOf(t, rdb, f.opts.Prefix, a.Token); fx.resumes != 1 || fx.decided != 1 {
		t.Errorf("after the click on the new primary: %+v; want one resume job and one decision", fx)
	}
}

// Changes held while REDIS_WAIT_REPLICAS was set are not stranded when a
// process runs without it: the same click repeated there applies its
// held decision, its confirmer applies the others (no WAIT to ask), and
// a listed change whose staging vanished with its record leaves the list.
func TestHeldChangesWithoutWaitReplicas(t *testing.T) {
	e := newConfirmEnv(t)
	ctx := t.Context()
	clicked, left, vanished := e.create(t, "c1"), e.create(t, "c1"), e.create(t, "c1")
	e.replica.Pause(t)
	defer e.replica.Resume(t)
	for _, a := range []*approval.Request{clicked, left, vanished} {
		if _, err := e.s.Decide(ctx, a.Token, approve("c1", "UA")); approval.ErrorCode(err) != approval.EUNCONFIRMED {
			t.Fatalf("decide, replica stopped: %v", err)
		}
	}
	rdb := e.primary.Client(t)
	if err := rdb.Del(ctx, "w:a:"+vanished.Token+":staged").Err(); err != nil {
		t.Fatal(err)
	}
	off := store.New(rdb, store.Options{Prefix: "w:", Now: e.clock.Now})
	res, err := off.Decide(ctx, clicked.Token, approve("c1", "UA"))
	if err != nil || !res.Changed || res.Call.Status != approval.CallApproved {
		t.Fatalf("the same click without WaitReplicas: %v; want the held decision applied", err)
	}
	done, err := off.Confirm(ctx)
	if err != nil || len(done) != 1 || done[0].Decided.Request.Token != left.Token {
		t.Fatalf("the confirmer without WaitReplicas: %d changes, %v; want the one left", len(done), err)
	}
	if n, err := rdb.ZCard(ctx, "w:unconfirmed").Result(); err != nil || n != 0 {
		t.Errorf("%d tokens still listed as unconfirmed, %v; want none", n, err)
	}
}
