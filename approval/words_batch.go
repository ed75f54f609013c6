package approval

import (
	"strconv"
	"strings"

	"github.com/slackapprove/slackbot/routing"
)

// The words of a batch decision: its confirmation, and what the person is
// told it did (BatchWords).

func batchCount(b *BatchView) int {
	if b == nil {
		return 0
	}
	return b.Count
}

// BatchConfirmWords are the "are you sure?" of ChooseApproveAll or
// ChooseDenyAll: its title, its body naming the calls it covers (tools
// through m.Name), and its answers.
func BatchConfirmWords(c Choice, m Marks) (title, text, yes, no string) {
	n := strconv.Itoa(batchCount(c.Batch))
	verb, does, yes := "Approve", "Approves", ChoiceLabel(c)
	if c.Kind == ChooseDenyAll {
		verb, does = "Deny", "Denies"
	}
	var tools []string
	if c.Batch != nil {
		for _, t := range c.Batch.Tools {
			tools = append(tools, m.Name(t))
		}
	}
	title = verb + " all " + n + " pending calls?"
	// The tools last: a surface that must cut the text cuts the list.
	text = does + " each pending call of this request that you may decide, as a click on its own card would; those you may not decide stay pending, and you are told which. The " +
		n + " calls: " + strings.Join(tools, ", ") + "."
	return title, text, yes, "Cancel"
}

// BatchWords say what a batch did, for the person who clicked: what was
// approved or denied, where only their vote counted, and what was left
// and why (each left call's refusal, or who decided it first). route
// gives a call's route, for who may decide it; nil: none known.
func BatchWords(b *Batch, route func(name string) *routing.Route, m Marks) string {
	var done, voted []string
	for _, bc := range b.Decided {
		if bc.Res != nil && bc.Res.Call != nil && bc.Res.Call.Status == CallPending {
			voted = append(voted, m.Name(bc.Tool)+" ("+strconv.Itoa(bc.Res.Votes)+" of "+strconv.Itoa(max(bc.Res.Required, 1))+" approvals)")
			continue
		}
		done = append(done, m.Name(bc.Tool))
	}
	verb := "✅ You approved"
	if b.Action == ActionDeny {
		verb = "❌ You denied"
	}
	var lines []string
	if len(done) > 0 {
		lines = append(lines, verb+" "+count(len(done), "call")+": "+strings.Join(done, ", ")+".")
	}
	if len(voted) > 0 {
		lines = append(lines, "🗳️ Your approval counted toward "+count(len(voted), "call")+" that "+
			plural(len(voted), "needs", "need")+" more approvers: "+strings.Join(voted, ", ")+".")
	}
	if len(done)+len(voted) == 0 {
		lines = append(lines, "Nothing changed.")
	}
	if len(b.Left) > 0 {
		lines = append(lines, "Left pending ("+strconv.Itoa(len(b.Left))+"):")
		for _, bc := range b.Left {
			var r *routing.Route
			if route != nil && bc.Call != nil {
				r = route(bc.Call.Route)
			}
			lines = append(lines, "• "+m.Name(bc.Tool)+" — "+leftWhy(bc, r, m))
		}
	}
	return strings.Join(lines, "\n")
}

// leftWhy says why a batch left a call: the refusal's sentence with who
// may decide it, who decided it first, or what went wrong.
func leftWhy(bc BatchCall, route *routing.Route, m Marks) string {
	switch ErrorCode(bc.Err) {
	case ENOTAPPROVER, ESELFAPPROVAL:
		return ErrorMessage(bc.Err) + " " + WhoCanDecide(route, m)
	case EDECIDED, ERESOLVED:
		if bc.Res != nil && bc.Res.Call != nil && bc.Res.Call.Status == CallPending {
			return "your approval was counted already."
		}
		if bc.Res != nil && bc.Res.Call != nil && bc.Res.Call.DecidedBy != "" {
			return "already " + string(bc.Res.Call.Status) + " by " + m.Person(bc.Res.Call.DecidedBy) + "."
		}
		return "already decided."
	case ETOOLATE:
		return "not recorded: time ran out. Click again to decide it."
	case EINTERNAL:
		return "slackbot could not confirm whether this one was recorded; its card shows every decision."
	case ENOROUTE, EWRONGMESSAGE:
		return ErrorMessage(bc.Err)
	}
	var call *Call
	if bc.Res != nil {
		call = bc.Res.Call
	}
	return strings.TrimSuffix(Explain(bc.Err, call, route, m), " Nothing changed.")
}

func count(n int, noun string) string {
	return strconv.Itoa(n) + " " + plural(n, noun, noun+"s")
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
