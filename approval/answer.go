package approval

import (
	"context"
	"maps"
	"slices"

	"github.com/slackapprove/slackbot/agentrunner"
)

// Answer records answers given in Pydantic AI's DeferredToolResults wire
// format (the HTTP API's results): Decide, with one decision per answer
// (Decisions), so every door's answers meet the same checks.
func (s *Service) Answer(ctx context.Context, token string, by Decider, res *agentrunner.DeferredToolResults) (*Decided, error) {
	return s.Decide(ctx, token, by, Decisions(res)...)
}

// Decisions turns results in Pydantic AI's wire format into the
// decisions they make, in a stable order (approvals, then calls, each by id), with their metadata
// and who the client says answered.
func Decisions(res *agentrunner.DeferredToolResults) []Decision {
	var ds []Decision
	for _, id := range slices.Sorted(maps.Keys(res.Approvals)) {
		ar := res.Approvals[id]
		d := Decision{CallID: id, Action: ActionDeny, Reason: ar.Message}
		if ar.Approved {
			d.Action, d.OverrideArgs = ActionApprove, ar.OverrideArgs
		}
		ds = append(ds, d)
	}
	for _, id := range slices.Sorted(maps.Keys(res.Calls)) {
		cr := res.Calls[id]
		d := Decision{CallID: id, Action: ActionAnswer, Answer: cr.Value}
		switch {
		case cr.Failed:
			d.Action, d.Reason = ActionFail, cr.Message
		case cr.Retry:
			d.Action, d.Reason = ActionRetry, cr.Message
		}
		ds = append(ds, d)
	}
	for i := range ds {
		ds[i].Metadata = res.Metadata[ds[i].CallID]
		ds[i].By = res.AnsweredBy[ds[i].CallID]
	}
	return ds
}
