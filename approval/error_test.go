package approval_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/slackapprove/slackbot/agentrunner"
	"github.com/slackapprove/slackbot/approval"
)

func TestErrorCodeSurvivesWrapping(t *testing.T) {
	for _, tc := range []struct {
		err  error
		code string
	}{
		{nil, ""},
		{fmt.Errorf("decide abc: %w", approval.ErrExpired), approval.EEXPIRED},
		{fmt.Errorf("outer: %w", fmt.Errorf("decide abc: %w", approval.ErrDecided)), approval.EDECIDED},
		{approval.Errorf(approval.ENOTAPPROVER, "you are not an approver for %s", "deploys"), approval.ENOTAPPROVER},
		{fmt.Errorf("wait: %w", agentrunner.ErrTokenCancelled), approval.ECANCELLED},
		{errors.New("redis: connection refused"), approval.EINTERNAL},
	} {
		if got := approval.ErrorCode(tc.err); got != tc.code {
			t.Errorf("ErrorCode(%v) = %q, want %q", tc.err, got, tc.code)
		}
	}
}

func TestErrorIsMatchesCodeAndCause(t *testing.T) {
	err := fmt.Errorf("get abc: %w", approval.ErrExpired)
	if !errors.Is(err, approval.ErrExpired) {
		t.Error("errors.Is(wrapped ErrExpired, ErrExpired) = false")
	}
	if !errors.Is(err, agentrunner.ErrTokenExpired) {
		t.Error("errors.Is(wrapped ErrExpired, agentrunner.ErrTokenExpired) = false: waiters branch on it")
	}
	if errors.Is(err, approval.ErrResolved) {
		t.Error("errors.Is(ErrExpired, ErrResolved) = true: codes must not fold into each other")
	}
	if errors.Is(approval.ErrFailed, approval.ErrResolved) {
		t.Error("ErrFailed matches ErrResolved: a failed request is not a resolved one")
	}
	e := approval.Errorf(approval.EEXPIRED, "request %s expired", "abc")
	if !errors.Is(e, approval.ErrExpired) {
		t.Error("an Errorf with code EEXPIRED does not match ErrExpired")
	}
}

func TestErrorMessageHidesInternals(t *testing.T) {
	if got := approval.ErrorMessage(errors.New("dial tcp 10.0.0.7:6379: secret detail")); got != "internal error" {
		t.Errorf("ErrorMessage(internal) = %q, want the generic sentence", got)
	}
	if got := approval.ErrorMessage(fmt.Errorf("x: %w", approval.Errorf(approval.EINVALID, "timeout must be positive"))); got != "timeout must be positive" {
		t.Errorf("ErrorMessage(EINVALID) = %q", got)
	}
}

func TestCallDerivedFields(t *testing.T) {
	denied := approval.Call{Kind: agentrunner.KindApproval, Status: approval.CallDenied}
	if err := denied.DecodeResult([]byte(`{"kind":"tool-denied","message":"not on a Friday"}`)); err != nil || denied.Reason != "not on a Friday" {
		t.Errorf("the reason of a denial = %q, %v", denied.Reason, err)
	}
	edited := approval.Call{Kind: agentrunner.KindApproval, Status: approval.CallApproved}
	if err := edited.DecodeResult([]byte(`{"kind":"tool-approved","override_args":{"n":1}}`)); err != nil || string(edited.OverrideArgs) != `{"n":1}` {
		t.Errorf("OverrideArgs = %s, %v", edited.OverrideArgs, err)
	}
	expired := approval.Call{Kind: agentrunner.KindApproval, Status: approval.CallExpired, Reason: "expired"}
	if expired.Decided() || expired.Reason != "expired" {
		t.Errorf("an expired call: Decided()=%v Why()=%q", expired.Decided(), expired.Reason)
	}
	quorum := approval.Call{Required: 2, Status: approval.CallPending, Votes: []approval.Vote{{By: "U1", Key: "-"}, {By: "U2", Key: "x"}}}
	if got := quorum.QuorumVotes(); got != 1 {
		t.Errorf("QuorumVotes() over two argument sets = %d, want 1 (votes for different arguments never add up)", got)
	}
}

// ErrNotPending and ErrNotFound share ENOTFOUND (both are 404s), but a
// caller that tells an unknown call from an unknown token can.
func TestErrorIsTellsNotPendingFromNotFound(t *testing.T) {
	notPending := fmt.Errorf("set message abc c9: %w", approval.ErrNotPending)
	notFound := fmt.Errorf("get abc: %w", approval.ErrNotFound)
	if !errors.Is(notPending, approval.ErrNotPending) || !errors.Is(notPending, agentrunner.ErrNotPending) {
		t.Error("a wrapped ErrNotPending does not match ErrNotPending or agentrunner.ErrNotPending")
	}
	if errors.Is(notFound, approval.ErrNotPending) || errors.Is(notPending, approval.ErrNotFound) {
		t.Error("ErrNotFound and ErrNotPending match each other: their causes differ")
	}
	if approval.ErrorCode(notPending) != approval.ENOTFOUND || approval.ErrorCode(notFound) != approval.ENOTFOUND {
		t.Error("both must keep the code ENOTFOUND")
	}
	if !errors.Is(approval.Errorf(approval.ENOTFOUND, "no call c9"), approval.ErrNotFound) {
		t.Error("an Errorf with code ENOTFOUND and no cause does not match ErrNotFound")
	}
}
