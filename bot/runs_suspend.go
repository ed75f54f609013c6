package bot

import (
	"context"

	"github.com/slackapprove/slackbot/agentrunner"
)

// suspended reports a run that suspended on a token (its calls were
// handed to people): nothing is posted in the thread, where the cards are
// the news, and the thread stays the run's until the token's deadline
// (RunDeps.Waits). The cards of the tokens the run got past on its way (a
// resumed run's earlier token) show their tools' outcomes, and those
// tokens are done with. Then the run is gone from this process.
func (rs *Runs) suspended(ctx, runCtx context.Context, deps *RunDeps, res *agentrunner.RunResult) {
	if rs.Finished != nil {
		rs.Finished("pending")
	}
	var earlier []string
	for _, t := range deps.Tokens() {
		if res.Suspended == nil || t != res.Suspended.Token {
			earlier = append(earlier, t)
		}
	}
	rs.log().DebugContext(ctx, "run suspended until a decision", "run", deps.runID, "channel", deps.Channel)
	if len(earlier) == 0 {
		return
	}
	if rs.Followups != nil {
		rs.followUpTokens(ctx, runCtx, deps, res, earlier, nil)
		return
	}
	for _, token := range earlier {
		if err := rs.Bot.ReportOutcomes(ctx, token, res.Messages); err != nil {
			rs.log().ErrorContext(ctx, "report tool outcomes", "err", err)
		}
	}
}
