package main

import (
	"net/http"
	"strings"
	"testing"

	"github.com/slackapprove/slackbot/bot"
	"github.com/slackapprove/slackbot/internal/apitest"
)

// A request of three calls, created through /v1, is decided by one click
// on "Approve all 3" on one of its cards: the API's results show the three
// calls approved by the approver, each with a receipt for exactly its
// arguments, every card says Approved, and the approver is told what they
// approved.
func TestAPIApproveAllOnACard(t *testing.T) {
	t.Parallel()
	x := apiE2E{env: newAPIEnv(t), doc: apitest.Load(t)}
	a := x.create(t, `{"approvals":[
		{"tool_name":"delete_file","args":{"path":"/tmp/a.csv"},"tool_call_id":"c1","part_kind":"tool-call"},
		{"tool_name":"issue_refund","args":{"amount":500},"tool_call_id":"c2","part_kind":"tool-call"},
		{"tool_name":"fetch_report","args":{"id":"r-7"},"tool_call_id":"c3","part_kind":"tool-call"}]}`)
	card := x.apiCard(a.Token, "c1")
	x.apiCard(a.Token, "c2")
	x.apiCard(a.Token, "c3")
	if !strings.Contains(string(card.BlocksJSON), "Approve all 3") {
		t.Fatalf("the first card offers no Approve all 3: %s", card.BlocksJSON)
	}
	if status := x.click(alice, card, bot.ActionIDApproveAll); status != http.StatusOK {
		t.Fatalf("click Approve all 3: got %d", status)
	}
	status, b := x.get(t, a.Token, "10s")
	done := decodeRequest(t, b)
	if status != http.StatusOK || done.Status != "resolved" || len(done.Calls) != 3 {
		t.Fatalf("after Approve all: got %d %s", status, b)
	}
	for i, c := range done.Calls {
		if c.State != "approved" || c.DecidedBy == nil || *c.DecidedBy != alice {
			t.Errorf("call %d is %s by %v, want approved by Alice", i, c.State, c.DecidedBy)
		}
	}
	rest := takeReceipt(t, x.srv.URL, done.Results, "c1", "delete_file", `{"path":"/tmp/a.csv"}`, a.Token)
	rest = takeReceipt(t, x.srv.URL, rest, "c2", "issue_refund", `{"amount":500}`, a.Token)
	rest = takeReceipt(t, x.srv.URL, rest, "c3", "fetch_report", `{"id":"r-7"}`, a.Token)
	jsonEqual(t, "results", rest, `{"calls":{},"approvals":{"c1":true,"c2":true,"c3":true},"metadata":{},"answered_by":{"c1":"U0ALICE","c2":"U0ALICE","c3":"U0ALICE"}}`)
	for _, id := range []string{"c1", "c2", "c3"} {
		c := x.apiCard(a.Token, id)
		x.waitFor("the card of "+id+" to say approved", func() bool {
			blocks := string(x.latest(c).BlocksJSON)
			return strings.Contains(blocks, "Approved") && !strings.Contains(blocks, bot.ActionIDApproveAll)
		})
	}
	x.waitFor("Alice to be told what she approved", func() bool {
		for _, m := range x.slack.Ephemerals(alice) {
			if strings.Contains(m.Text, "You approved 3 calls: `delete_file`, `issue_refund`, `fetch_report`.") {
				return true
			}
		}
		return false
	})
}
