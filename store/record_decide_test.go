package store_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/slackapprove/slackbot/agentrunner"
	"github.com/slackapprove/slackbot/approval"
	"github.com/slackapprove/slackbot/store"
)

// 200 goroutines on two separate clients decide the same call at once:
// exactly one decision is made and the token resolves exactly once.
func TestDecideRace(t *testing.T) {
	e := newEnv(t)
	stores := []*store.Store{e.store(), e.otherProcess(t)}
	a := e.create(t, stores[0], requests("c1"), 1)

	const n = 200
	type result struct {
		out *approval.Decided
		err error
	}
	results := make([]result, n)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range n {
		wg.Go(func() {
			<-start
			d := approve("c1", fmt.Sprintf("U%03d", i))
			if i%2 == 1 {
				d = deny("c1", fmt.Sprintf("U%03d", i), "no")
			}
			out, err := stores[i%2].Decide(t.Context(), a.Token, d)
			results[i] = result{out, err}
		})
	}
	close(start)
	wg.Wait()

	changed, resolved := 0, 0
	var winner *approval.Decided
	for i, r := range results {
		switch {
		case r.err == nil && r.out.Changed:
			changed++
			winner = r.out
			if r.out.Resolved {
				resolved++
			}
		case errors.Is(r.err, approval.ErrDecided):
			if r.out == nil || r.out.Call.Status == approval.CallPending {
				t.Errorf("goroutine %d: ErrDecided without the decision made: %+v", i, r.out)
			}
		default:
			t.Errorf("goroutine %d: got %+v, %v; want the decision or ErrDecided", i, r.out, r.err)
		}
	}
	if changed != 1 || resolved != 1 {
		t.Fatalf("got %d decisions and %d resolutions, want 1 and 1", changed, resolved)
	}
	for i, r := range results {
		if r.out != nil && r.out.Call.DecidedBy != winner.Call.DecidedBy {
			t.Errorf("goroutine %d saw decision by %s, want %s", i, r.out.Call.DecidedBy, winner.Call.DecidedBy)
		}
	}
	counts := auditCounts(t, stores[0])
	if counts[store.AuditDecided] != 1 || counts[store.AuditResolved] != 1 || counts[store.AuditRefused] != n-1 {
		t.Errorf("audit: got %v, want 1 decided, 1 resolved, %d refused", counts, n-1)
	}
	if got := e.rdb.XLen(t.Context(), e.prefix+"resume").Val(); got != 1 {
		t.Errorf("resume jobs: got %d, want 1", got)
	}
}

func auditCounts(t *testing.T, s *store.Store) map[store.AuditType]int {
	t.Helper()
	evs, err := s.ReadAudit(t.Context(), "", 0)
	if err != nil {
		t.Fatal(err)
	}
	counts := map[store.AuditType]int{}
	for _, ev := range evs {
		counts[ev.Type]++
	}
	return counts
}

func TestQuorum(t *testing.T) {
	override := json.RawMessage(`{"path":"other.txt"}`)
	type step struct {
		d           approval.Decision
		wantStatus  approval.CallStatus
		wantChanged bool
		wantVotes   int
		wantErr     error
	}
	tests := []struct {
		name     string
		required int
		steps    []step
		wantBy   string // answered_by of the resolved call
	}{
		{
			name: "2 of 3 approve", required: 2,
			steps: []step{
				{d: approve("c1", "UA"), wantStatus: approval.CallPending, wantChanged: true, wantVotes: 1},
				{d: approve("c1", "UB"), wantStatus: approval.CallApproved, wantChanged: true, wantVotes: 2},
				{d: approve("c1", "UC"), wantStatus: approval.CallApproved, wantVotes: 2, wantErr: approval.ErrDecided},
			},
			wantBy: "UA,UB",
		},
		{
			name: "same approver twice counts once", required: 2,
			steps: []step{
				{d: approve("c1", "UA"), wantStatus: approval.CallPending, wantChanged: true, wantVotes: 1},
				{d: approve("c1", "UA"), wantStatus: approval.CallPending, wantVotes: 1},
				{d: approve("c1", "UB"), wantStatus: approval.CallApproved, wantChanged: true, wantVotes: 2},
				{d: approve("c1", "UA"), wantStatus: approval.CallApproved, wantVotes: 2},
			},
			wantBy: "UA,UB",
		},
		{
			name: "one denial denies a quorum call", required: 2,
			steps: []step{
				{d: approve("c1", "UA"), wantStatus: approval.CallPending, wantChanged: true, wantVotes: 1},
				{d: deny("c1", "UB", "not today"), wantStatus: approval.CallDenied, wantChanged: true},
				{d: deny("c1", "UB", "not today"), wantStatus: approval.CallDenied},
				{d: approve("c1", "UC"), wantStatus: approval.CallDenied, wantVotes: 1, wantErr: approval.ErrDecided},
			},
			wantBy: "UB",
		},
		{
			name: "votes for different arguments do not add up", required: 2,
			steps: []step{
				{d: approve("c1", "UA"), wantStatus: approval.CallPending, wantChanged: true, wantVotes: 1},
				{d: approval.Decision{CallID: "c1", By: "UB", Action: approval.ActionApprove, OverrideArgs: override}, wantStatus: approval.CallPending, wantChanged: true, wantVotes: 1},
				{d: approval.Decision{CallID: "c1", By: "UA", Action: approval.ActionApprove, OverrideArgs: override}, wantStatus: approval.CallApproved, wantChanged: true, wantVotes: 2},
			},
			wantBy: "UA,UB",
		},
		{
			// An edit that changes nothing is the same set of arguments.
			name: "edited arguments equal to the call's own add up with it", required: 3,
			steps: []step{
				{d: approve("c1", "UA"), wantStatus: approval.CallPending, wantChanged: true, wantVotes: 1},
				{d: approval.Decision{CallID: "c1", By: "UB", Action: approval.ActionApprove, OverrideArgs: json.RawMessage("{\n  \"path\": \"c1.txt\"\n}")}, wantStatus: approval.CallPending, wantChanged: true, wantVotes: 2},
				{d: approval.Decision{CallID: "c1", By: "UC", Action: approval.ActionApprove, OverrideArgs: json.RawMessage(`"{\"path\":\"c1.txt\"}"`)}, wantStatus: approval.CallApproved, wantChanged: true, wantVotes: 3},
			},
			wantBy: "UA,UB,UC",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t)
			s := e.store()
			a := e.create(t, s, requests("c1"), tt.required)
			var last *approval.Decided
			for i, st := range tt.steps {
				out, err := s.Decide(t.Context(), a.Token, st.d)
				wantErr(t, fmt.Sprintf("step %d", i), err, st.wantErr)
				if out == nil {
					t.Fatalf("step %d: no outcome", i)
				}
				if out.Call.Status != st.wantStatus || out.Changed != st.wantChanged || out.Votes != st.wantVotes || out.Required != tt.required {
					t.Errorf("step %d: got status %s changed %v votes %d/%d, want %s %v %d/%d",
						i, out.Call.Status, out.Changed, out.Votes, out.Required, st.wantStatus, st.wantChanged, st.wantVotes, tt.required)
				}
				if err == nil {
					last = out
				}
			}
			if last.Request.Results(nil) == nil {
				t.Fatal("token not resolved")
			}
			if got := last.Request.Results(nil).AnsweredBy["c1"]; got != tt.wantBy {
				t.Errorf("answered_by: got %q, want %q", got, tt.wantBy)
			}
		})
	}
}

func TestDecideResults(t *testing.T) {
	e := newEnv(t)
	s := e.store()
	reqs := requests("a1", "a2")
	reqs.Calls = []agentrunner.ToolCallPart{
		{ToolName: "ask", ToolCallID: "q1"},
		{ToolName: "job", ToolCallID: "x1"},
	}
	reqs.Metadata = map[string]map[string]any{"q1": {"question": "Why?"}}
	a := e.create(t, s, reqs, 1)
	steps := []approval.Decision{
		{CallID: "a1", By: "UA", Action: approval.ActionApprove, OverrideArgs: json.RawMessage(`"{\"path\": \"b.txt\"}"`), Metadata: map[string]any{"note": "edited"}},
		deny("a2", "UB", ""),
		{CallID: "q1", By: "UC", Action: approval.ActionAnswer, Answer: json.RawMessage(`{"n": 12345678901234567890, "l": []}`)},
		{CallID: "x1", By: "api:ci", Action: approval.ActionFail, Reason: "job crashed"},
	}
	var out *approval.Decided
	for i, d := range steps {
		var err error
		out, err = s.Decide(t.Context(), a.Token, d)
		if err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
		if got, want := out.Resolved, i == len(steps)-1; got != want {
			t.Errorf("step %d: resolved %v, want %v", i, got, want)
		}
	}
	want := `{"approvals":{"a1":{"kind":"tool-approved","override_args":{"path":"b.txt"}},"a2":{"kind":"tool-denied","message":"The tool call was denied."}},` +
		`"calls":{"q1":{"n":12345678901234567890,"l":[]},"x1":{"kind":"tool-failed","message":"job crashed"}},` +
		`"metadata":{"a1":{"note":"edited"}},"answered_by":{"a1":"UA","a2":"UB","q1":"UC","x1":"api:ci"}}`
	jsonEqual(t, "results", mustJSON(t, out.Request.Results(nil)), want)
	if out.Request.State != approval.StateResolved || out.Request.EndedBy != "api:ci" {
		t.Errorf("record: got state %s ended by %s, want resolved by api:ci", out.Request.State, out.Request.EndedBy)
	}
}

// Decisions after the token ended, or on calls it does not have, are
// refused with distinct errors.
func TestDecideRefusals(t *testing.T) {
	tests := []struct {
		name  string
		setup func(t *testing.T, e *env, s *store.Store, token string)
		d     approval.Decision
		want  error
	}{
		{"unknown call", nil, approve("nope", "UA"), approval.ErrNotPending},
		{"past the deadline, not yet swept", func(t *testing.T, e *env, s *store.Store, token string) {
			e.clock.Advance(time.Hour)
		}, approve("c1", "UA"), approval.ErrExpired},
		{"expired", func(t *testing.T, e *env, s *store.Store, token string) {
			e.clock.Advance(time.Hour)
			if _, err := s.Sweep(t.Context()); err != nil {
				t.Fatal(err)
			}
		}, approve("c1", "UA"), approval.ErrExpired},
		{"cancelled", func(t *testing.T, e *env, s *store.Store, token string) {
			if _, err := s.Cancel(t.Context(), token, "UREQ"); err != nil {
				t.Fatal(err)
			}
		}, approve("c1", "UA"), approval.ErrCancelled},
		{"failed", func(t *testing.T, e *env, s *store.Store, token string) {
			if _, err := s.Fail(t.Context(), token, "", "asking failed"); err != nil {
				t.Fatal(err)
			}
		}, deny("c1", "UA", ""), approval.ErrFailed},
		{"resolved without this call", func(t *testing.T, e *env, s *store.Store, token string) {
			// As an older replica's results endpoint left it (it ended the
			// calls its results left out undecided).
			if err := e.rdb.HSet(t.Context(), e.prefix+"a:"+token, "state", "resolved").Err(); err != nil {
				t.Fatal(err)
			}
		}, approve("c1", "UA"), approval.ErrResolved},
		{"decided by someone else", func(t *testing.T, e *env, s *store.Store, token string) {
			if _, err := s.Decide(t.Context(), token, deny("c1", "UB", "")); err != nil {
				t.Fatal(err)
			}
		}, approve("c1", "UA"), approval.ErrDecided},
		{"nothing decided", nil, approval.Decision{CallID: "c1", By: "UA"}, approval.ErrInvalid},
		{"unknown action", nil, approval.Decision{CallID: "c1", By: "UA", Action: "approve-and-deny"}, approval.ErrInvalid},
		{"answer without a value", nil, approval.Decision{CallID: "c1", By: "UA", Action: approval.ActionAnswer}, approval.ErrInvalid},
		{"answer with an approval", nil, approval.Decision{CallID: "c1", By: "UA", Action: approval.ActionApprove, Answer: json.RawMessage(`"yes"`)}, approval.ErrInvalid},
		{"no one decided", nil, approval.Decision{CallID: "c1", Action: approval.ActionApprove}, approval.ErrInvalid},
		{"override args not an object", nil, approval.Decision{CallID: "c1", By: "UA", Action: approval.ActionApprove, OverrideArgs: json.RawMessage(`[1]`)}, approval.ErrInvalid},
		{"answer to an approval", nil, approval.Decision{CallID: "c1", By: "UA", Action: approval.ActionAnswer, Answer: json.RawMessage(`"yes"`)}, approval.ErrInvalid},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t)
			s := e.store()
			a := e.create(t, s, requests("c1", "c2"), 1)
			if tt.setup != nil {
				tt.setup(t, e, s, a.Token)
			}
			_, err := s.Decide(t.Context(), a.Token, tt.d)
			wantErr(t, "decide", err, tt.want)
		})
	}
	t.Run("unknown token", func(t *testing.T) {
		e := newEnv(t)
		_, err := e.store().Decide(t.Context(), agentrunner.NewToken(), approve("c1", "UA"))
		wantErr(t, "decide", err, approval.ErrNotFound)
	})
}

// A repeated click returns the decision already made, even after the token
// resolved, and writes nothing.
func TestDecideIdempotent(t *testing.T) {
	e := newEnv(t)
	s := e.store()
	a := e.create(t, s, requests("c1"), 1)
	first, err := s.Decide(t.Context(), a.Token, deny("c1", "UA", "too risky"))
	if err != nil || !first.Changed || !first.Resolved {
		t.Fatalf("first click: got %+v, %v; want a change that resolves", first, err)
	}
	before := e.rdb.XLen(t.Context(), e.prefix+"audit").Val()
	again, err := s.Decide(t.Context(), a.Token, deny("c1", "UA", "too risky"))
	if err != nil {
		t.Fatalf("repeat: %v", err)
	}
	if again.Changed || again.Resolved || again.Call.Status != approval.CallDenied || again.Call.DecidedBy != "UA" {
		t.Errorf("repeat: got changed %v resolved %v status %s by %s, want the first decision unchanged",
			again.Changed, again.Resolved, again.Call.Status, again.Call.DecidedBy)
	}
	if after := e.rdb.XLen(t.Context(), e.prefix+"audit").Val(); after != before {
		t.Errorf("repeat wrote %d audit events, want 0", after-before)
	}
}

// Answers must name pending calls of their kind: one that does not
// refuses them all and changes nothing; good ones resolve the token once.
func TestAnswerValidation(t *testing.T) {
	e := newEnv(t)
	s := e.store()
	reqs := requests("a1")
	reqs.Calls = []agentrunner.ToolCallPart{{ToolName: "job", ToolCallID: "x1"}}
	a := e.create(t, s, reqs, 1)

	bad := agentrunner.NewDeferredToolResults()
	bad.Approvals["a1"] = agentrunner.Approve()
	bad.Approvals["x1"] = agentrunner.Approve() // a call, not an approval
	bad.Calls["zz"] = agentrunner.Fail("?")
	_, err := s.Answer(t.Context(), a.Token, "api:x", bad)
	wantErr(t, "answer with ids not pending", err, approval.ErrNotPending)
	wantErr(t, "answer with ids not pending", err, agentrunner.ErrNotPending)
	got, err := s.Get(t.Context(), a.Token)
	if err != nil || got.State != approval.StatePending || got.Calls[0].Status != approval.CallPending {
		t.Fatalf("after a refused answer: got %+v, %v; want nothing changed", got, err)
	}

	good := agentrunner.NewDeferredToolResults()
	good.Approvals["a1"] = agentrunner.Deny("no")
	good.Calls["x1"] = agentrunner.CallResult{Value: json.RawMessage(`{"ok":true}`)}
	good.AnsweredBy["x1"] = "ci-bot"
	res, err := s.Answer(t.Context(), a.Token, "api:x", good)
	if err != nil {
		t.Fatalf("answer: %v", err)
	}
	want := `{"approvals":{"a1":{"kind":"tool-denied","message":"no"}},"calls":{"x1":{"ok":true}},"metadata":{},"answered_by":{"a1":"api:x","x1":"ci-bot"}}`
	jsonEqual(t, "results", mustJSON(t, res.Results(nil)), want)
	_, err = s.Answer(t.Context(), a.Token, "api:x", good)
	wantErr(t, "answer twice", err, approval.ErrResolved)
}

// Every key the store creates has a TTL.
func TestEveryKeyHasTTL(t *testing.T) {
	e := newEnv(t)
	s := e.store()
	ev := store.NewTokens(s, store.TokensOptions{})
	runTokens(t, ev)
	ctx := t.Context()

	a := e.create(t, s, requests("c1", "c2"), 2)
	if err := s.SaveRun(ctx, store.RunState{RunID: a.RunID, Token: a.Token, ExpiresAt: a.ExpiresAt}); err != nil {
		t.Fatal(err)
	}
	withCard := approve("c1", "UA")
	withCard.CardJob = "job1" // a card lease and a scheduled card update
	if _, err := s.Decide(ctx, a.Token, withCard); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Cancel(ctx, a.Token, "UREQ"); err != nil {
		t.Fatal(err)
	}
	expiring := e.create(t, s, requests("c1"), 1)
	_ = expiring
	e.clock.Advance(2 * time.Hour)
	if _, err := s.Sweep(ctx); err != nil {
		t.Fatal(err)
	}
	q := s.ResumeQueue(store.ResumeQueueOptions{})
	if _, err := q.Read(ctx, "consumer-1", 0); err != nil {
		t.Fatal(err)
	}
	if _, err := s.ClaimResume(ctx, a.Token, "consumer-1", 0); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Dedupe(ctx, "evt-1", time.Minute); err != nil {
		t.Fatal(err)
	}
	if err := s.Refused(ctx, a.Token, "c1", "UX", approval.ENOTAPPROVER, "not an approver"); err != nil {
		t.Fatal(err)
	}
	e.create(t, s, requests("c9"), 1) // one still open, with a deadline

	keys := scanKeys(t, e.rdb, e.prefix)
	kinds := map[string]bool{}
	for _, k := range keys {
		ttl, err := e.rdb.PTTL(ctx, k).Result()
		if err != nil {
			t.Fatal(err)
		}
		if ttl <= 0 {
			t.Errorf("key %s: PTTL %v, want > 0", k, ttl)
		}
		kinds[keyKind(k[len(e.prefix):])] = true
	}
	for _, want := range []string{"a", "deadlines", "resume", "audit", "run", "claim", "proc", "dedupe", "lock", "jobs"} {
		if !kinds[want] {
			t.Errorf("no %q key was created; the test does not cover it (keys: %v)", want, keys)
		}
	}
}

func scanKeys(t *testing.T, rdb redis.UniversalClient, prefix string) []string {
	t.Helper()
	var keys []string
	iter := rdb.Scan(t.Context(), 0, prefix+"*", 1000).Iterator()
	for iter.Next(t.Context()) {
		keys = append(keys, iter.Val())
	}
	if err := iter.Err(); err != nil {
		t.Fatal(err)
	}
	return keys
}

func keyKind(k string) string {
	for i := range len(k) {
		if k[i] == ':' {
			return k[:i]
		}
	}
	return k
}

func TestOpenCount(t *testing.T) {
	e := newEnv(t)
	s := e.store()
	a := e.create(t, s, requests("c1"), 1)
	e.create(t, s, requests("c1"), 1)
	if _, err := s.Decide(t.Context(), a.Token, approve("c1", "UA")); err != nil {
		t.Fatal(err)
	}
	if n, err := s.OpenCount(t.Context()); n != 1 || err != nil {
		t.Errorf("open count: got %d, %v; want 1", n, err)
	}
}

// QuorumVotes counts toward the quorum only the votes of one set of
// arguments: two approvers of different arguments are one vote each.
func TestQuorumVotes(t *testing.T) {
	e := newEnv(t)
	s := e.store()
	a := e.create(t, s, requests("c1"), 3)
	override := json.RawMessage(`{"path":"other.txt"}`)
	steps := []struct {
		d    approval.Decision
		want int
	}{
		{approve("c1", "UA"), 1},
		{approval.Decision{CallID: "c1", By: "UB", Action: approval.ActionApprove, OverrideArgs: override}, 1},
		{approval.Decision{CallID: "c1", By: "UC", Action: approval.ActionApprove, OverrideArgs: override}, 2},
		{approve("c1", "UD"), 2},
		{approval.Decision{CallID: "c1", By: "UE", Action: approval.ActionApprove, OverrideArgs: override}, 3},
	}
	for i, st := range steps {
		out, err := s.Decide(t.Context(), a.Token, st.d)
		if err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
		if got := out.Call.QuorumVotes(); got != st.want {
			t.Errorf("step %d: QuorumVotes = %d (of %d votes), want %d", i, got, len(out.Call.Votes), st.want)
		}
	}
}
