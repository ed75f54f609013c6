package runs

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/slackapprove/slackbot/agentrunner"
	"github.com/slackapprove/slackbot/approval"
)

// defaultJobTimeout bounds the follow-ups a run's end does at once (the
// job queue's own bound on an attempt).
const defaultJobTimeout = 2 * time.Minute

// Finish reports a run's end: the answer (or the failure) in the thread,
// and each decided call's tool outcome on its card. It reports whether the
// run ended here: a run stopped because the process is shutting down, or
// taken over by another process, reports nothing (it resumes elsewhere).
func (rs *Runs) Finish(ctx context.Context, deps *Deps, res *agentrunner.RunResult, err error) bool {
	if err != nil && ctx.Err() != nil && errors.Is(err, ctx.Err()) {
		rs.log().Info("run stopped by shutdown; it will resume elsewhere", "channel", deps.Channel)
		return false
	}
	if err != nil && rs.HandedOff != nil && rs.HandedOff(err) {
		rs.log().Info("run continues in another process", "channel", deps.Channel)
		return false
	}
	stopping := ctx.Err() != nil
	runCtx := ctx
	ctx = context.WithoutCancel(ctx)
	if err == nil && res.Status == agentrunner.StatusSuspended {
		rs.suspended(ctx, runCtx, deps, res)
		return true
	}
	text, result := "", ""
	switch {
	case err != nil:
		rs.log().ErrorContext(ctx, "run failed", "err", err, "channel", deps.Channel)
		text, result = ":warning: The agent run failed: "+rs.Chat.Escape(err.Error()), RunFailed
	case res.Status == agentrunner.StatusPending:
		text, result = ":hourglass: Some tool calls are still waiting for a decision.", RunPending
	default:
		text, result = rs.Chat.Escape(res.Output), RunComplete
	}
	rs.ended(result)
	// Before the answer: a reply to it must find the history.
	switch {
	case res != nil:
		rs.saveHistory(ctx, deps, res.Messages)
	case deps.prompt != "":
		// The thread remembers what was asked and that it failed.
		failed := append(slices.Clip(deps.history),
			agentrunner.Message{Kind: agentrunner.KindRequest, Parts: []agentrunner.Part{agentrunner.UserPrompt(deps.prompt)}},
			agentrunner.Message{Kind: agentrunner.KindResponse, Parts: []agentrunner.Part{agentrunner.Text("(The run failed: " + err.Error() + ")")}})
		rs.saveHistory(ctx, deps, failed)
	}
	if rs.Jobs != nil {
		rs.followUp(ctx, runCtx, deps, res, text, result)
	}
	// The answer first: it is what the requester waits for, and updating
	// the cards may wait on a card's lease.
	if deps.Channel != "" && rs.Jobs == nil {
		if err := rs.Chat.PostInThread(ctx, deps.Channel, deps.ThreadTS, text); err != nil {
			rs.log().ErrorContext(ctx, "post answer", "err", err, "channel", deps.Channel)
		}
	}
	// Then the thread's next message, which need not wait for the cards.
	// A process shutting down leaves it to the lease's lapse.
	if th, ok := rs.threadOf(deps.Origin); ok && deps.runID != "" && !stopping {
		rs.handOn(ctx, th, deps.runID)
	}
	if res != nil && rs.Jobs == nil {
		for _, token := range deps.Tokens() {
			if err := rs.ReportOutcomes(ctx, token, res.Messages); err != nil {
				rs.log().ErrorContext(ctx, "report tool outcomes", "err", err)
			}
		}
	}
	return true
}

// suspended reports a run that suspended on a token (its calls were
// handed to people): nothing is posted in the thread, where the cards are
// the news, and the thread stays the run's until the token's deadline
// (Deps.Waits). The cards of the tokens the run got past on its way (a
// resumed run's earlier token) show their tools' outcomes, and those
// tokens are done with. Then the run is gone from this process.
func (rs *Runs) suspended(ctx, runCtx context.Context, deps *Deps, res *agentrunner.RunResult) {
	rs.ended(RunPending)
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
	if rs.Jobs != nil {
		rs.followUpTokens(ctx, runCtx, deps, res, earlier, nil)
		return
	}
	for _, token := range earlier {
		if err := rs.ReportOutcomes(ctx, token, res.Messages); err != nil {
			rs.log().ErrorContext(ctx, "report tool outcomes", "err", err)
		}
	}
}

// followUp hands what must follow a run's end to the job queue, before
// any chat call: the tools' outcomes are recorded on their calls, the
// cards' updates and the answer are queued, and only then is the run
// marked done, so that a process dying at any point leaves either the run
// to resume (its tools do not run again: see agentrunner.Journal) or the
// jobs for another replica. The queued work is done on runCtx: a process
// shutting down leaves it to the others.
func (rs *Runs) followUp(ctx, runCtx context.Context, deps *Deps, res *agentrunner.RunResult, text, result string) {
	tokens := deps.Tokens()
	var answer *Answer
	if deps.Channel != "" {
		last := ""
		if len(tokens) > 0 {
			last = tokens[len(tokens)-1]
		}
		answer = &Answer{Key: deps.runID + "/" + last + "/" + result, Channel: deps.Channel, ThreadTS: deps.ThreadTS, Text: text, MayBePosted: deps.retaken}
	}
	rs.followUpTokens(ctx, runCtx, deps, res, tokens, answer)
}

// followUpTokens is followUp for the tokens given, with answer (nil:
// none) posted in the thread.
func (rs *Runs) followUpTokens(ctx, runCtx context.Context, deps *Deps, res *agentrunner.RunResult, tokens []string, answer *Answer) {
	log := rs.log().With("run", deps.runID, "channel", deps.Channel)
	var cards []string
	if res != nil {
		for _, token := range tokens {
			a, calls, err := rs.RecordOutcomes(ctx, token, res.Messages)
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
	q, err := rs.queue(ctx, answer, cards)
	if err != nil {
		// Without Redis there is no durability to be had: do it here.
		log.ErrorContext(ctx, "queue the run's follow-ups; doing them here", "err", err)
		if answer != nil {
			if _, err := rs.Chat.PostAnswer(ctx, *answer, false); err != nil {
				log.ErrorContext(ctx, "post answer", "err", err)
			}
		}
		for _, token := range cards {
			if err := rs.Approvals.UpdateCards(ctx, token); err != nil {
				log.ErrorContext(ctx, "update cards", "err", err)
			}
		}
	}
	// The run asked tokens and ended here, its follow-ups queued: nobody
	// is to resume it from those tokens again.
	var errs []error
	for _, t := range tokens {
		errs = append(errs, rs.State.FinishResume(ctx, t))
	}
	if err := errors.Join(errs...); err != nil {
		log.ErrorContext(ctx, "mark run done", "err", err)
	}
	if q != nil {
		q.do(runCtx)
	}
}

// followUps are one run's follow-up jobs, done at once by the process
// that queued them: a job done is taken off the queue; one that fails is
// left there for the job consumers, with their retries.
type followUps struct {
	rs       *Runs
	answer   *Answer
	answerID string
	cards    []string
	cardIDs  []string
}

// queue queues the posting of answer (nil: none) and the update of the
// cards of tokens from their records (the decision, the tool's outcome,
// no buttons).
func (rs *Runs) queue(ctx context.Context, answer *Answer, cards []string) (*followUps, error) {
	q := &followUps{rs: rs, answer: answer, cards: cards}
	if answer != nil {
		b, err := json.Marshal(answer)
		if err != nil {
			return nil, fmt.Errorf("queue answer: %w", err)
		}
		if q.answerID, err = rs.Jobs.Add(ctx, JobAnswer, "", string(b)); err != nil {
			return nil, fmt.Errorf("queue answer: %w", err)
		}
	}
	for _, token := range cards {
		id, err := rs.Jobs.Add(ctx, JobCards, token, "")
		if err != nil {
			return nil, fmt.Errorf("queue card update: %w", err)
		}
		q.cardIDs = append(q.cardIDs, id)
	}
	return q, nil
}

// do does the queued follow-ups here and now, the answer first.
func (q *followUps) do(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, cmp.Or(q.rs.JobTimeout, defaultJobTimeout))
	defer cancel()
	log := q.rs.log()
	done := func(id string, err error) {
		if err != nil {
			log.WarnContext(ctx, "follow-up failed; left to the job queue", "err", err)
			return
		}
		if err := q.rs.Jobs.Ack(ctx, id); err != nil {
			log.ErrorContext(ctx, "acknowledge job", "err", err)
		}
	}
	if q.answer != nil {
		done(q.answerID, q.rs.PostAnswer(ctx, *q.answer))
	}
	for i, token := range q.cards {
		done(q.cardIDs[i], q.rs.Approvals.UpdateCards(ctx, token))
	}
}
