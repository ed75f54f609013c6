package bot

import (
	"context"

	"github.com/slackapprove/slackbot/agentrunner"
	"github.com/slackapprove/slackbot/approval"
)

// followUp hands what must follow a run's end to the durable Followups,
// before any Slack call: the tools' outcomes are recorded on their calls,
// the cards' updates and the answer are queued, and only then is the run
// marked done, so that a process dying at any point leaves either the run
// to resume (its tools do not run again: see agentrunner.Journal) or the
// jobs for another replica. The queued work is done on runCtx: a process
// shutting down leaves it to the others.
func (rs *Runs) followUp(ctx, runCtx context.Context, deps *RunDeps, res *agentrunner.RunResult, text, result string) {
	tokens := deps.Tokens()
	var answer *Answer
	if deps.Channel != "" {
		last := ""
		if len(tokens) > 0 {
			last = tokens[len(tokens)-1]
		}
		answer = &Answer{Key: deps.runID + "/" + last + "/" + result, Channel: deps.Channel, ThreadTS: deps.ThreadTS, Text: text}
	}
	rs.followUpTokens(ctx, runCtx, deps, res, tokens, answer)
}

// followUpTokens is followUp for the tokens given, with answer (nil:
// none) posted in the thread.
func (rs *Runs) followUpTokens(ctx, runCtx context.Context, deps *RunDeps, res *agentrunner.RunResult, tokens []string, answer *Answer) {
	log := rs.log().With("run", deps.runID, "channel", deps.Channel)
	var cards []string
	if res != nil {
		for _, token := range tokens {
			a, calls, err := rs.Bot.RecordOutcomes(ctx, token, res.Messages)
			if err != nil {
				log.ErrorContext(ctx, "record tool outcomes", "err", err)
			}
			// A decided token's cards are updated once more, with the
			// outcomes, even if the click's own update died with its
			// process; an expired token's cards have their own job.
			if len(calls) > 0 || (a != nil && a.State == approval.StateResolved) {
				cards = append(cards, token)
			}
		}
	}
	q, err := rs.Followups.Queue(ctx, answer, cards)
	if err != nil {
		// Without Redis there is no durability to be had: do it here.
		log.ErrorContext(ctx, "queue the run's follow-ups; doing them here", "err", err)
		if answer != nil {
			if _, err := rs.Bot.PostAnswer(ctx, *answer, false); err != nil {
				log.ErrorContext(ctx, "post answer", "err", err)
			}
		}
		for _, token := range cards {
			if err := rs.Bot.svc.UpdateCards(ctx, token); err != nil {
				log.ErrorContext(ctx, "update cards", "err", err)
			}
		}
	}
	if err := rs.Followups.Done(ctx, deps.runID, tokens); err != nil {
		log.ErrorContext(ctx, "mark run done", "err", err)
	}
	if q != nil {
		q.Do(runCtx)
	}
}
