package bot

import (
	"context"

	"github.com/slackapprove/slackbot/approval"
)

// batchAction is the decision of an "Approve all" or "Deny all" button.
func batchAction(actionID string) approval.Action {
	if actionID == ActionIDDenyAll {
		return approval.ActionDeny
	}
	return approval.ActionApprove
}

// decideAll records a person's "Approve all" or "Deny all" through the
// Service (approval.Service.DecideAll: each pending call of the request
// decided as a click on its own card would decide it), within the
// acknowledgement budget, and returns what to tell them: what was
// decided, what was left and why. The Service updates every card it
// changed, and the counts on the others.
//
// Calls left for want of step-up are answered by stepUp, one link for
// them all (trigger opens its modal on App Home).
func (b *Bot) decideAll(ctx context.Context, t *clickTarget, action approval.Action, trigger string) string {
	if ctx.Err() != nil {
		return tooLateText
	}
	d := notAfter(ctx, approval.Decision{CallID: t.call.ID, By: t.by.User, Action: action})
	batch, err := b.svc.DecideAll(ctx, t.approval, t.by, d)
	steppedUp := action == approval.ActionApprove && b.stepUpBatch(ctx, t, d, batch, err, trigger)
	if batch == nil {
		if steppedUp {
			return ""
		}
		return explainLate(ctx, err, t.call, t.route)
	}
	if err != nil {
		b.log.WarnContext(ctx, "a batch decision stopped: one call's recording is unconfirmed", "err", err, "user", t.by.User)
	}
	return approval.BatchWords(batch, b.svc.Route, refusalMarks{})
}
