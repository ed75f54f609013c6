package bot

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/slack-go/slack"

	"github.com/slackapprove/slackbot/agentrunner"
	"github.com/slackapprove/slackbot/approval"
)

// alwaysAllowCards are Claude Code's Bash call with its always-allow
// rule on the card, and one whose four long rules do not fit a button.
func alwaysAllowCards() map[string]Card {
	c := pendingCard()
	c.ToolName, c.Confirmation = "Bash", "Run Bash: npm test --silent"
	c.Args = json.RawMessage(`{"command":"npm test --silent","description":"Run the tests"}`)
	c.Requester, c.RequesterIsUser, c.SourceChannel, c.Mentions = "billing", false, "", nil
	c.RequesterClaim = "Claude Code (/home/dev/shop)"
	c.AllowDenyReason = true
	c.AlwaysAllow, c.AlwaysAllowWhere = "Bash(npm test *)", "the project's local settings (.claude/settings.local.json)"
	long := c
	var rules []string
	for _, cmd := range []string{"npm", "pnpm", "yarn", "bun"} {
		rules = append(rules, "Bash("+cmd+" run test:integration -- --reporter=verbose "+strings.Repeat("&<x>", 40)+")")
	}
	long.AlwaysAllow = strings.Join(rules, ", ")
	return map[string]Card{"pending_always_allow": c, "pending_always_allow_long": long}
}

// TestAlwaysAllowTooLongToShow: a rule the card cannot show whole in one
// section is not offered.
func TestAlwaysAllowTooLongToShow(t *testing.T) {
	c := alwaysAllowCards()["pending_always_allow"]
	c.AlwaysAllow = "Bash(" + strings.Repeat("<", 800) + ")"
	blocks := ApprovalBlocks(c)
	checkMessage(t, c, blocks)
	if text := cardText(blocks); strings.Contains(text, ActionIDApproveAlways) || strings.Contains(text, "always allow") {
		t.Errorf("a rule the card cannot show whole is offered: %s", text)
	}
}

// TestAlwaysAllowCards: the card offers "Approve and always allow" with
// the rule in the agent's words, says above the buttons what it adds and
// where (the whole rule, escaped, however long the button had to cut
// it), and stays within Slack's limits.
func TestAlwaysAllowCards(t *testing.T) {
	for name, c := range alwaysAllowCards() {
		t.Run(name, func(t *testing.T) {
			blocks := ApprovalBlocks(c)
			checkMessage(t, c, blocks)
			checkGolden(t, name, marshalGolden(t, map[string]any{"text": ApprovalText(c), "blocks": slack.Blocks{BlockSet: blocks}}))
			var ids []string
			var always *slack.ButtonBlockElement
			for _, b := range blocks {
				if a, ok := b.(*slack.ActionBlock); ok {
					for _, el := range a.Elements.ElementSet {
						btn := el.(*slack.ButtonBlockElement)
						ids = append(ids, btn.ActionID)
						if btn.ActionID == ActionIDApproveAlways {
							always = btn
						}
					}
				}
			}
			if want := []string{ActionIDApprove, ActionIDDeny, ActionIDApproveAlways, ActionIDDenyReason}; !slices.Equal(ids, want) {
				t.Fatalf("buttons %v, want %v", ids, want)
			}
			label := "Approve and always allow " + c.AlwaysAllow
			if n := textLen(always.Text.Text); n > maxButtonText || (len(label) <= maxButtonText && always.Text.Text != label) {
				t.Errorf("the button says %q (%d characters), want %q within %d", always.Text.Text, n, label, maxButtonText)
			}
			text := cardText(blocks)
			if whole := strings.ReplaceAll(strings.ReplaceAll(strings.ReplaceAll(c.AlwaysAllow, "&", "&amp;"), "<", "&lt;"), ">", "&gt;"); !strings.Contains(text, whole) {
				t.Errorf("the card does not show the whole rule %q", c.AlwaysAllow)
			}
		})
	}
	plain := pendingCard()
	for _, ch := range plain.Choices() {
		if ch.Kind == approval.ChooseApproveAlways {
			t.Errorf("a card without a rule offers %+v", ch)
		}
	}
}

// cardText is the text of every text object of blocks.
func cardText(blocks []slack.Block) string {
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(blocks)
	return b.String()
}

// TestAlwaysAllowClick: "Approve and always allow" decides, through the
// Service, as an approval that always allows, recording the rule the
// request offered and no other; on a route that does not offer it, or
// by someone who is not an approver, nothing is recorded.
func TestAlwaysAllowClick(t *testing.T) {
	const rule = `{"type":"addRules","rules":[{"toolName":"Bash","ruleContent":"npm test *"}],"behavior":"allow","destination":"localSettings"}`
	setup := func(offer bool) func(*testConfig) {
		return func(tc *testConfig) {
			tc.Routes.Routes[0].OfferAlwaysAllow = offer
		}
	}
	for _, tt := range []struct {
		name   string
		offer  bool
		user   string
		record bool
	}{
		{"an approver", true, smApprover, true},
		{"a stranger", true, smStranger, false},
		{"a route without the offer", false, smApprover, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			e := newClickEnv(t, smRoute, setup(tt.offer))
			e.approvals.a.Origin = approval.Origin{Client: "billing", Name: "Claude Code (/home/dev/shop)"}
			e.approvals.a.Requests.Metadata = map[string]map[string]any{smCallID: {agentrunner.MetaAlwaysAllow: json.RawMessage(rule)}}
			e.click(t, tt.user, ActionIDApproveAlways)
			e.settle()
			ds := e.decisions()
			if !tt.record {
				if len(ds) != 0 {
					t.Errorf("recorded %+v, want nothing", ds)
				}
				if len(e.ephemerals(tt.user)) == 0 {
					t.Errorf("%s was not told why nothing happened", tt.user)
				}
				return
			}
			if len(ds) != 1 || !ds[0].AlwaysAllow || ds[0].Action != approval.ActionApprove {
				t.Fatalf("recorded %+v, want one approval that always allows", ds)
			}
			got, _ := json.Marshal(ds[0].Metadata[agentrunner.MetaAlwaysAllow])
			if string(got) != rule {
				t.Errorf("recorded the rule %s, want the one offered %s", got, rule)
			}
		})
	}
}
