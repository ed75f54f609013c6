package main

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/slackapprove/slackbot/agentrunner"
	"github.com/slackapprove/slackbot/approval"
	"github.com/slackapprove/slackbot/bot"
	"github.com/slackapprove/slackbot/store"
)

const (
	// jobTimeout bounds one attempt of a job (every card of a token
	// updated, Slack's rate limits included).
	jobTimeout = 2 * time.Minute
	// jobReclaimIdle is how long a job may stay unacknowledged with a
	// consumer that still lives before another takes it over: past
	// jobTimeout, so only a consumer that lost track of a job loses it.
	// A dead consumer's jobs are taken over within seconds (ReclaimDead).
	jobReclaimIdle = 2*jobTimeout + 30*time.Second
	// jobAttempts bounds the attempts of one job; the backoff between
	// them doubles from jobBackoff up to jobMaxBackoff (about 20 minutes
	// in all).
	jobAttempts   = 8
	jobBackoff    = 5 * time.Second
	jobMaxBackoff = 5 * time.Minute
	// jobParallel bounds the jobs one process works on at once.
	jobParallel = 8
)

// consumeJobs works the job queue until ctx ends: the after-decision work
// (updating cards, posting a run's answer) that any replica may do and
// that must be done even if the process that decided died.
func (a *app) consumeJobs(ctx context.Context) {
	// Other replicas take over the jobs of a consumer without a heartbeat:
	// start once Events.Run, which keeps it, is up.
	select {
	case <-a.events.Ready():
	case <-ctx.Done():
		return
	}
	block := a.deps.ResumeBlock
	if block <= 0 {
		block = 2 * time.Second
	}
	for ctx.Err() == nil {
		if _, err := a.jobs.Promote(ctx); err != nil && ctx.Err() == nil {
			a.log.ErrorContext(ctx, "promote job retries", "err", err)
		}
		jobs, err := a.jobs.Read(ctx, a.owner, block)
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			a.log.ErrorContext(ctx, "read job queue", "err", err)
			sleep(ctx, time.Second)
			continue
		}
		dead, err := a.jobs.ReclaimDead(ctx, a.owner)
		if err != nil && ctx.Err() == nil {
			a.log.ErrorContext(ctx, "reclaim jobs of stopped replicas", "err", err)
		}
		stale, err := a.jobs.Reclaim(ctx, a.owner, jobReclaimIdle)
		if err != nil && ctx.Err() == nil {
			a.log.ErrorContext(ctx, "reclaim stale jobs", "err", err)
		}
		a.runJobs(ctx, append(append(jobs, dead...), stale...))
	}
}

// runJobs works on jobs, jobParallel at a time, and returns when all are
// done.
func (a *app) runJobs(ctx context.Context, jobs []store.Job) {
	sem := make(chan struct{}, jobParallel)
	var wg sync.WaitGroup
	for _, j := range jobs {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			a.runJob(ctx, j)
		})
	}
	wg.Wait()
}

// runJob makes one attempt at j and then acknowledges it, schedules its
// next attempt, or (shutting down, or a kind this version does not know)
// leaves it pending for another replica.
func (a *app) runJob(ctx context.Context, j store.Job) {
	log := a.log.With("job", j.Kind, "token", shortToken(j.Token), "attempt", j.Attempt)
	var err error
	switch j.Kind {
	case store.JobCardUpdate:
		jctx, cancel := context.WithTimeout(ctx, jobTimeout)
		err = a.bot.UpdateCards(jctx, j.Token)
		cancel()
		if errors.Is(err, approval.ErrNotFound) {
			log.InfoContext(ctx, "token gone: no card to update")
			err = nil
		}
	case store.JobThreadAnswer:
		jctx, cancel := context.WithTimeout(ctx, jobTimeout)
		err = a.answerJob(jctx, log, j)
		cancel()
	default:
		// A newer replica queued it during a rolling update: leave it to
		// one that knows the kind (Reclaim hands it on).
		log.WarnContext(ctx, "unknown job kind: left for another replica")
		return
	}
	if ctx.Err() != nil {
		return // shutting down: another replica takes it over
	}
	if err == nil {
		if err := a.jobs.Ack(ctx, j.ID); err != nil {
			log.ErrorContext(ctx, "acknowledge job", "err", err)
		}
		return
	}
	a.jobFailed(ctx, log, j, err)
}

// errAnswerBusy: another live replica is posting the answer; the job is
// tried again after its backoff.
var errAnswerBusy = errors.New("another replica is posting the answer")

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
	ctx, cancel := context.WithTimeout(ctx, jobTimeout)
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
		done(q.cardIDs[i], q.a.bot.UpdateCards(ctx, token))
	}
}

// jobFailed schedules the next attempt of j after its backoff, or gives
// up on it after jobAttempts.
func (a *app) jobFailed(ctx context.Context, log *slog.Logger, j store.Job, err error) {
	if errors.Is(err, errAnswerBusy) {
		// Not a failure: look again soon, without spending an attempt,
		// until the replica posting it is done or dead.
		j.Attempt--
		if err := a.jobs.Retry(ctx, j, jobBackoff); err != nil {
			log.ErrorContext(ctx, "schedule job retry", "err", err)
		}
		return
	}
	if j.Attempt >= jobAttempts {
		log.ErrorContext(ctx, "job failed; giving up", "err", err)
		if err := a.jobs.Ack(ctx, j.ID); err != nil {
			log.ErrorContext(ctx, "acknowledge job", "err", err)
		}
		return
	}
	wait := min(jobBackoff<<(j.Attempt-1), jobMaxBackoff)
	log.WarnContext(ctx, "job failed; will retry", "in", wait, "err", err)
	if err := a.jobs.Retry(ctx, j, wait); err != nil {
		// Left pending: Reclaim takes it up after jobReclaimIdle.
		log.ErrorContext(ctx, "schedule job retry", "err", err)
	}
}

// shortToken is a prefix of a token, safe to log.
func shortToken(token string) string {
	if len(token) > 6 {
		return token[:6] + "…"
	}
	return token
}
