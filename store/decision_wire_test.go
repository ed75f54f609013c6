package store_test

import (
	"encoding/json"
	"testing"

	"github.com/slackapprove/slackbot/agentrunner"
	"github.com/slackapprove/slackbot/approval"
	"github.com/slackapprove/slackbot/receipt"
)

// A decision is kept in Redis in the wire form the previous version wrote
// (field c<i>.res, Pydantic AI's ApprovalResult or CallResult, and c<i>.md,
// the results metadata given with it), so old and new replicas share
// records in a rolling deploy; a read decodes it once into the typed
// decision, and the results handed out from it are what they were.
func TestDecisionsKeepTheirWireForm(t *testing.T) {
	e := newEnv(t)
	s := e.store()
	reqs := requests("ok", "edited", "no")
	reqs.Calls = []agentrunner.ToolCallPart{
		{ToolName: "ask_user", Args: json.RawMessage(`{}`), ToolCallID: "q"},
		{ToolName: "run_job", Args: json.RawMessage(`{}`), ToolCallID: "x"},
	}
	reqs.Metadata = map[string]map[string]any{"x": {"external": true}}
	a := e.create(t, s, reqs, 1)
	for _, d := range []approval.Decision{
		{CallID: "ok", By: "UA", Action: approval.ActionApprove, Metadata: map[string]any{"note": "kept", receipt.MetadataKey: "forged"}},
		{CallID: "edited", By: "UA", Action: approval.ActionApprove, OverrideArgs: json.RawMessage(`{"path":"safe.txt"}`)},
		{CallID: "no", By: "UB", Action: approval.ActionDeny, Reason: "Not on Fridays."},
		{CallID: "q", By: "UA", Action: approval.ActionAnswer, Answer: json.RawMessage(`"blue"`)},
		{CallID: "x", By: "UA", Action: approval.ActionFail, Reason: "the warehouse is down"},
	} {
		if _, err := s.Decide(t.Context(), a.Token, d); err != nil {
			t.Fatalf("decide %s: %v", d.CallID, err)
		}
	}
	key := e.prefix + "a:" + a.Token
	for field, want := range map[string]string{
		"c1.res": `true`,
		"c2.res": `{"override_args":{"path":"safe.txt"},"kind":"tool-approved"}`,
		"c3.res": `{"message":"Not on Fridays.","kind":"tool-denied"}`,
		"c4.res": `"blue"`,
		"c5.res": `{"message":"the warehouse is down","kind":"tool-failed"}`,
		"c1.md":  `{"note":"kept","slackbot_receipt":"forged"}`,
	} {
		if got := e.rdb.HGet(t.Context(), key, field).Val(); got != want {
			t.Errorf("%s in Redis: %s, want %s", field, got, want)
		}
	}
	got, err := s.Get(t.Context(), a.Token)
	if err != nil {
		t.Fatal(err)
	}
	for id, want := range map[string]approval.Action{"ok": approval.ActionApprove, "edited": approval.ActionApprove, "no": approval.ActionDeny, "q": approval.ActionAnswer, "x": approval.ActionFail} {
		if c := got.Call(id); c.Action != want || !c.Decided() {
			t.Errorf("call %s read as %s (decided %v), want %s", id, c.Action, c.Decided(), want)
		}
	}
	if c := got.Call("x"); c.Reason != "the warehouse is down" || c.Status != approval.CallFailed {
		t.Errorf("call x read as %s %q, want failed with the message", c.Status, c.Reason)
	}
	// A read signs nothing: the metadata is the decision's, as recorded.
	if md := got.Call("ok").Metadata; md["note"] != "kept" || md[receipt.MetadataKey] != "forged" {
		t.Errorf("the read record's metadata: %v, want the decision's as given", md)
	}
	jsonEqual(t, "results handed out", mustJSON(t, got.Results(nil)), `{
		"approvals": {"ok": true, "edited": {"override_args": {"path": "safe.txt"}, "kind": "tool-approved"},
			"no": {"message": "Not on Fridays.", "kind": "tool-denied"}},
		"calls": {"q": "blue", "x": {"message": "the warehouse is down", "kind": "tool-failed"}},
		"metadata": {"ok": {"note": "kept"}},
		"answered_by": {"ok": "UA", "edited": "UA", "no": "UB", "q": "UA", "x": "UA"}
	}`)

	// Shorter wire forms than this version writes (Pydantic AI's false
	// for a denial, a retry) read too.
	if err := e.rdb.HSet(t.Context(), key, "c3.res", `false`, "c5.res", `{"message":"try later","kind":"model-retry"}`).Err(); err != nil {
		t.Fatal(err)
	}
	old, err := s.Get(t.Context(), a.Token)
	if err != nil {
		t.Fatal(err)
	}
	if c := old.Call("no"); c.Action != approval.ActionDeny || c.Reason != agentrunner.DefaultDenialMessage {
		t.Errorf("a denial stored as false: %s %q, want denied with the default message", c.Action, c.Reason)
	}
	res := old.Results(nil)
	if r := res.Calls["x"]; old.Call("x").Action != approval.ActionRetry || !r.Retry || r.Message != "try later" {
		t.Errorf("a retry: call %+v, handed out as %+v", old.Call("x"), r)
	}
	// A record whose decision cannot be read is an error, not a call
	// silently undecided.
	if err := e.rdb.HSet(t.Context(), key, "c1.res", `{"kind":"tool-maybe"}`).Err(); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Get(t.Context(), a.Token); err == nil {
		t.Error("Get of a record with an unreadable decision: no error")
	}
}
