package httpapi_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/slackapprove/slackbot/httpapi"
)

// override_args pass the route's auto_deny as an edit in Slack does:
// with `auto_deny: args.amount > 10000` on a route where the key may
// approve its own calls, a $500 transfer approved with override_args of
// 50,000 is refused with the reason, and nothing changes; override_args
// the policy allows are recorded.
func TestOverrideArgsMustPassAutoDeny(t *testing.T) {
	e := newEnv(t, envOptions{})
	a := e.create(keyBilling, map[string]any{"approvals": []map[string]any{
		{"tool_name": "sandbox_transfer", "args": map[string]any{"amount": 500}, "tool_call_id": "r1"},
	}})
	if a.Status != "pending" {
		t.Fatalf("a $500 refund: got %s, want pending", a.Status)
	}
	results := "/v1/approvals/" + a.Token + "/results"
	for _, body := range []string{
		`{"approvals":{"r1":{"kind":"tool-approved","override_args":{"amount":50000}}}}`,
		`{"approvals":{"r1":{"kind":"tool-approved","override_args":"{\"amount\":10001}"}}}`,
		// The policy cannot evaluate an edit whose amount is no number: refused.
		`{"approvals":{"r1":{"kind":"tool-approved","override_args":{"amount":"lots"}}}}`,
	} {
		resp := e.do(request{key: keyBilling, method: http.MethodPost, path: results, body: body})
		if resp.status != http.StatusBadRequest || resp.apiError(t).Error.Code != httpapi.CodeInvalidRequest ||
			!strings.Contains(resp.apiError(t).Error.Message, `"sandbox" route's policy`) {
			t.Errorf("%s: got %d %s, want 400 invalid_request with the policy's reason", body, resp.status, resp.body)
		}
	}
	if got := e.do(request{key: keyBilling, method: http.MethodGet, path: "/v1/approvals/" + a.Token}).approval(t); got.Status != "pending" {
		t.Fatalf("refused overrides changed the token: %s", got.Status)
	}
	resp := e.do(request{key: keyBilling, method: http.MethodPost, path: results,
		body: `{"approvals":{"r1":{"kind":"tool-approved","override_args":{"amount":600}}}}`})
	if resp.status != http.StatusOK {
		t.Fatalf("an override within policy: got %d %s", resp.status, resp.body)
	}
	done := resp.approval(t)
	jsonEqual(t, "results", e.receiptless(t, done.Token, done.Results),
		`{"calls":{},"approvals":{"r1":{"override_args":{"amount":600},"kind":"tool-approved"}},"metadata":{},"answered_by":{"r1":"billing"}}`)
}
