package store_test

import (
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
