package bot

import (
	"context"

	"github.com/slackapprove/slackbot/approval"
	"github.com/slackapprove/slackbot/routing"
)

// Explain turns an error from a click into the sentence the person sees:
// approval.Explain's sentence for the error's code, led by Slack's emoji
// for it; only a click too late for Slack's acknowledgement is told in
// words of Slack's own (tooLateText). This is the one place where errors
// become Slack replies. call is the call the click was on (or the decided
// call the store returned), route its route; either may be nil.
func Explain(err error, call *approval.Call, route *routing.Route) string {
	code := approval.ErrorCode(err)
	if code == approval.ETOOLATE {
		return tooLateText
	}
	return explainEmoji[code] + approval.Explain(err, call, route, refusalMarks{})
}

// explainEmoji leads the sentences of some error codes.
var explainEmoji = map[string]string{
	approval.EEXPIRED:      ":hourglass: ",
	approval.ECANCELLED:    ":no_entry_sign: ",
	approval.ENOTAPPROVER:  ":no_entry: ",
	approval.ESELFAPPROVAL: ":no_entry: ",
	approval.EWRONGTEAM:    ":no_entry: ",
	approval.EWRONGMESSAGE: ":no_entry: ",
	approval.ENOROUTE:      ":no_entry: ",
	approval.EUNCONFIRMED:  ":hourglass: ",
	approval.ERECORDING:    ":hourglass: ",
}

// explainLate is Explain, except when the acknowledgement budget ran out:
// then the person is told that, and that nothing changed.
func explainLate(ctx context.Context, err error, call *approval.Call, route *routing.Route) string {
	if pastBudget(ctx, err) {
		return tooLateText
	}
	return Explain(err, call, route)
}

// refusalMarks are the marks of an ephemeral reply: it names who decided
// and who may decide without letting anything else mention or link (Slack
// does not notify for mentions in ephemeral messages).
type refusalMarks struct{ cardMarks }

// Person mentions a user id; anything else (a policy, an API client's
// free text) is shown as text.
func (refusalMarks) Person(who string) string { return mentionOf(who) }

// Group mentions a usergroup by id.
func (refusalMarks) Group(id string) string { return "<!subteam^" + id + ">" }

func mentionOf(who string) string {
	if isUserID(who) {
		return "<@" + who + ">"
	}
	return EscapeText(who)
}

// WhoCanDecide names a route's approvers for a refusal message
// (approval.WhoCanDecide, mentioning users and usergroups by name).
func WhoCanDecide(route *routing.Route) string {
	return approval.WhoCanDecide(route, refusalMarks{})
}
