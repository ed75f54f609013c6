package bot

import (
	"maps"
	"strings"
	"testing"

	"github.com/slack-go/slack"

	"github.com/slackapprove/slackbot/approval"
)

// statusText is the card's status line (expiry and quorum).
func statusText(t *testing.T, c Card) string {
	t.Helper()
	v := toJSON(t, slack.Blocks{BlockSet: ApprovalBlocks(c)})
	for _, b := range find(v, "context") {
		if id, _ := b["block_id"].(string); strings.HasPrefix(id, blockIDStatus+".") {
			return strings.Join(texts(b), "\n")
		}
	}
	return ""
}

// Votes for different arguments never add up, and the card says so.
func TestQuorumLineCountsPerArgumentSet(t *testing.T) {
	vote := func(user, key string) approval.Vote { return approval.Vote{By: user, At: decided, Key: key} }
	tests := []struct {
		name  string
		state approval.CallStatus
		votes []approval.Vote
		want  string
	}{
		{"no votes", approval.CallPending, nil, "0 of 2 approvals"},
		{"the call's own arguments", approval.CallPending, []approval.Vote{vote("U0ALICE", "")}, "1 of 2 approvals: <@U0ALICE>"},
		{"different arguments", approval.CallPending, []approval.Vote{vote("U0ALICE", "-"), vote("U0BOB", "d1gest")},
			"1 of 2 approvals for these arguments: <@U0ALICE> · 1 of 2 for edited arguments: <@U0BOB>"},
		{"only edited arguments", approval.CallPending, []approval.Vote{vote("U0BOB", "d1gest")}, "1 of 2 approvals for edited arguments: <@U0BOB>"},
		{"two edits", approval.CallPending, []approval.Vote{vote("U0BOB", "d1"), vote("U0CAROL", "d2")},
			"1 of 2 approvals for edited arguments #1: <@U0BOB> · 1 of 2 for edited arguments #2: <@U0CAROL>"},
		{"approved: who approved what runs", approval.CallApproved, []approval.Vote{vote("U0ALICE", "-"), vote("U0BOB", "d1"), vote("U0CAROL", "d1")},
			"2 of 2 approvals: <@U0BOB>, <@U0CAROL>"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := pendingCard()
			c.RequiredApprovals, c.Votes, c.State = 2, tt.votes, tt.state
			if tt.state == approval.CallApproved {
				c.DecidedBy, c.DecidedAt = "U0CAROL", decided
			}
			got := statusText(t, c)
			if !strings.Contains(got, tt.want) {
				t.Errorf("status line = %q, want it to contain %q", got, tt.want)
			}
			if tt.name == "different arguments" && strings.Contains(got, "2 of 2") {
				t.Errorf("status line = %q: two votes for different arguments counted as a quorum", got)
			}
		})
	}
}

// Block ids change with every update of a card (Slack asks for new ones),
// and stay the same when nothing changed.
func TestBlockIDsChangeOnEveryUpdate(t *testing.T) {
	ids := func(blocks []slack.Block) map[string]bool {
		out := map[string]bool{}
		walk(toJSON(t, slack.Blocks{BlockSet: blocks}), func(m map[string]any) {
			if id, ok := m["block_id"].(string); ok {
				out[id] = true
			}
		})
		return out
	}
	c := pendingCard()
	c.RequiredApprovals = 2
	c.Args = bigArgs(5_000) // a View all arguments button: the args block is named too
	steps := []func(c *Card){
		func(c *Card) { c.Votes = []approval.Vote{{By: "U0ALICE", At: decided}} },
		func(c *Card) { c.Votes = append(c.Votes, approval.Vote{By: "U0BOB", At: decided, Key: "d1"}) },
		func(c *Card) {
			c.Votes[1].Key = "-"
			c.State, c.DecidedBy, c.DecidedAt = approval.CallApproved, "U0BOB", decided
		},
		func(c *Card) { c.Outcome = &approval.Outcome{Status: OutcomeRan, Summary: "deleted"} },
	}
	prev := ids(ApprovalBlocks(c))
	if len(prev) < 3 {
		t.Fatalf("pending card names %d blocks, want the requester, arguments, status and actions", len(prev))
	}
	if again := ids(ApprovalBlocks(c)); !maps.Equal(again, prev) {
		t.Errorf("the same card rendered twice has block ids %v and %v", prev, again)
	}
	for i, step := range steps {
		step(&c)
		next := ids(ApprovalBlocks(c))
		for id := range next {
			if prev[id] {
				t.Errorf("update %d reuses block_id %q", i+1, id)
			}
		}
		minimal := ids(MinimalApprovalBlocks(c))
		for id := range minimal {
			if next[id] {
				t.Errorf("update %d: the minimal card reuses the full card's block_id %q", i+1, id)
			}
		}
		prev = next
	}
	if got, want := CardBlockID(BlockIDActions, pendingCard()), ""; got == want || !ids(ApprovalBlocks(pendingCard()))[got] {
		t.Errorf("CardBlockID(BlockIDActions) = %q, not a block id of the card", got)
	}
}
