package main

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"sync"
	"time"

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
		if errors.Is(err, bot.ErrNotFound) {
			log.InfoContext(ctx, "token gone: no card to update")
			err = nil
		}
	case store.JobThreadAnswer:
		jctx, cancel := context.WithTimeout(ctx, jobTimeout)
		err = a.postAnswer(jctx, log, j)
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

// postAnswer posts the run's answer a thread.answer job carries, once:
// after an attempt that may have posted it (this job's earlier attempt,
// or a replica that died), the thread is searched for it first.
func (a *app) postAnswer(ctx context.Context, log *slog.Logger, j store.Job) error {
	var ans bot.Answer
	if err := json.Unmarshal([]byte(j.Data), &ans); err != nil || ans.Key == "" || ans.Channel == "" {
		log.ErrorContext(ctx, "malformed answer job: dropped", "err", err)
		return nil
	}
	prev, err := a.store.BeginAnswer(ctx, ans.Key)
	if err != nil {
		return err
	}
	if prev == "posted" {
		return nil
	}
	ts, err := a.bot.PostAnswer(ctx, ans, prev != "")
	if err != nil {
		return err
	}
	return a.store.AnswerPosted(ctx, ans.Key, ts)
}

// followups queues what follows a run's end on the job queue
// (bot.Followups).
type followups struct{ a *app }

func (f followups) Answer(ctx context.Context, ans bot.Answer) error {
	b, err := json.Marshal(ans)
	if err != nil {
		return err
	}
	_, err = f.a.jobs.Add(ctx, store.JobThreadAnswer, "", string(b))
	return err
}

func (f followups) Cards(ctx context.Context, token string) error {
	_, err := f.a.jobs.Add(ctx, store.JobCardUpdate, token, "")
	return err
}

func (f followups) Done(ctx context.Context, _ string, tokens []string) error {
	var errs []error
	for _, t := range tokens {
		errs = append(errs, f.a.store.FinishResume(ctx, t))
	}
	return errors.Join(errs...)
}

// jobFailed schedules the next attempt of j after its backoff, or gives
// up on it after jobAttempts.
func (a *app) jobFailed(ctx context.Context, log *slog.Logger, j store.Job, err error) {
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
