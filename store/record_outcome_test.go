package store_test

import (
	"testing"

	"github.com/slackapprove/slackbot/approval"
	"github.com/slackapprove/slackbot/store"
)

// A tool outcome is kept on its call, read back by every process, and
// audited; unknown tokens and calls are refused.
func TestSetOutcome(t *testing.T) {
	e := newEnv(t)
	s := e.store()
	a := e.create(t, s, requests("call_1", "call_2"), 1)
	if _, err := s.Decide(t.Context(), a.Token, approve("call_1", "U1")); err != nil {
		t.Fatal(err)
	}
	want := approval.Outcome{Status: "ran", Summary: "deleted a"}
	if err := s.SetOutcome(t.Context(), a.Token, "call_1", want); err != nil {
		t.Fatal(err)
	}
	got, err := e.otherProcess(t).Get(t.Context(), a.Token)
	if err != nil {
		t.Fatal(err)
	}
	if o := got.Calls[0].Outcome; o == nil || *o != want {
		t.Errorf("call_1 outcome %+v, want %+v", o, want)
	}
	if got.Calls[1].Outcome != nil {
		t.Errorf("call_2 has an outcome %+v", got.Calls[1].Outcome)
	}
	wantErr(t, "unknown call", s.SetOutcome(t.Context(), a.Token, "call_9", want), approval.ErrNotPending)
	wantErr(t, "unknown token", s.SetOutcome(t.Context(), "tok_unknown_0123456789abcdefghijklmnopqrstu", "call_1", want), approval.ErrNotFound)
	events, err := s.ReadAudit(t.Context(), "", 0)
	if err != nil {
		t.Fatal(err)
	}
	last := events[len(events)-1]
	if last.Type != store.AuditToolOutcome || last.CallID != "call_1" || last.RunID != a.RunID || last.Tool != "delete_file" || last.Decision != "ran" || last.Detail != "deleted a" {
		t.Errorf("last audit event %+v, want the tool outcome", last)
	}
}
