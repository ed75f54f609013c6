package storeadapter_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"testing"

	"github.com/slackapprove/slackbot/agentrunner"
	"github.com/slackapprove/slackbot/bot"
	"github.com/slackapprove/slackbot/internal/storeadapter"
	"github.com/slackapprove/slackbot/store"
)

func TestMapErr(t *testing.T) {
	cases := []struct {
		in, want error
	}{
		{store.ErrNotFound, bot.ErrNotFound},
		{store.ErrNotPendingCall, bot.ErrNotFound},
		{store.ErrExpired, bot.ErrExpired},
		{store.ErrCancelled, bot.ErrCancelled},
		{store.ErrDecided, bot.ErrDecided},
		{store.ErrResolved, bot.ErrResolved},
		{store.ErrFailed, bot.ErrResolved},
	}
	for _, c := range cases {
		got := storeadapter.MapErr(fmt.Errorf("decide x: %w", c.in))
		if !errors.Is(got, c.want) {
			t.Errorf("MapErr(%v) = %v, want %v", c.in, got, c.want)
		}
	}
	other := errors.New("connection refused")
	if got := storeadapter.MapErr(other); got != other {
		t.Errorf("MapErr(other) = %v, want it unchanged", got)
	}
	if storeadapter.MapErr(nil) != nil {
		t.Error("MapErr(nil) != nil")
	}
}

// ToBot shows each call as a person should see it: an undecided call of an
// expired or cancelled token is expired or cancelled; denials carry their
// reason, approvals their changed arguments, answers their value.
func TestToBot(t *testing.T) {
	denied, _ := json.Marshal(agentrunner.Deny("Not on Fridays."))
	override, _ := json.Marshal(agentrunner.ApproveWith(json.RawMessage(`{"amount":50}`)))
	answer, _ := json.Marshal(agentrunner.CallResult{Value: json.RawMessage(`"blue"`)})
	rec := &store.Approval{
		Token: "tok", Requester: "api:triage", State: store.StateExpired, Context: "ticket 812",
		Calls: []store.CallState{
			{ID: "a", Kind: agentrunner.KindApproval, Status: store.CallDenied, Result: denied},
			{ID: "b", Kind: agentrunner.KindApproval, Status: store.CallApproved, Result: override,
				Outcome: &store.ToolOutcome{Status: "ran", Summary: "refunded"}},
			{ID: "c", Kind: agentrunner.KindQuestion, Status: store.CallAnswered, Result: answer},
			{ID: "d", Kind: agentrunner.KindApproval, Status: store.CallUndecided},
			{ID: "e", Kind: agentrunner.KindApproval, Status: store.CallPending, Required: 2,
				Votes: []store.Vote{{By: "UA", Key: "-"}, {By: "UB", Key: "0a1b"}}},
		},
	}
	a := storeadapter.ToBot(rec)
	if a.State != bot.ApprovalExpired || a.Origin.Client != "triage" || a.Origin.User != "" || a.Context != "ticket 812" {
		t.Errorf("approval %+v: want expired, client triage, the context", a)
	}
	if c := a.Call("a"); c.State != bot.StateDenied || c.Reason != "Not on Fridays." {
		t.Errorf("call a %+v, want denied with the reason", c)
	}
	if c := a.Call("b"); c.State != bot.StateApproved || string(c.OverrideArgs) != `{"amount":50}` || c.Outcome == nil || c.Outcome.Summary != "refunded" {
		t.Errorf("call b %+v, want approved with the override and the outcome", c)
	}
	if c := a.Call("c"); c.State != bot.StateAnswered || string(c.Answer) != `"blue"` {
		t.Errorf("call c %+v, want answered blue", c)
	}
	if c := a.Call("d"); c.State != bot.StateExpired {
		t.Errorf("call d %+v, want expired", c)
	}
	// Each vote keeps which arguments it approved, so the card counts
	// them per set.
	if c := a.Call("e"); len(c.Votes) != 2 || c.Votes[0].ArgsKey != "-" || c.Votes[1].ArgsKey != "0a1b" {
		t.Errorf("call e votes %+v, want UA for the call's arguments and UB for edited ones", c.Votes)
	}
	rec.State = store.StateCancelled
	if c := storeadapter.ToBot(rec).Call("d"); c.State != bot.StateCancelled {
		t.Errorf("call d of a cancelled token: %s, want cancelled", c.State)
	}
}
