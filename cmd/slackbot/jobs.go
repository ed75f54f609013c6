package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"

	"go.opentelemetry.io/otel/attribute"

	"github.com/slackapprove/slackbot/agentrunner"
	"github.com/slackapprove/slackbot/approval"
	"github.com/slackapprove/slackbot/bot"
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
var errAnswerBusy = fmt.Errorf("another replica is posting the answer: %w", store.ErrJobBusy)

// postAnswer posts a run's answer once: after an attempt that may have
// posted it (this job's earlier attempt, or a replica that died), the
// thread is searched for it first.
func (a *app) postAnswer(ctx context.Context, ans bot.Answer) error {
	prev, err := a.store.BeginAnswer(ctx, ans.Key, a.owner+"/"+agentrunner.NewToken()[:8])
	if err != nil {
		return err
	}
	switch prev {
	case "posted":
		return nil
	case "busy":
		return errAnswerBusy
	}
	ts, err := a.bot.PostAnswer(ctx, ans, prev != "")
	if err != nil {
		if err := a.store.AnswerFailed(context.WithoutCancel(ctx), ans.Key); err != nil {
			a.log.ErrorContext(ctx, "record a failed answer", "err", err)
		}
		return err
	}
	return a.store.AnswerPosted(ctx, ans.Key, ts)
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

// answerJob decodes and does a thread.answer job.
func (a *app) answerJob(ctx context.Context, log *slog.Logger, j store.Job) error {
	var ans bot.Answer
	if err := json.Unmarshal([]byte(j.Data), &ans); err != nil || ans.Key == "" || ans.Channel == "" {
		log.ErrorContext(ctx, "malformed answer job: dropped", "err", err)
		return nil
	}
	return a.postAnswer(ctx, ans)
}

// followups queues what follows a run's end on the job queue
// (bot.Followups).
type followups struct{ a *app }

// Queue implements bot.Followups.
func (f followups) Queue(ctx context.Context, ans *bot.Answer, cards []string) (bot.Queued, error) {
	q := &queuedJobs{a: f.a, answer: ans, cards: cards}
	if ans != nil {
		b, err := json.Marshal(ans)
		if err != nil {
			return nil, err
		}
		if q.answerID, err = f.a.jobs.Add(ctx, store.JobThreadAnswer, "", string(b)); err != nil {
			return nil, err
		}
	}
	for _, token := range cards {
		id, err := f.a.jobs.Add(ctx, store.JobCardUpdate, token, "")
		if err != nil {
			return nil, err
		}
		q.cardIDs = append(q.cardIDs, id)
	}
	return q, nil
}

// Done implements bot.Followups.
func (f followups) Done(ctx context.Context, _ string, tokens []string) error {
	var errs []error
	for _, t := range tokens {
		errs = append(errs, f.a.store.FinishResume(ctx, t))
	}
	return errors.Join(errs...)
}

// queuedJobs are one run's follow-up jobs, done at once by the process
// that queued them: a job done is taken off the queue; one that fails is
// left there for the job consumers, with their retries.
type queuedJobs struct {
	a        *app
	answer   *bot.Answer
	answerID string
	cards    []string
	cardIDs  []string
}

func (q *queuedJobs) Do(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, store.DefaultJobTimeout)
	defer cancel()
	done := func(id string, err error) {
		if err != nil {
			q.a.log.WarnContext(ctx, "follow-up failed; left to the job queue", "err", err)
			return
		}
		if err := q.a.jobs.Ack(ctx, id); err != nil {
			q.a.log.ErrorContext(ctx, "acknowledge job", "err", err)
		}
	}
	if q.answer != nil {
		done(q.answerID, q.a.postAnswer(ctx, *q.answer))
	}
	for i, token := range q.cards {
		done(q.cardIDs[i], q.a.svc.UpdateCards(ctx, token))
	}
}
