package bot

import (
	"context"
	"fmt"
	"strings"

	"github.com/slackapprove/slackbot/approval"
	"github.com/slackapprove/slackbot/routing"
)

// couldNotCheckText is what a person is told when the approvers of a route
// could not be learnt (a usergroup lookup failed).
const couldNotCheckText = "slackbot could not check whether you may decide this request; nothing changed. Try again in a moment."

// unconfirmedText is what a person is told when Redis's replicas did not
// confirm their decision in time (REDIS_WAIT_REPLICAS): it is held, with
// no effect, until they do; clicking again is safe.
const unconfirmedText = ":hourglass: Your decision is not in effect yet: Redis's replicas have not confirmed it, so nothing acts on it. slackbot applies it as soon as they do, and this card will show it; if a Redis failover loses it, the buttons stay and you can click again."

// recordingText is what a person is told while another decision on the
// request waits for Redis's replicas.
const recordingText = ":hourglass: A decision on this request is being recorded (Redis's replicas have not confirmed it yet). Nothing changed. Try again in a moment."

// Explain turns an error from a click into the sentence the person sees:
// one sentence per approval error code, whatever wraps the error. This is
// the one place where errors become Slack replies. call is the call the
// click was on (or the decided call the store returned), route its route;
// either may be nil. A refusal's sentence ends in "Nothing changed."; a
// form shows the same words under its input.
func Explain(err error, call *approval.Call, route *routing.Route) string {
	switch approval.ErrorCode(err) {
	case approval.ENOTFOUND:
		return "slackbot no longer knows this request: it was decided or expired long ago. Nothing changed."
	case approval.EEXPIRED:
		return ":hourglass: This request expired before a decision arrived. Nothing changed."
	case approval.ECANCELLED:
		return ":no_entry_sign: This request was cancelled. Nothing changed."
	case approval.ETOOLATE:
		return tooLateText
	case approval.EDECIDED, approval.ERESOLVED, approval.EFAILED:
		if call != nil && call.DecidedBy != "" {
			return fmt.Sprintf("This call was already %s by %s. Nothing changed.", call.Status, mentionOf(call.DecidedBy))
		}
		return "This call was already decided. Nothing changed."
	case approval.ENOTAPPROVER, approval.ESELFAPPROVAL:
		// The Service's sentence has no Slack markup; who can decide does.
		return ":no_entry: " + approval.ErrorMessage(err) + " " + WhoCanDecide(route) + " Nothing changed."
	case approval.EWRONGTEAM, approval.EWRONGMESSAGE, approval.ENOROUTE:
		return ":no_entry: " + approval.ErrorMessage(err) + " Nothing changed."
	case approval.EINVALID, approval.EPOLICY:
		// Edited arguments: shown under the form's input.
		return approval.ErrorMessage(err)
	case approval.EUNAVAILABLE:
		return couldNotCheckText
	case approval.EUNCONFIRMED:
		return unconfirmedText
	case approval.ERECORDING:
		return recordingText
	default:
		return "slackbot could not record your decision; nothing changed. Try again in a moment."
	}
}

// explainLate is Explain, except when the acknowledgement budget ran out:
// then the person is told that, and that nothing changed.
func explainLate(ctx context.Context, err error, call *approval.Call, route *routing.Route) string {
	if pastBudget(ctx, err) {
		return tooLateText
	}
	return Explain(err, call, route)
}

func mentionOf(who string) string {
	if isUserID(who) {
		return "<@" + who + ">"
	}
	// Anything else (a policy, an API client's free text) is shown as
	// text: it must not mention or link anything.
	return EscapeText(who)
}

// WhoCanDecide names a route's approvers for a refusal message. It mentions
// users and usergroups by name without notifying them (Slack does not
// notify for mentions in ephemeral messages).
func WhoCanDecide(route *routing.Route) string {
	if route == nil {
		return "Nobody is listed as an approver."
	}
	var who []string
	for _, u := range route.Users {
		who = append(who, "<@"+u+">")
	}
	for _, g := range route.Usergroups {
		who = append(who, "<!subteam^"+g+">")
	}
	if len(who) == 0 {
		return "Nobody is listed as an approver."
	}
	return "Approvers: " + strings.Join(who, ", ") + "."
}
