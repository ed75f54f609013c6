package store_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/slackapprove/slackbot/approval"
	"github.com/slackapprove/slackbot/store"
)

func TestAuditContent(t *testing.T) {
	e := newEnv(t)
	s := e.store()
	ctx := t.Context()
	a := e.create(t, s, requests("c1", "c2"), 1)
	if err := s.Refused(ctx, a.Token, "c1", "U0MALLORY", approval.ENOTAPPROVER, "not an approver of route files"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Decide(ctx, a.Token, approval.Decision{CallID: "c1", By: "U0ALICE", Action: approval.ActionApprove, OverrideArgs: json.RawMessage(`{"path": "safe.txt"}`)}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Decide(ctx, a.Token, deny("c2", "U0BOB", "keep it")); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Decide(ctx, a.Token, deny("c2", "U0CAROL", "")); err == nil {
		t.Fatal("a late click was accepted")
	}
	if err := s.AuditToolOutcome(ctx, a.Token, a.RunID, "c1", "delete_file", "success", `"deleted safe.txt"`); err != nil {
		t.Fatal(err)
	}
	got, err := s.ReadAudit(ctx, "", 0)
	if err != nil {
		t.Fatal(err)
	}
	now := e.clock.Now()
	ev := func(e store.AuditEvent) store.AuditEvent { e.Token, e.At = a.Token, now; return e }
	want := []store.AuditEvent{
		ev(store.AuditEvent{Type: store.AuditRequested, RunID: a.RunID, CallID: "c1", Tool: "delete_file", By: "U0REQUESTER", Decision: "approval", Args: `{"path":"c1.txt"}`, Route: "files"}),
		ev(store.AuditEvent{Type: store.AuditRequested, RunID: a.RunID, CallID: "c2", Tool: "delete_file", By: "U0REQUESTER", Decision: "approval", Args: `{"path":"c2.txt"}`, Route: "files"}),
		ev(store.AuditEvent{Type: store.AuditRefused, CallID: "c1", By: "U0MALLORY", Code: approval.ENOTAPPROVER, Reason: "not an approver of route files"}),
		ev(store.AuditEvent{Type: store.AuditDecided, RunID: a.RunID, CallID: "c1", Tool: "delete_file", By: "U0ALICE", Decision: "approved", Args: `{"path":"c1.txt"}`, Override: `{"path":"safe.txt"}`}),
		ev(store.AuditEvent{Type: store.AuditDecided, RunID: a.RunID, CallID: "c2", Tool: "delete_file", By: "U0BOB", Decision: "denied", Args: `{"path":"c2.txt"}`, Reason: "keep it"}),
		ev(store.AuditEvent{Type: store.AuditResolved, RunID: a.RunID, By: "U0BOB"}),
		ev(store.AuditEvent{Type: store.AuditRefused, CallID: "c2", By: "U0CAROL", Decision: "deny", Reason: "already decided"}),
		ev(store.AuditEvent{Type: store.AuditToolOutcome, RunID: a.RunID, CallID: "c1", Tool: "delete_file", Decision: "success", Detail: `"deleted safe.txt"`}),
	}
	if diff := cmp.Diff(want, got, cmpopts.IgnoreFields(store.AuditEvent{}, "ID"), cmpopts.EquateApproxTime(0)); diff != "" {
		t.Errorf("audit (-want +got):\n%s", diff)
	}

	// Paging: events after the third.
	page, err := s.ReadAudit(ctx, got[2].ID, 2)
	if err != nil {
		t.Fatal(err)
	}
	if len(page) != 2 || page[0].ID != got[3].ID || page[1].ID != got[4].ID {
		t.Errorf("page after %s: got %v, want events 4 and 5", got[2].ID, page)
	}
}

func TestAuditTrim(t *testing.T) {
	e := newEnv(t)
	const maxLen, n = 10, 1000
	e.opts.AuditMaxLen = maxLen
	s := e.store()
	for i := range n {
		if err := s.Refused(t.Context(), "tok", "c1", fmt.Sprint("U", i), approval.ENOTAPPROVER, "spam"); err != nil {
			t.Fatal(err)
		}
	}
	// MAXLEN ~ trims whole stream nodes (100 entries each by default), so
	// the stream keeps at least maxLen and less than maxLen plus a node.
	got := e.rdb.XLen(t.Context(), e.prefix+"audit").Val()
	if got < maxLen || got > maxLen+100 {
		t.Errorf("audit length after %d events: got %d, want within [%d, %d]", n, got, maxLen, maxLen+100)
	}
	evs, err := s.ReadAudit(t.Context(), "", 0)
	if err != nil {
		t.Fatal(err)
	}
	if last := evs[len(evs)-1].By; last != fmt.Sprint("U", n-1) {
		t.Errorf("newest event kept: got by %s, want U%d", last, n-1)
	}
}

// Each value copied into the audit stream is capped at 8 KiB, with a
// marker and on a UTF-8 boundary: a 1 MiB argument must not add 1 MiB to
// a stream that is capped by entries. The scripts and Audit cut alike;
// the record keeps the whole arguments.
func TestAuditCapsValues(t *testing.T) {
	e := newEnv(t)
	s := e.store()
	ctx := t.Context()
	// "é" is two bytes: the cut at 8192 falls inside one.
	big := `{"path":"` + strings.Repeat("é", 300<<10) + `"}`
	reqs := requests("c1")
	reqs.Approvals[0].Args = json.RawMessage(big)
	a := e.create(t, s, reqs, 1)
	if _, err := s.Decide(ctx, a.Token, approval.Decision{CallID: "c1", By: "U0ALICE", Action: approval.ActionApprove, OverrideArgs: json.RawMessage(big)}); err != nil {
		t.Fatal(err)
	}
	if err := s.AuditToolOutcome(ctx, a.Token, a.RunID, "c1", "delete_file", "success", big); err != nil {
		t.Fatal(err)
	}
	evs, err := s.ReadAudit(ctx, "", 0)
	if err != nil {
		t.Fatal(err)
	}
	marker := fmt.Sprintf("…[truncated: %d bytes]", len(big))
	var capped []string
	for _, ev := range evs {
		for _, v := range []string{ev.Args, ev.Override, ev.Detail} {
			if v != "" {
				capped = append(capped, v)
			}
		}
	}
	if len(capped) != 4 { // requested args, decided args and override, tool outcome
		t.Fatalf("got %d long values in the audit stream, want 4", len(capped))
	}
	for _, v := range capped {
		head, ok := strings.CutSuffix(v, marker)
		if !ok || len(head) > 8192 || len(head) < 8190 || !utf8.ValidString(head) || !strings.HasPrefix(big, head) {
			t.Errorf("audit value of %d bytes (ends %q); want a valid prefix of at most 8192 bytes and %q", len(v), v[max(len(v)-40, 0):], marker)
		}
	}
	rec, err := s.Get(ctx, a.Token)
	if err != nil {
		t.Fatal(err)
	}
	if c, _ := rec.Requests.Call("c1"); string(c.Args) != big {
		t.Errorf("the record's arguments were cut too: %d bytes, want %d", len(c.Args), len(big))
	}
}
