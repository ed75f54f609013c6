package main

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/slackapprove/slackbot/agentrunner"
	"github.com/slackapprove/slackbot/approval"
	"github.com/slackapprove/slackbot/bot"
	"github.com/slackapprove/slackbot/store"
)

// consumeResumes resumes runs whose tokens ended while no live process was
// waiting on them (the process that started them died or was restarted),
// until ctx ends: store's ResumeQueue.Consume hands each job to resume.
func (a *app) consumeResumes(ctx context.Context) {
	// Claims are tied to this process's heartbeat only once it runs.
	select {
	case <-a.tokens.Ready():
	case <-ctx.Done():
		return
	}
	a.queue.Consume(ctx, a.owner, store.ConsumeOptions{Block: a.deps.ResumeBlock, Log: a.log}, a.resume)
}

// resume continues one run from its saved state, at most once at a time
// across all processes (ClaimResume, whose claim dies with its owner), and
// acknowledges the job once the run finished.
func (a *app) resume(ctx context.Context, j store.ResumeJob) {
	log := a.log.With("run", j.RunID, "state", j.State)
	// The queue claims under its own name: the local waiter of this very
	// process claims as a.owner, and a claim is re-entrant for its owner.
	claimer := a.owner + "/queue"
	ok, err := a.store.ClaimResume(ctx, j.Token, claimer, 0)
	if err != nil {
		log.ErrorContext(ctx, "claim resume", "err", err)
		return // not acked: redelivered later
	}
	if !ok {
		// A live process resumes it: the job stays pending, so that it is
		// taken over if that process dies before the run finished.
		return
	}
	// Nothing has run yet: on a passing failure give the claim back and
	// leave the job unacknowledged, so this or another replica retries.
	giveBack := func(what string, err error) {
		log.ErrorContext(ctx, what+"; will retry", "err", err)
		if err := a.store.ReleaseResume(context.WithoutCancel(ctx), j.Token, claimer); err != nil {
			log.Error("release resume claim", "err", err)
		}
	}
	rs, results, what, err := a.resumable(ctx, log, j)
	switch {
	case err != nil:
		giveBack(what, err)
	case rs == nil:
		// Nothing to resume: resumable acknowledged the job.
	case ctx.Err() != nil:
		giveBack("shutting down", ctx.Err())
	default:
		a.resumeRun(ctx, log, j, rs, results)
	}
}

// resumable reads what j's run resumes from: its saved state and its
// token's results. It acknowledges a job there is nothing to resume from
// (and returns a nil state), and returns what failed with a passing
// error.
func (a *app) resumable(ctx context.Context, log *slog.Logger, j store.ResumeJob) (*store.RunState, *agentrunner.DeferredToolResults, string, error) {
	rs, err := a.store.LoadRun(ctx, j.RunID)
	if errors.Is(err, store.ErrRunNotFound) {
		log.ErrorContext(ctx, "no saved state: the run cannot be resumed", "err", err)
		_ = a.queue.Ack(ctx, j.ID)
		return nil, nil, "", nil
	}
	if err != nil {
		return nil, nil, "load run state", err
	}
	if rs.Token != "" && rs.Token != j.Token {
		// The run went on past this token (and waits on a later one,
		// whose own job resumes it): nothing to do from this one.
		log.InfoContext(ctx, "the run moved on past this token")
		if err := a.store.FinishResume(ctx, j.Token); err != nil {
			log.ErrorContext(ctx, "finish resume", "err", err)
		}
		_ = a.queue.Ack(ctx, j.ID)
		return nil, nil, "", nil
	}
	rec, err := a.store.Get(ctx, j.Token)
	if errors.Is(err, approval.ErrNotFound) || (err == nil && rec.Results == nil) {
		log.ErrorContext(ctx, "the token has no results: the run cannot be resumed", "err", err)
		_ = a.queue.Ack(ctx, j.ID)
		return nil, nil, "", nil
	}
	if err != nil {
		return nil, nil, "read token results", err
	}
	return rs, rec.Results, "", nil
}

// resumeRun continues the run of rs with results on bot.Runs.
func (a *app) resumeRun(ctx context.Context, log *slog.Logger, j store.ResumeJob, rs *store.RunState, results *agentrunner.DeferredToolResults) {
	deps := &bot.RunDeps{}
	var err error
	if deps.Origin, err = rs.RunOrigin(); err != nil {
		log.ErrorContext(ctx, "decode run origin", "err", err)
	}
	deps.Asked(j.Token, time.Time{})
	// The job stays pending until the run finished (Runs' Followups.Done,
	// and the ack below): if this process dies on the way, another
	// replica takes the run over; the claim and the call journal keep its
	// approved tools from running twice.
	a.metrics.resumes.WithLabelValues("queue").Inc()
	log.InfoContext(ctx, "resuming run from saved state")
	a.runs.Resume(agentrunner.RunInput{
		RunID: rs.RunID, History: rs.Messages, Results: results, Pending: &rs.Pending, Deps: deps,
	}, deps, func() {
		if err := a.store.DeleteRun(context.WithoutCancel(ctx), rs.RunID); err != nil {
			log.Error("delete run state", "err", err)
		}
		_ = a.queue.Ack(context.WithoutCancel(ctx), j.ID)
	})
}
