package bot

import (
	"strings"
	"testing"

	"github.com/slack-go/slack"

	"github.com/slackapprove/slackbot/approval"
)

// A batch over many calls with long, hostile tool names keeps its buttons
// and confirm dialogs within Slack's limits, on one line, on the card and
// on the Home; a card alone in its request offers no batch.
func TestBatchButtonsFitSlack(t *testing.T) {
	c := pendingCard()
	tools := make([]string, 50)
	for i := range tools {
		tools[i] = strings.Repeat("t\n<!here>", 20)
	}
	c.Batch = &approval.BatchView{Count: len(tools), Tools: tools}
	for name, v := range map[string]any{
		"card": toJSON(t, slack.Blocks{BlockSet: ApprovalBlocks(c)}),
		"home": toJSON(t, HomeView(HomeContent{Waiting: []HomeItem{{Card: c}}}).Blocks),
	} {
		checkLimits(t, v)
		var labels []string
		for _, b := range find(v, "button") {
			labels = append(labels, b["text"].(map[string]any)["text"].(string))
			if d, ok := b["confirm"].(map[string]any); ok {
				if text := d["text"].(map[string]any)["text"].(string); strings.Contains(text, "\n") || !strings.HasSuffix(text, "…") {
					t.Errorf("%s: the dialog's text %q has line breaks or is not cut where it is too long", name, text)
				}
			}
		}
		if !strings.Contains(strings.Join(labels, "|"), "Approve all 50|Deny all 50") {
			t.Errorf("%s: buttons %q, want Approve all 50 and Deny all 50", name, labels)
		}
	}
	c.Batch = nil
	for _, b := range find(toJSON(t, slack.Blocks{BlockSet: ApprovalBlocks(c)}), "button") {
		if id := b["action_id"]; id == ActionIDApproveAll || id == ActionIDDenyAll {
			t.Errorf("a card with no batch offers %v", id)
		}
	}
}
