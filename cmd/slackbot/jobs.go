package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"go.opentelemetry.io/otel/attribute"

	"github.com/slackapprove/slackbot/approval"
	"github.com/slackapprove/slackbot/runs"
	"github.com/slackapprove/slackbot/store"
)

// consumeJobs works the job queue until ctx ends (store's
// JobQueue.Consume): the after-decision work (updating cards, posting a
// run's answer) that any replica may do and that must be done even if the
// process that decided died.
func (a *app) consumeJobs(ctx context.Context) {
	// Other replicas take over the jobs of a consumer without a heartbeat:
	// start once Events.Run, which keeps it, is up.
	select {
	case <-a.tokens.Ready():
	case <-ctx.Done():
		return
	}
	opts := store.JobConsumeOptions{ConsumeOptions: store.ConsumeOptions{Block: a.deps.ResumeBlock, Log: a.log}}
	a.jobs.Consume(ctx, a.owner, opts, a.doJob)
}

// doJob makes one attempt at j (store.JobQueue.Consume acknowledges or
// retries it). A kind this version does not know was queued by a newer
// replica during a rolling update: it is left to one that knows it.
func (a *app) doJob(ctx context.Context, j store.Job) (err error) {
	// In the trace of the work that queued the job (a run posting its
	// answer), on whichever replica does it.
	ctx, end := a.startSpan(continued(ctx, j.TraceParent), "job "+string(j.Kind), attribute.Int("slackbot.job.attempt", j.Attempt))
	defer func() { end(err) }()
	log := store.JobLogger(a.log, j)
	switch j.Kind {
	case store.JobCardUpdate:
		err := a.svc.Expire(ctx, j.Token)
		if errors.Is(err, approval.ErrNotFound) {
			log.InfoContext(ctx, "token gone: no card to update")
			return nil
		}
		return err
	case store.JobThreadAnswer:
		return a.answerJob(ctx, log, j)
	case store.JobRemind, store.JobEscalate:
		return a.attend(ctx, log, j)
	case store.JobHomeRefresh:
		// A call the user could decide (or asked for) changed: their Home
		// is published afresh, once for the changes of the coalescing
		// window. A 429 is waited out inside PublishHome.
		return a.bot.PublishHome(ctx, j.Data, "")
	default:
		log.WarnContext(ctx, "unknown job kind: left for another replica")
		return store.ErrJobLeft
	}
}

// errAnswerBusy: another live replica is posting the answer; the job is
// tried again after its backoff, without spending an attempt.
var errAnswerBusy = fmt.Errorf("%w: %w", runs.ErrAnswerBusy, store.ErrJobBusy)

// postAnswer posts an answer once (runs.Runs.PostAnswer), for the job
// queue: an answer another replica is posting is retried later.
func (a *app) postAnswer(ctx context.Context, ans runs.Answer) error {
	err := a.runs.PostAnswer(ctx, ans)
	if errors.Is(err, runs.ErrAnswerBusy) {
		return errAnswerBusy
	}
	return err
}

// attend does a reminder or an escalation that came due: if the call
// still waits (approval.Service.Attend), its messages are posted once each
// (as answers are: a marker and a record of each attempt), then recorded.
func (a *app) attend(ctx context.Context, log *slog.Logger, j store.Job) error {
	w, ok := store.ScheduledJob(j)
	if !ok {
		log.ErrorContext(ctx, "malformed scheduled job: dropped")
		return nil
	}
	n, err := a.svc.Attend(ctx, j.Token, w)
	if err != nil || n == nil {
		return err
	}
	msgs, err := a.cards.Notice(ctx, n)
	if err != nil {
		return err
	}
	for _, m := range msgs {
		if err := a.postAnswer(ctx, m); err != nil {
			return err
		}
	}
	return a.svc.Attended(ctx, n)
}

// answerJob does a thread.answer job.
func (a *app) answerJob(ctx context.Context, log *slog.Logger, j store.Job) error {
	err := a.runs.AnswerJob(ctx, j.Data)
	switch {
	case errors.Is(err, runs.ErrMalformedJob):
		log.ErrorContext(ctx, "malformed answer job: dropped", "err", err)
		return nil
	case errors.Is(err, runs.ErrAnswerBusy):
		return errAnswerBusy
	}
	return err
}
