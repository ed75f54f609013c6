package bot

import (
	"context"

	"github.com/slackapprove/slackbot/agentrunner"
)

// followUp hands what must follow a run's end to the durable Followups,
// before any Slack call: the tools' outcomes are recorded on their calls,
// the cards' updates and the answer are queued, and only then is the run
// marked done, so that a process dying at any point leaves either the run
// to resume (its tools do not run again: see agentrunner.Journal) or the
// jobs for another replica.
func (rs *Runs) followUp(ctx context.Context, deps *RunDeps, res *agentrunner.RunResult, text, result string) {
	log := rs.log().With("run", deps.runID, "channel", deps.Channel)
	tokens := deps.Tokens()
	if res != nil {
		for _, token := range tokens {
			if _, _, err := rs.Bot.RecordOutcomes(ctx, token, res.Messages); err != nil {
				log.ErrorContext(ctx, "record tool outcomes", "err", err)
			}
			if err := rs.Followups.Cards(ctx, token); err != nil {
				log.ErrorContext(ctx, "queue card update; updating here", "err", err)
				rs.Bot.UpdateCardsLater(ctx, token)
			}
		}
	}
	if deps.Channel != "" {
		last := ""
		if len(tokens) > 0 {
			last = tokens[len(tokens)-1]
		}
		a := Answer{Key: deps.runID + "/" + last + "/" + result, Channel: deps.Channel, ThreadTS: deps.ThreadTS, Text: text}
		if err := rs.Followups.Answer(ctx, a); err != nil {
			log.ErrorContext(ctx, "queue answer; posting here", "err", err)
			if _, err := rs.Bot.PostAnswer(ctx, a, false); err != nil {
				log.ErrorContext(ctx, "post answer", "err", err)
			}
		}
	}
	if err := rs.Followups.Done(ctx, deps.runID, tokens); err != nil {
		log.ErrorContext(ctx, "mark run done", "err", err)
	}
}
