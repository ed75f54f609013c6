package httpapi

import (
	"context"
	"errors"
	"slices"

	"github.com/slackapprove/slackbot/agentrunner"
	"github.com/slackapprove/slackbot/approval"
	"github.com/slackapprove/slackbot/bot"
)

// checkOverrides checks every approval that comes with override_args as
// an edit in Slack is checked (bot.CheckEdit: the tool's schema when
// known, the route's auto_deny; auto_approve never decides an edit), and
// replaces the arguments with the checked form. The first refusal is
// answered 400 invalid_request with its reason, and nothing is recorded.
func (a *API) checkOverrides(ctx context.Context, rec *approval.Request, results *agentrunner.DeferredToolResults) error {
	ids := make([]string, 0, len(results.Approvals))
	for id, ar := range results.Approvals {
		if ar.Approved && len(ar.OverrideArgs) > 0 {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids) // the same request is refused for the same call
	for _, id := range ids {
		ar := results.Approvals[id]
		call, _ := rec.Requests.Call(id)
		cs := rec.Call(id)
		if cs == nil {
			return invalid("approvals[%q]: not a call of this request", id)
		}
		args, err := a.bot.CheckEdit(ctx, bot.EditedCall{
			Call: call, Route: cs.Route, Requester: rec.Origin.Requester(),
			Metadata: rec.Requests.Metadata[id], Args: ar.OverrideArgs,
		})
		var refused *bot.EditRefusedError
		if errors.As(err, &refused) {
			return invalid("approvals[%q].override_args: %s", id, refused.Reason)
		}
		if err != nil {
			return err
		}
		ar.OverrideArgs = args
		results.Approvals[id] = ar
	}
	return nil
}
