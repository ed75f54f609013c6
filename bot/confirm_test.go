package bot_test

import (
	"encoding/json"
	"testing"

	"github.com/slackapprove/slackbot/agentrunner"
	"github.com/slackapprove/slackbot/approval"
)

// TestCardConfirmFromRoute checks that a card posted for a route with
// confirm: true asks before Approve, as Slack sees the message, and that
// a card of another route does not.
func TestCardConfirmFromRoute(t *testing.T) {
	e := newOpenEnv(t)
	for _, c := range []agentrunner.ToolCallPart{call("p1", "deploy_api", `{"env":"prod"}`), call("r1", "issue_refund", `{"amount":500}`)} {
		if _, err := e.svc.Open(t.Context(), approval.Opening{
			Token: agentrunner.NewToken(), Origin: approval.Origin{Client: "support"},
			Requests: agentrunner.DeferredToolRequests{Approvals: []agentrunner.ToolCallPart{c}},
		}); err != nil {
			t.Fatal(err)
		}
	}
	confirms := func(channel string) (n int) {
		msgs := e.slack.Messages(channel)
		if len(msgs) != 1 {
			t.Fatalf("%s has %d cards, want 1", channel, len(msgs))
		}
		var blocks []struct {
			Elements []struct {
				ActionID string          `json:"action_id"`
				Confirm  json.RawMessage `json:"confirm"`
			} `json:"elements"`
		}
		if err := json.Unmarshal(msgs[0].BlocksJSON, &blocks); err != nil {
			t.Fatal(err)
		}
		for _, b := range blocks {
			for _, el := range b.Elements {
				if el.Confirm != nil {
					if el.ActionID != "approve" {
						t.Errorf("%s: %s asks for confirmation", channel, el.ActionID)
					}
					n++
				}
			}
		}
		return n
	}
	if n := confirms("C0GENERAL"); n != 1 {
		t.Errorf("the confirm: true route's card has %d confirm dialogs, want 1 (on Approve)", n)
	}
	if n := confirms("C0APPROVALS"); n != 0 {
		t.Errorf("a route without confirm has %d confirm dialogs", n)
	}
}
