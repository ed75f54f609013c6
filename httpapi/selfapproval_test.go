package httpapi_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/slackapprove/slackbot/approval"
	"github.com/slackapprove/slackbot/httpapi"
	"github.com/slackapprove/slackbot/store"
)

// The key that opened a request answers its external calls, but neither
// approves nor denies its approvals where their route does not set
// allow_self_approval: 403 self_approval for the whole answer (call
// results in it included), nothing recorded, and each attempt in the
// audit stream naming the key. A person's click still decides the call.
func TestResultsRefuseSelfApproval(t *testing.T) {
	e := newEnv(t, envOptions{})
	a := e.create(keyBilling, map[string]any{
		"approvals": []map[string]any{{"tool_name": "delete_file", "args": map[string]any{"path": "/srv"}, "tool_call_id": "a1"}},
		"calls":     []map[string]any{{"tool_name": "fetch_report", "args": map[string]any{}, "tool_call_id": "x1"}},
	})
	path := "/v1/approvals/" + a.Token + "/results"
	bodies := []string{
		`{"approvals":{"a1":true}}`,
		`{"approvals":{"a1":false}}`,
		`{"approvals":{"a1":{"kind":"tool-approved","override_args":{"path":"/tmp"}}}}`,
		`{"approvals":{"a1":true},"calls":{"x1":{"rows":3}}}`,
	}
	for _, body := range bodies {
		resp := e.do(request{key: keyBilling, method: http.MethodPost, path: path, body: body})
		if got := resp.apiError(t).Error; resp.status != http.StatusForbidden || got.Code != httpapi.CodeSelfApproval || !strings.Contains(got.Message, "a1") {
			t.Errorf("%s: got %d %s, want 403 self_approval naming a1", body, resp.status, resp.body)
		}
	}
	now := e.do(request{key: keyBilling, method: http.MethodGet, path: "/v1/approvals/" + a.Token}).approval(t)
	if now.Status != "pending" || now.Calls[0].State != "pending" || now.Calls[1].State != "pending" || string(now.Results) != "null" {
		t.Fatalf("after the refused answers: got %+v, want everything pending, nothing recorded", now)
	}
	refusals := 0
	for _, ev := range e.auditOf(a.Token) {
		if ev.Type != store.AuditRefused {
			continue
		}
		refusals++
		if ev.By != "billing" || ev.CallID != "a1" || ev.Code != approval.ESELFAPPROVAL {
			t.Errorf("audited refusal %+v, want by billing, call a1, self_approval", ev)
		}
	}
	if refusals != len(bodies) {
		t.Errorf("the audit stream has %d refusals, want %d", refusals, len(bodies))
	}

	resp := e.do(request{key: keyBilling, method: http.MethodPost, path: path, body: `{"calls":{"x1":{"rows":3}}}`})
	if part := resp.approval(t); resp.status != http.StatusOK || part.Calls[1].State != "answered" || part.Calls[0].State != "pending" {
		t.Fatalf("the key answers its external call: got %d %s", resp.status, resp.body)
	}
	e.click(alice, e.card(a.Token, "a1"), approval.ActionApprove)
	done := e.do(request{key: keyBilling, method: http.MethodGet, path: "/v1/approvals/" + a.Token + "?wait=10s"}).approval(t)
	if done.Status != "resolved" || done.Calls[0].State != "approved" || *done.Calls[0].DecidedBy != alice || done.Calls[0].ByClient {
		t.Errorf("after the click: got %+v, want a1 approved by %s", done.Calls[0], alice)
	}
}

// On a route with allow_self_approval the key approves its own call, and
// the view says the key decided it (no receipt vouches for it).
func TestResultsSelfApprovalWhereTheRouteAllows(t *testing.T) {
	e := newEnv(t, envOptions{})
	a := e.create(keyBilling, map[string]any{"approvals": []map[string]any{
		{"tool_name": "sandbox_reset", "args": map[string]any{}, "tool_call_id": "s1"},
	}})
	resp := e.do(request{key: keyBilling, method: http.MethodPost, path: "/v1/approvals/" + a.Token + "/results", body: `{"approvals":{"s1":true}}`})
	if resp.status != http.StatusOK {
		t.Fatalf("self-approval on sandbox: got %d %s", resp.status, resp.body)
	}
	done := resp.approval(t)
	if done.Status != "resolved" || done.Calls[0].State != "approved" || *done.Calls[0].DecidedBy != "billing" || !done.Calls[0].ByClient {
		t.Errorf("after the key's approval: got %s", resp.body)
	}
	jsonEqual(t, "results", e.receiptless(t, done.Token, done.Results),
		`{"calls":{},"approvals":{"s1":true},"metadata":{},"answered_by":{"s1":"billing"}}`)
}
