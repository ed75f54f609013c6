package httpapi_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/slackapprove/slackbot/approval"
	"github.com/slackapprove/slackbot/store"
)

// outcomeOf returns the outcome the API shows for call id of a response's
// request.
func outcomeOf(t *testing.T, r response, id string) *approval.Outcome {
	t.Helper()
	var v struct {
		Calls []struct {
			ToolCallID string            `json:"tool_call_id"`
			Outcome    *approval.Outcome `json:"outcome"`
		} `json:"calls"`
	}
	if err := json.Unmarshal(r.body, &v); err != nil {
		t.Fatalf("decode: %v in %s", err, r.body)
	}
	for _, c := range v.Calls {
		if c.ToolCallID == id {
			return c.Outcome
		}
	}
	t.Fatalf("no call %s in %s", id, r.body)
	return nil
}

// toolOutcomes returns the tool_outcome audit events of token.
func (e *env) toolOutcomes(token string) []store.AuditEvent {
	var out []store.AuditEvent
	for _, ev := range e.auditOf(token) {
		if ev.Type == store.AuditToolOutcome {
			out = append(out, ev)
		}
	}
	return out
}

// testReportOutcomeNotRun: an approved call its program did not run (its framework refused the
// approved input) is reported by the key that opened the request: the API
// shows the outcome, the card says the tool did not run and why, and the
// audit stream has the report under the key's name. The report stands:
// the same report again changes nothing, a different one is a conflict.
func testReportOutcomeNotRun(t *testing.T) {
	e := newEnv(t, envOptions{})
	a := e.create(keyBilling, map[string]any{"approvals": []map[string]any{
		{"tool_name": "delete_file", "args": map[string]any{"path": "/srv"}, "tool_call_id": "d1"},
	}})
	c := e.card(a.Token, "d1")
	e.click(alice, c, approval.ActionApprove)
	path := "/v1/approvals/" + a.Token + "/outcomes"
	why := "Invalid input for tool delete_file: Approved tool input does not match the validated schema output."
	report := map[string]any{"tool_call_id": "d1", "ran": false, "error": why}

	resp := e.do(request{key: keyBilling, method: http.MethodPost, path: path, body: report})
	if resp.status != http.StatusOK {
		t.Fatalf("report: got %d %s, want 200", resp.status, resp.body)
	}
	want := approval.Outcome{Status: approval.OutcomeNotRun, Summary: why}
	if got := outcomeOf(t, resp, "d1"); got == nil || *got != want {
		t.Errorf("the API shows outcome %+v, want %+v", got, want)
	}
	var shown approval.Call
	e.waitFor("the card to show the outcome", func() bool {
		var ok bool
		shown, ok = e.shown(c)
		return ok && shown.Outcome != nil
	})
	if shown.Status != approval.CallApproved || *shown.Outcome != want {
		t.Errorf("the card shows %s with outcome %+v, want approved with %+v", shown.Status, shown.Outcome, want)
	}

	again := e.do(request{key: keyBilling, method: http.MethodPost, path: path, body: report})
	if again.status != http.StatusOK || *outcomeOf(t, again, "d1") != want {
		t.Errorf("the same report again: got %d %s, want 200 and the first", again.status, again.body)
	}
	other := e.do(request{key: keyBilling, method: http.MethodPost, path: path, body: map[string]any{"tool_call_id": "d1", "ran": true}})
	if msg := other.apiError(t).Error.Message; other.status != http.StatusConflict || !strings.Contains(msg, "not_run") {
		t.Errorf("a different report: got %d %s, want 409 naming the first", other.status, other.body)
	}
	got := e.do(request{key: keyBilling, method: http.MethodGet, path: "/v1/approvals/" + a.Token})
	if o := outcomeOf(t, got, "d1"); o == nil || *o != want {
		t.Errorf("after the repeats the outcome is %+v, want the first, %+v", o, want)
	}

	evs := e.toolOutcomes(a.Token)
	if len(evs) != 1 {
		t.Fatalf("audit: got %d tool_outcome events, want 1 (the first report): %+v", len(evs), evs)
	}
	if ev := evs[0]; ev.By != "billing" || ev.CallID != "d1" || ev.Tool != "delete_file" || ev.Decision != approval.OutcomeNotRun || ev.Detail != why {
		t.Errorf("audit: got %+v, want not_run of d1 by billing with the error", ev)
	}
}

// testReportOutcomeRanAndFailed: a call that ran, and one whose tool failed.
func testReportOutcomeRanAndFailed(t *testing.T) {
	e := newEnv(t, envOptions{})
	a := e.create(keyBilling, map[string]any{"approvals": []map[string]any{
		{"tool_name": "delete_file", "args": map[string]any{"path": "/a"}, "tool_call_id": "r1"},
		{"tool_name": "delete_file", "args": map[string]any{"path": "/b"}, "tool_call_id": "f1"},
	}})
	e.click(alice, e.card(a.Token, "r1"), approval.ActionApprove)
	e.click(alice, e.card(a.Token, "f1"), approval.ActionApprove)
	path := "/v1/approvals/" + a.Token + "/outcomes"
	for id, tc := range map[string]struct {
		body map[string]any
		want approval.Outcome
	}{
		"r1": {map[string]any{"tool_call_id": "r1", "ran": true}, approval.Outcome{Status: approval.OutcomeRan}},
		"f1": {map[string]any{"tool_call_id": "f1", "ran": true, "error": "permission denied"}, approval.Outcome{Status: approval.OutcomeFailed, Summary: "permission denied"}},
	} {
		resp := e.do(request{key: keyBilling, method: http.MethodPost, path: path, body: tc.body})
		if o := outcomeOf(t, resp, id); resp.status != http.StatusOK || o == nil || *o != tc.want {
			t.Errorf("%s: got %d %s, want 200 with %+v", id, resp.status, resp.body, tc.want)
		}
	}
}

// testReportOutcomeRefusals: who may report, on which call, and what: another key's request is not
// found (it cannot be told from an unknown token), only an approved call
// takes a report, and the body is bounded and checked.
func testReportOutcomeRefusals(t *testing.T) {
	e := newEnv(t, envOptions{})
	a := e.create(keyBilling, map[string]any{"approvals": []map[string]any{
		{"tool_name": "delete_file", "args": map[string]any{"path": "/a"}, "tool_call_id": "ok1"},
		{"tool_name": "delete_file", "args": map[string]any{"path": "/b"}, "tool_call_id": "no1"},
		{"tool_name": "delete_file", "args": map[string]any{"path": "/c"}, "tool_call_id": "wait1"},
	}})
	e.click(alice, e.card(a.Token, "ok1"), approval.ActionApprove)
	e.deny(alice, e.card(a.Token, "no1"), "No.")
	path := "/v1/approvals/" + a.Token + "/outcomes"
	notRun := func(id string) map[string]any {
		return map[string]any{"tool_call_id": id, "ran": false, "error": "refused"}
	}
	for _, tc := range []struct {
		name   string
		key    string
		path   string
		body   any
		status int
		says   string
	}{
		{"another key's request", keySupport, path, notRun("ok1"), http.StatusNotFound, ""},
		{"an unknown token", keyBilling, "/v1/approvals/nosuchtoken/outcomes", notRun("ok1"), http.StatusNotFound, ""},
		{"no key", "", path, notRun("ok1"), http.StatusUnauthorized, ""},
		{"a call the request lacks", keyBilling, path, notRun("other"), http.StatusBadRequest, "other"},
		{"a denied call", keyBilling, path, notRun("no1"), http.StatusConflict, "denied"},
		{"a pending call", keyBilling, path, notRun("wait1"), http.StatusConflict, "wait1"},
		{"ran missing", keyBilling, path, map[string]any{"tool_call_id": "ok1"}, http.StatusBadRequest, "ran is required"},
		{"not run without why", keyBilling, path, map[string]any{"tool_call_id": "ok1", "ran": false}, http.StatusBadRequest, "error is required"},
		{"no call", keyBilling, path, map[string]any{"ran": true}, http.StatusBadRequest, "tool_call_id"},
		{"an unknown field", keyBilling, path, map[string]any{"tool_call_id": "ok1", "ran": true, "status": "ran"}, http.StatusBadRequest, "status"},
		{"an error too long", keyBilling, path, map[string]any{"tool_call_id": "ok1", "ran": false, "error": strings.Repeat("é", approval.MaxOutcomeSummary+1)}, http.StatusBadRequest, "at most 1000"},
		{"not JSON", keyBilling, path, "ran=false", http.StatusBadRequest, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp := e.do(request{key: tc.key, method: http.MethodPost, path: tc.path, body: tc.body})
			if resp.status != tc.status {
				t.Fatalf("got %d %s, want %d", resp.status, resp.body, tc.status)
			}
			if msg := resp.apiError(t).Error.Message; !strings.Contains(msg, tc.says) {
				t.Errorf("got %q, want it to say %q", msg, tc.says)
			}
		})
	}
	if evs := e.toolOutcomes(a.Token); len(evs) != 0 {
		t.Errorf("refused reports were recorded: %+v", evs)
	}
	got := e.do(request{key: keyBilling, method: http.MethodGet, path: "/v1/approvals/" + a.Token})
	for _, id := range []string{"ok1", "no1", "wait1"} {
		if o := outcomeOf(t, got, id); o != nil {
			t.Errorf("%s has outcome %+v after refused reports", id, o)
		}
	}
}
