package store_test

import (
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/slackapprove/slackbot/agentrunner"
	"github.com/slackapprove/slackbot/approval"
	"github.com/slackapprove/slackbot/store"
)

// A call still pending when its token ended comes out of the store as the
// token's end: expired, cancelled, or failed with the token's reason.
func TestUndecidedCallTakesTheRequestsEnd(t *testing.T) {
	tests := []struct {
		name       string
		end        func(t *testing.T, e *env, token string)
		wantState  approval.State
		wantStatus approval.CallStatus
		wantReason string
	}{
		{"expired", func(t *testing.T, e *env, token string) {
			e.clock.Advance(2 * time.Hour)
			if _, err := e.store().Sweep(t.Context()); err != nil {
				t.Fatal(err)
			}
		}, approval.StateExpired, approval.CallExpired, ""},
		{"cancelled", func(t *testing.T, e *env, token string) {
			if _, err := e.store().Cancel(t.Context(), token, "U0REQUESTER"); err != nil {
				t.Fatal(err)
			}
		}, approval.StateCancelled, approval.CallCancelled, ""},
		{"failed", func(t *testing.T, e *env, token string) {
			if _, err := e.store().Fail(t.Context(), token, "slackbot", "asking failed"); err != nil {
				t.Fatal(err)
			}
		}, approval.StateFailed, approval.CallFailed, "asking failed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t)
			s := e.store()
			a := e.create(t, s, requests("c1", "c2"), 1)
			if _, err := s.Decide(t.Context(), a.Token, approve("c1", "U0ALICE")); err != nil {
				t.Fatal(err)
			}
			tt.end(t, e, a.Token)
			got, err := e.otherProcess(t).Get(t.Context(), a.Token)
			if err != nil {
				t.Fatal(err)
			}
			if got.State != tt.wantState {
				t.Errorf("state %s, want %s", got.State, tt.wantState)
			}
			if c := got.Call("c1"); c.Status != approval.CallApproved || !c.Decided() {
				t.Errorf("the decided call: status %s, decided %v; want approved", c.Status, c.Decided())
			}
			c := got.Call("c2")
			if c.Status != tt.wantStatus || c.Reason != tt.wantReason || c.Decided() {
				t.Errorf("the undecided call: status %s, reason %q, decided %v; want %s, %q, not decided", c.Status, c.Reason, c.Decided(), tt.wantStatus, tt.wantReason)
			}
		})
	}
}

// The record keeps the encoding of the previous version: a pending token
// is "open" in Redis and an undecided call "undecided".
func TestRecordEncodingUnchanged(t *testing.T) {
	e := newEnv(t)
	s := e.store()
	a := e.create(t, s, requests("c1"), 1)
	key := e.prefix + "a:" + a.Token
	if got := e.rdb.HGet(t.Context(), key, "state").Val(); got != "open" {
		t.Errorf("state of a pending token in Redis: %q, want open", got)
	}
	if a.State != approval.StatePending {
		t.Errorf("state after Create: %s, want pending", a.State)
	}
	if _, err := s.Cancel(t.Context(), a.Token, "U0REQUESTER"); err != nil {
		t.Fatal(err)
	}
	if got := e.rdb.HGet(t.Context(), key, "c1.st").Val(); got != "undecided" {
		t.Errorf("status of the cancelled call in Redis: %q, want undecided", got)
	}
	if got := e.rdb.HGet(t.Context(), key, "requester").Val(); got != "U0REQUESTER" {
		t.Errorf("requester in Redis: %q, want the Slack user", got)
	}
}

// Decide on a failed token returns ErrFailed, which is not ErrResolved
// (the old adapter folded them), and every error path names its code.
func TestDecideErrorCodes(t *testing.T) {
	e := newEnv(t)
	s := e.store()
	a := e.create(t, s, requests("c1", "c2"), 1)
	if _, err := s.Fail(t.Context(), a.Token, "slackbot", "asking failed"); err != nil {
		t.Fatal(err)
	}
	_, err := s.Decide(t.Context(), a.Token, approve("c1", "U0ALICE"))
	if !errors.Is(err, approval.ErrFailed) || errors.Is(err, approval.ErrResolved) || approval.ErrorCode(err) != approval.EFAILED {
		t.Errorf("decide on a failed token: %v (code %q), want ErrFailed and not ErrResolved", err, approval.ErrorCode(err))
	}
	if !errors.Is(err, agentrunner.ErrTokenFailed) {
		t.Errorf("decide on a failed token: %v does not match agentrunner.ErrTokenFailed", err)
	}

	b := e.create(t, s, requests("c1"), 1)
	_, dup := s.Decide(t.Context(), b.Token, approve("c1", "U0ALICE"))
	for _, tc := range []struct {
		what string
		err  error
		code string
	}{
		{"decided", dup, ""},
		{"duplicate create", s.Create(t.Context(), &approval.Request{Token: b.Token, Requests: requests("c1")}), approval.ECONFLICT},
		{"bad token", s.Create(t.Context(), &approval.Request{Token: "abc", Requests: requests("c1")}), approval.EINVALID},
		{"unknown token", s.SetMessage(t.Context(), agentrunner.NewToken(), "c1", approval.MessageRef{}), approval.ENOTFOUND},
		{"unknown call", s.SetOutcome(t.Context(), b.Token, "c9", approval.Outcome{Status: "ran"}), approval.ENOTFOUND},
		{"decided differently", func() error { _, err := s.Decide(t.Context(), b.Token, deny("c1", "U0BOB", "")); return err }(), approval.EDECIDED},
		{"unknown action", func() error {
			_, err := s.Decide(t.Context(), b.Token, approval.Decision{CallID: "c1", By: "U0BOB", Action: "maybe"})
			return err
		}(), approval.EINVALID},
		{"cancel ended", func() error { _, err := s.Cancel(t.Context(), b.Token, "U0BOB"); return err }(), approval.ERESOLVED},
		{"rate limited", func() error {
			q := store.Quota{MaxOpen: 1}
			if err := s.TakeQuota(t.Context(), "billing", agentrunner.NewToken(), time.Now().Add(time.Hour), q); err != nil {
				return err
			}
			return s.TakeQuota(t.Context(), "billing", agentrunner.NewToken(), time.Now().Add(time.Hour), q)
		}(), approval.ERATELIMITED},
	} {
		if got := approval.ErrorCode(tc.err); got != tc.code {
			t.Errorf("%s: ErrorCode(%v) = %q, want %q", tc.what, tc.err, got, tc.code)
		}
	}
}

// A quota's refusal is ERATELIMITED and still carries its RetryAfter.
func TestRateLimitErrorIsApprovals(t *testing.T) {
	e := newEnv(t)
	s := e.store()
	q := store.Quota{Rate: 0.001}
	var err error
	for range 3 {
		if err = s.TakeQuota(t.Context(), "billing", agentrunner.NewToken(), e.clock.Now().Add(time.Hour), q); err != nil {
			break
		}
	}
	var rl *store.RateLimitError
	if !errors.As(err, &rl) || rl.RetryAfter <= 0 || !errors.Is(err, approval.ErrRateLimit) || approval.ErrorCode(err) != approval.ERATELIMITED {
		t.Fatalf("third take at 0.001/s: %v; want a *RateLimitError with RetryAfter, coded %s", err, approval.ERATELIMITED)
	}
}

// A record reads back as a person should see each call (what the removed
// storeadapter.ToBot did, now the store's own decoding): denials carry
// their reason, approvals their changed arguments and outcome, answers
// their value, undecided calls the token's end, and votes the arguments
// they approved; "api:<name>" of an older record with no client field is
// the client.
func TestRecordReadsAsPeopleSeeIt(t *testing.T) {
	e := newEnv(t)
	s := e.store()
	reqs := agentrunner.DeferredToolRequests{
		Approvals: []agentrunner.ToolCallPart{
			{ToolName: "issue_refund", Args: json.RawMessage(`{"amount":500}`), ToolCallID: "a"},
			{ToolName: "issue_refund", Args: json.RawMessage(`{"amount":500}`), ToolCallID: "b"},
			{ToolName: "issue_refund", Args: json.RawMessage(`{"amount":500}`), ToolCallID: "d"},
			{ToolName: "issue_refund", Args: json.RawMessage(`{"amount":500}`), ToolCallID: "e"},
		},
		Calls: []agentrunner.ToolCallPart{{ToolName: "ask_user", Args: json.RawMessage(`{}`), ToolCallID: "c"}},
	}
	a := &approval.Request{Token: agentrunner.NewToken(), Origin: approval.Origin{Client: "triage"}, Requests: reqs,
		Context: "ticket 812", ExpiresAt: e.clock.Now().Add(time.Hour),
		Calls: []approval.Call{{ID: "e", Required: 2}}}
	if err := s.Create(t.Context(), a); err != nil {
		t.Fatal(err)
	}
	for _, d := range []approval.Decision{
		{CallID: "a", By: "UA", Action: approval.ActionDeny, Reason: "Not on Fridays."},
		{CallID: "b", By: "UA", Action: approval.ActionApprove, OverrideArgs: json.RawMessage(`{"amount":50}`)},
		{CallID: "c", By: "UA", Action: approval.ActionAnswer, Answer: json.RawMessage(`"blue"`)},
		{CallID: "e", By: "UA", Action: approval.ActionApprove},
		{CallID: "e", By: "UB", Action: approval.ActionApprove, OverrideArgs: json.RawMessage(`{"amount":1}`)},
	} {
		if _, err := s.Decide(t.Context(), a.Token, d); err != nil {
			t.Fatalf("decide %+v: %v", d, err)
		}
	}
	if err := s.SetOutcome(t.Context(), a.Token, "b", approval.Outcome{Status: "ran", Summary: "refunded"}); err != nil {
		t.Fatal(err)
	}
	e.clock.Advance(2 * time.Hour)
	if _, err := s.Sweep(t.Context()); err != nil {
		t.Fatal(err)
	}
	got, err := s.Get(t.Context(), a.Token)
	if err != nil {
		t.Fatal(err)
	}
	if got.State != approval.StateExpired || got.Origin.Client != "triage" || got.Origin.User != "" || got.Context != "ticket 812" {
		t.Errorf("request %+v: want expired, client triage, the context", got)
	}
	if c := got.Call("a"); c.Status != approval.CallDenied || c.Reason != "Not on Fridays." {
		t.Errorf("call a %+v, want denied with the reason", c)
	}
	if c := got.Call("b"); c.Status != approval.CallApproved || string(c.OverrideArgs) != `{"amount":50}` || c.Outcome == nil || c.Outcome.Summary != "refunded" {
		t.Errorf("call b %+v, want approved with the override and the outcome", c)
	}
	if c := got.Call("c"); c.Status != approval.CallAnswered || string(c.Answer) != `"blue"` {
		t.Errorf("call c %+v, want answered blue", c)
	}
	if c := got.Call("d"); c.Status != approval.CallExpired {
		t.Errorf("call d %+v, want expired", c)
	}
	// Each vote keeps which arguments it approved, so the card counts
	// them per set.
	if c := got.Call("e"); len(c.Votes) != 2 || c.Votes[0].Key != "-" || c.Votes[1].Key == "-" || c.Status != approval.CallExpired {
		t.Errorf("call e %+v, want UA's vote for the call's arguments and UB's for edited ones, expired", c)
	}

	// An older record of a run with an API origin has no client field.
	if err := e.rdb.HDel(t.Context(), e.prefix+"a:"+a.Token, "client").Err(); err != nil {
		t.Fatal(err)
	}
	old, err := s.Get(t.Context(), a.Token)
	if err != nil || old.Origin != (approval.Origin{Client: "triage"}) {
		t.Errorf("an older record's origin: %+v, %v; want client triage", old.Origin, err)
	}
}
