package client_test

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/slackapprove/slackbot/client"
	"github.com/slackapprove/slackbot/internal/apitest"
)

// reportedView is /v1's answer once c1's outcome was reported.
const reportedView = `{"token":"tok_1","status":"resolved","created_at":"2026-01-02T03:04:05Z","expires_at":"2026-01-02T03:34:05Z","ended_at":"2026-01-02T03:05:00Z",` +
	`"requester":"api:billing (Ops <bot>)","context":"cleanup","calls":[{"tool_call_id":"c1","tool_name":"delete_path","kind":"approval","state":"approved",` +
	`"route":"deletions","decided_by":"U0ALICE","votes":1,"required":1,"by_client":false,"outcome":{"status":"not_run","summary":"refused"}}],` +
	`"results":{"calls":{},"approvals":{"c1":true},"metadata":{},"answered_by":{"c1":"U0ALICE"}}}`

// ReportOutcome sends what /v1 documents and decodes the outcome the
// answer shows; a refusal is an *Error with slackbot's code.
func TestReportOutcome(t *testing.T) {
	doc := apitest.Load(t)
	srv := fakeAPI(t, doc,
		exchange{method: "POST", path: "/v1/approvals/tok_1/outcomes", status: 200, answer: reportedView,
			body: `{"tool_call_id":"c1","ran":false,"error":"refused"}`},
		exchange{method: "POST", path: "/v1/approvals/tok_1/outcomes", status: 409, body: `{"tool_call_id":"c1","ran":true}`,
			answer: `{"error":{"code":"conflict","message":"call c1's outcome was reported already (not_run: refused); a report is kept as first made"}}`},
	)
	c := newClient(t, srv.URL)
	got, err := c.ReportOutcome(t.Context(), "tok_1", client.OutcomeReport{ToolCallID: "c1", Ran: false, Error: "refused"})
	if err != nil {
		t.Fatalf("ReportOutcome: %v", err)
	}
	call, _ := got.Call("c1")
	if diff := cmp.Diff(&client.Outcome{Status: "not_run", Summary: "refused"}, call.Outcome); diff != "" {
		t.Errorf("the reported outcome (-want +got):\n%s", diff)
	}
	_, err = c.ReportOutcome(t.Context(), "tok_1", client.OutcomeReport{ToolCallID: "c1", Ran: true})
	var refused *client.Error
	if !errors.As(err, &refused) || refused.Code != client.CodeConflict {
		t.Errorf("a different report: got %v, want a conflict", err)
	}
}
