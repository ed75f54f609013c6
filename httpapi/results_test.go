package httpapi_test

import (
	"net/http"
	"testing"
)

// An external call answered with model-retry keeps its kind through the
// Service's Decide: the agent's model is asked to try again.
func TestResultsModelRetry(t *testing.T) {
	e := newEnv(t, envOptions{})
	a := e.create(keyBilling, map[string]any{
		"calls": []map[string]any{{"tool_name": "fetch_report", "args": map[string]any{}, "tool_call_id": "x1"}},
	})
	resp := e.do(request{key: keyBilling, method: http.MethodPost, path: "/v1/approvals/" + a.Token + "/results",
		body: `{"calls":{"x1":{"kind":"model-retry","message":"the warehouse is down; try later"}}}`})
	if resp.status != http.StatusOK {
		t.Fatalf("results: got %d %s", resp.status, resp.body)
	}
	done := resp.approval(t)
	if done.Status != "resolved" || done.Calls[0].State != "failed" {
		t.Errorf("after a model-retry: got %s", resp.body)
	}
	jsonEqual(t, "results", done.Results,
		`{"calls":{"x1":{"message":"the warehouse is down; try later","kind":"model-retry"}},"approvals":{},"metadata":{},"answered_by":{"x1":"billing"}}`)
}
