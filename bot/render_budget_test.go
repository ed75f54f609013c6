package bot

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/slack-go/slack"

	"github.com/slackapprove/slackbot/agentrunner"
	"github.com/slackapprove/slackbot/approval"
)

// checkMessageText checks Slack's limit on a message's text, all blocks
// together (msg_blocks_too_long), counted as Slack counts: every text
// object's text.
func checkMessageText(t *testing.T, v any) {
	t.Helper()
	n := 0
	walk(v, func(m map[string]any) {
		if s, ok := m["text"].(string); ok && (m["type"] == "plain_text" || m["type"] == "mrkdwn") {
			n += textLen(s)
		}
	})
	if n > maxMessageText {
		t.Errorf("the message carries %d characters of block text, Slack refuses more than about %d (msg_blocks_too_long)", n, maxMessageText)
	}
}

// longestCard has every text a card can carry at its longest: 1 MiB of
// worst-case arguments and as many edited ones, 3,000-character
// confirmation, context, reason and answer, two hundred usergroups, fifty
// voters, and a batch over fifty calls.
func longestCard(t testing.TB) Card {
	c := pendingCard()
	long := strings.Repeat("é🙂 <&> long text ", 400)
	c.ToolName = strings.Repeat("t", 200)
	c.Args = worstArgs(1 << 20)
	c.Confirmation = long
	c.Context = long
	c.Route = strings.Repeat("r", 200)
	c.Requester = strings.Repeat("client", 50)
	c.RequesterIsUser = false
	for i := range 200 {
		c.Mentions = append(c.Mentions, fmt.Sprintf("S%08d", i))
	}
	c.RequiredApprovals = 60
	for i := range 50 {
		key := approval.OwnArgsKey
		if i%2 == 1 {
			key = fmt.Sprintf("edit%d", i%5)
		}
		c.Votes = append(c.Votes, approval.Vote{By: fmt.Sprintf("U%08d", i), At: decided, Key: key})
	}
	c.AllowDenyReason, c.AllowEdit = true, true
	c.Batch = &approval.BatchView{Count: 50}
	for range 50 {
		c.Batch.Tools = append(c.Batch.Tools, c.ToolName)
	}
	c.DecidedBy, c.DecidedAt = strings.Repeat("api-client", 30), decided
	c.Reason = long
	c.OverrideArgs = worstArgs(1 << 20)
	c.Answer = mustMarshal(t, long)
	c.Outcome = &approval.Outcome{Status: OutcomeRan, Summary: long}
	return c
}

// Every card, in every state, with every text at its longest, stays
// within the text Slack allows a message, shrinking the argument preview
// before anything else, and keeps its arguments and buttons.
func TestApprovalBlocksFitOneMessage(t *testing.T) {
	base := longestCard(t)
	cards := map[string]func(c *Card){
		"pending":                   func(c *Card) {},
		"quorum partial":            func(c *Card) { c.Answer, c.Reason, c.Outcome = nil, "", nil },
		"approved with outcome":     func(c *Card) { c.State = approval.CallApproved },
		"approved as requested":     func(c *Card) { c.State, c.OverrideArgs = approval.CallApproved, nil },
		"denied with a long reason": func(c *Card) { c.State = approval.CallDenied },
		"expired":                   func(c *Card) { c.State = approval.CallExpired },
		"cancelled":                 func(c *Card) { c.State = approval.CallCancelled },
		"failed":                    func(c *Card) { c.State = approval.CallFailed },
		"question answered":         func(c *Card) { c.Kind, c.State = agentrunner.KindQuestion, approval.CallAnswered },
		"external result": func(c *Card) {
			c.Kind, c.State, c.Answer = agentrunner.KindExternal, approval.CallAnswered, worstArgs(1<<20)
		},
		"question pending":           func(c *Card) { c.Kind = agentrunner.KindQuestion },
		"external pending":           func(c *Card) { c.Kind = agentrunner.KindExternal },
		"hostile approved (edited)":  func(c *Card) { *c = hostileCards(t)["approval/approved"] },
		"hostile question answered":  func(c *Card) { *c = hostileCards(t)["question/answered"] },
		"hostile pending (10 KB id)": func(c *Card) { *c = hostileCards(t)["approval/pending"] },
	}
	for name, edit := range cards {
		t.Run(name, func(t *testing.T) {
			c := base
			edit(&c)
			blocks := ApprovalBlocks(c)
			checkMessage(t, c, blocks)
			if n := blocksTextLen(blocks); n > maxMessageText {
				t.Errorf("blocksTextLen = %d, want at most %d", n, maxMessageText)
			}
			v := toJSON(t, slack.Blocks{BlockSet: blocks})
			all := strings.Join(texts(v), "\n")
			if !strings.Contains(all, "*Arguments") {
				t.Errorf("the arguments were left out:\n%.500s", all)
			}
			if c.State == approval.CallPending && c.Kind != agentrunner.KindExternal && len(find(v, "actions")) != 1 {
				t.Errorf("a pending card lost its buttons")
			}
			if c.State != approval.CallPending && len(find(v, "button")) != 0 {
				t.Errorf("a decided card has buttons")
			}
		})
	}
}

// The argument preview is what shrinks first: a card whose other texts
// are long but leave room keeps them whole and cuts its arguments.
func TestApprovalBlocksShrinkArgumentsFirst(t *testing.T) {
	c := pendingCard()
	c.Args = worstArgs(100_000)
	c.Confirmation = strings.Repeat("c", 2990)
	c.Context = strings.Repeat("x", 2990)
	c.Mentions = nil
	for i := range 130 {
		c.Mentions = append(c.Mentions, fmt.Sprintf("S%08d", i)) // 2,730 characters
	}
	blocks := ApprovalBlocks(c)
	checkMessage(t, c, blocks)
	v := toJSON(t, slack.Blocks{BlockSet: blocks})
	var args string
	for _, s := range texts(v) {
		switch {
		case strings.HasPrefix(s, "c"):
			if s != c.Confirmation {
				t.Errorf("confirmation cut to %d characters, want it whole", textLen(s))
			}
		case strings.HasPrefix(s, "Context: "):
			if s != "Context: "+c.Context {
				t.Errorf("context cut to %d characters, want it whole", textLen(s))
			}
		case strings.HasPrefix(s, "Approvers: "):
			if strings.HasSuffix(s, "…") {
				t.Errorf("usergroups cut, want every one")
			}
		case strings.HasPrefix(s, "*Arguments*"):
			args = s
		}
	}
	if n := textLen(args); n >= maxSectionText || n < 1000 {
		t.Errorf("arguments preview is %d characters, want it cut below %d to what the rest leaves", n, maxSectionText)
	}
	if len(find(v, "button")) == 0 || !strings.Contains(strings.Join(texts(v), "\n"), "View all arguments") {
		t.Errorf("a cut preview has no View all arguments button")
	}
}

// The minimal card Slack is sent after refusing the full one says how the
// call ended and has no buttons once decided; while pending it keeps the
// buttons and a way to see the arguments.
func TestMinimalApprovalBlocks(t *testing.T) {
	for name, c := range hostileCards(t) {
		t.Run(name, func(t *testing.T) {
			blocks := MinimalApprovalBlocks(c)
			checkMessage(t, c, blocks)
			v := toJSON(t, slack.Blocks{BlockSet: blocks})
			ids := actionIDs(v)
			pending := normalize(c).State == approval.CallPending
			switch {
			case !pending && len(ids) != 0:
				t.Errorf("decided card has buttons %v", ids)
			case pending && c.Kind == agentrunner.KindExternal && len(ids) != 0:
				t.Errorf("external call has buttons %v", ids)
			case pending && c.Kind == agentrunner.KindApproval && !slices.Equal(ids, []string{ActionIDApprove, ActionIDDeny, ActionIDDenyReason, ActionIDEdit, ActionIDViewArgs}):
				t.Errorf("pending card has buttons %v, want approve, deny, deny_reason, edit, view_args", ids)
			}
			if !pending {
				want := strings.SplitN(outcomeLine(normalize(c)), " ", 3)[:2]
				if all := strings.Join(texts(v), "\n"); !strings.Contains(all, strings.Join(want, " ")) {
					t.Errorf("minimal card does not say %q:\n%s", strings.Join(want, " "), all)
				}
			}
		})
	}
}
