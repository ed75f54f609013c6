package approval

import (
	"fmt"

	"github.com/slackapprove/slackbot/routing"
)

// Explain is the sentence a person is told when a decision of theirs did
// not take effect: one sentence per error code, whatever wraps the error,
// on every surface alike (a surface may lead it with a mark of its own, an
// emoji). call is the call decided on (or the decided call the store
// returned), route its route; either may be nil. A refusal's sentence ends
// in "Nothing changed."; a form shows the same words under its input.
func Explain(err error, call *Call, route *routing.Route, m Marks) string {
	switch ErrorCode(err) {
	case ENOTFOUND:
		return "slackbot no longer knows this request: it was decided or expired long ago. Nothing changed."
	case EEXPIRED:
		return "This request expired before a decision arrived. Nothing changed."
	case ECANCELLED:
		return "This request was cancelled. Nothing changed."
	case ETOOLATE:
		return "slackbot could not record your decision in time, so nothing changed. Try again in a moment."
	case EDECIDED, ERESOLVED, EFAILED:
		if call != nil && call.DecidedBy != "" {
			return fmt.Sprintf("This call was already %s by %s. Nothing changed.", call.Status, m.Person(call.DecidedBy))
		}
		return "This call was already decided. Nothing changed."
	case ENOTAPPROVER, ESELFAPPROVAL:
		// The error's own sentence names no one; who can decide does.
		return ErrorMessage(err) + " " + WhoCanDecide(route, m) + " Nothing changed."
	case EWRONGTEAM, EWRONGMESSAGE, ENOROUTE:
		return ErrorMessage(err) + " Nothing changed."
	case ESTEPUP:
		return "This approval needs your passkey: slackbot sends you a link to verify it's you. Nothing changed yet."
	case EINVALID, EPOLICY:
		// Edited arguments: shown under the form's input.
		return ErrorMessage(err)
	case EUNAVAILABLE:
		return "slackbot could not check whether you may decide this request; nothing changed. Try again in a moment."
	case EUNCONFIRMED:
		return "Your decision is not in effect yet: Redis's replicas have not confirmed it, so nothing acts on it. slackbot applies it as soon as they do, and this card will show it; if a Redis failover loses it, the buttons stay and you can click again."
	case ERECORDING:
		return "A decision on this request is being recorded (Redis's replicas have not confirmed it yet). Nothing changed. Try again in a moment."
	default:
		return "slackbot could not record your decision; nothing changed. Try again in a moment."
	}
}
