package bot

import (
	"fmt"
	"strings"

	"github.com/slackapprove/slackbot/approval"
)

// originalArgs is the ArgsKey of votes for the call's own arguments.
const originalArgs = "-"

// voteSet is the votes for one set of arguments.
type voteSet struct {
	key    string
	voters []string
}

// voteSets groups a card's votes by the arguments they approve, the call's
// own first, then edited sets in the order of their first vote.
func voteSets(votes []approval.Vote) []voteSet {
	sets := []voteSet{{key: originalArgs}}
	index := map[string]int{originalArgs: 0}
	for _, v := range votes {
		key := v.Key
		if key == "" {
			key = originalArgs
		}
		i, ok := index[key]
		if !ok {
			i = len(sets)
			index[key] = i
			sets = append(sets, voteSet{key: key})
		}
		sets[i].voters = append(sets[i].voters, voter(v.By))
	}
	if len(sets[0].voters) == 0 && len(sets) > 1 {
		sets = sets[1:]
	}
	return sets
}

// quorumParts count the approvals of a call that needs several, per set of
// arguments: votes for different arguments never add up, and the card
// says so. "2 of 3 approvals: A, B" while only the call's own arguments
// have votes; "1 of 2 approvals for these arguments: A · 1 of 2 for edited
// arguments: B" once someone approved edited ones. An approved card shows
// who approved the arguments it runs with.
func quorumParts(c Card) []string {
	sets := voteSets(c.Votes)
	if c.State == approval.CallApproved {
		for _, s := range sets {
			if len(s.voters) >= c.RequiredApprovals {
				sets = []voteSet{s}
				break
			}
		}
	}
	onlyOriginal := len(sets) == 1 && sets[0].key == originalArgs
	parts := make([]string, 0, len(sets))
	edited := 0
	for i, s := range sets {
		var what string
		switch {
		case onlyOriginal || (c.State == approval.CallApproved && len(sets) == 1):
			what = " approvals"
		case s.key == originalArgs:
			what = " approvals for these arguments"
		default:
			edited++
			what = " for edited arguments"
			if countEdited(sets) > 1 {
				what = fmt.Sprintf(" for edited arguments #%d", edited)
			}
			if i == 0 {
				what = " approvals" + what
			}
		}
		part := fmt.Sprintf("%d of %d%s", len(s.voters), c.RequiredApprovals, what)
		if len(s.voters) > 0 {
			part += ": " + strings.Join(s.voters, ", ")
		}
		parts = append(parts, part)
	}
	return parts
}

func countEdited(sets []voteSet) int {
	n := 0
	for _, s := range sets {
		if s.key != originalArgs {
			n++
		}
	}
	return n
}
