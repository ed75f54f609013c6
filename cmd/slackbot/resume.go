package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"github.com/slackapprove/slackbot/agentrunner"
	"github.com/slackapprove/slackbot/approval"
	"github.com/slackapprove/slackbot/bot"
	"github.com/slackapprove/slackbot/store"
)

// A Slack-started run hibernates while people decide: it suspends once
// its cards are posted and its state saved (agentrunner.AskHandler's
// Suspend), and nothing of it stays in any process. The process that
// ends its request (a click, a form, an answer, the expiry sweep)
// resumes it at once from the saved state (resumeDirect); the resume
// queue (consumeResumes) is the way for every run that process does not
// take: it died on the way, or could not reach Redis. Both go through
// continueRun, under a claim that lets exactly one of them resume.

// directFirst is how long after a token ended its resume job is left to
// the process that ended it, which resumes the run directly: a queue
// consumer that reads the job sooner leaves it pending, and takes it
// from the queue later (Reclaim, after resumeReclaimIdle) if the run was
// not resumed by then.
const (
	directFirst       = 2 * time.Second
	resumeReclaimIdle = 5 * time.Second
)

// consumeResumes resumes runs whose tokens ended while no live process
// took them, until ctx ends: store's ResumeQueue.Consume hands each job to
// resume.
func (a *app) consumeResumes(ctx context.Context) {
	// Claims are tied to this process's heartbeat only once it runs.
	select {
	case <-a.tokens.Ready():
	case <-ctx.Done():
		return
	}
	a.queue.Consume(ctx, a.owner, store.ConsumeOptions{Block: a.deps.ResumeBlock, ReclaimIdle: resumeReclaimIdle, Log: a.log}, a.resume)
}

// resumeFrom is one way to a run's resumption: the token that ended, the
// run, the claimer that holds its claim, and the queue job (empty on the
// direct path, which takes the token's job off the queue by the token).
type resumeFrom struct {
	token, runID, claimer, jobID, path string
}

// resume continues the run of one queue job from its saved state, at most
// once at a time across all processes (ClaimResume, whose claim dies with
// its owner), and acknowledges the job once the run finished.
func (a *app) resume(ctx context.Context, j store.ResumeJob) {
	if age, ok := jobAge(j.ID, time.Now()); ok && age < directFirst {
		// The process that ended the token resumes the run directly; if
		// it does not, the job is reclaimed later.
		return
	}
	// The queue claims under its own name: a process's direct resumes
	// and local waiters claim under theirs, and a claim is re-entrant for
	// its owner.
	from := resumeFrom{token: j.Token, runID: j.RunID, claimer: a.owner + "/queue", jobID: j.ID, path: "queue"}
	ok, err := a.store.ClaimResume(ctx, j.Token, from.claimer, 0)
	if err != nil {
		a.log.ErrorContext(ctx, "claim resume", "err", err, "run", j.RunID)
		return // not acked: redelivered later
	}
	if !ok {
		// A live process resumes it: the job stays pending, so that it is
		// taken over if that process dies before the run finished.
		return
	}
	// The run goes on in the trace of what ended its token, whichever
	// replica that was: the job carried its context through Redis.
	ctx, end := a.resumeSpan(continued(ctx, j.TraceParent), from)
	defer end(nil)
	a.continueRun(ctx, from)
}

// resumeDirect continues here and now the run that waited on token, whose
// request this process just ended (approval's Resumed port, the expiry
// sweep), unless another process holds the run or waits on it in place.
// A run it cannot resume stays on the resume queue.
func (a *app) resumeDirect(ctx context.Context, token, runID string) error {
	from := resumeFrom{token: token, runID: runID, claimer: a.owner + "/direct", path: "direct"}
	ok, err := a.store.ClaimDirect(ctx, token, from.claimer)
	if err != nil {
		return fmt.Errorf("resume run %s directly; left to the queue: %w", runID, err)
	}
	if ok {
		ctx, end := a.resumeSpan(ctx, from)
		defer end(nil)
		a.continueRun(ctx, from)
	}
	return nil
}

// expired resumes the run of a token the expiry sweep of this process
// expired, with the timeout denial (TokensOptions.OnExpired).
func (a *app) expired(ctx context.Context, r *approval.Request) {
	if r.RunID == "" {
		return
	}
	if err := a.resumeDirect(ctx, r.Token, r.RunID); err != nil {
		a.log.ErrorContext(ctx, "resume expired run", "err", err)
	}
}

// continueRun resumes the run of from, whose claim from.claimer holds.
func (a *app) continueRun(ctx context.Context, from resumeFrom) {
	log := a.log.With("run", from.runID, "path", from.path)
	// Nothing has run yet: on a passing failure give the claim back and
	// leave the job on the queue, so this or another replica retries.
	giveBack := func(what string, err error) {
		log.ErrorContext(ctx, what+"; will retry", "err", err)
		if err := a.store.ReleaseResume(context.WithoutCancel(ctx), from.token, from.claimer); err != nil {
			log.Error("release resume claim", "err", err)
		}
	}
	rs, results, what, err := a.resumable(ctx, log, from)
	switch {
	case err != nil:
		giveBack(what, err)
	case rs == nil:
		// Nothing to resume: resumable took the job off the queue.
	case ctx.Err() != nil:
		giveBack("shutting down", ctx.Err())
	default:
		a.resumeRun(ctx, log, from, rs, results)
	}
}

// done takes from's job off the queue: the run finished, moved on, or
// cannot be resumed.
func (a *app) done(ctx context.Context, from resumeFrom) {
	var err error
	if from.jobID != "" {
		err = a.queue.Ack(ctx, from.jobID)
	} else {
		err = a.store.FinishResume(ctx, from.token)
	}
	if err != nil {
		a.log.ErrorContext(ctx, "take the resume job off the queue", "err", err, "run", from.runID)
	}
}

// resumable reads what from's run resumes from: its saved state and its
// token's results. It takes the job off the queue when there is nothing
// to resume from (and returns a nil state), and returns what failed with
// a passing error.
func (a *app) resumable(ctx context.Context, log *slog.Logger, from resumeFrom) (*store.RunState, *agentrunner.DeferredToolResults, string, error) {
	// The two reads go at once: a click waits for both before its run
	// goes on.
	type got struct {
		rec *approval.Request
		err error
	}
	recCh := make(chan got, 1)
	go func() {
		rec, err := a.store.Get(ctx, from.token)
		recCh <- got{rec, err}
	}()
	rs, err := a.store.LoadRun(ctx, from.runID)
	r := <-recCh
	if errors.Is(err, store.ErrRunNotFound) {
		log.ErrorContext(ctx, "no saved state: the run cannot be resumed", "err", err)
		a.done(ctx, from)
		return nil, nil, "", nil
	}
	if err != nil {
		return nil, nil, "load run state", err
	}
	if rs.Token != "" && rs.Token != from.token {
		// The run went on past this token (and waits on a later one,
		// whose own job resumes it): nothing to do from this one.
		log.InfoContext(ctx, "the run moved on past this token")
		if err := a.store.FinishResume(ctx, from.token); err != nil {
			log.ErrorContext(ctx, "finish resume", "err", err)
		}
		a.done(ctx, from)
		return nil, nil, "", nil
	}
	var results *agentrunner.DeferredToolResults
	if r.err == nil {
		// Handed out here, with the receipts the run verifies.
		results = r.rec.Results(a.receipts.signer)
	}
	if errors.Is(r.err, approval.ErrNotFound) || (r.err == nil && results == nil) {
		log.ErrorContext(ctx, "the token has no results: the run cannot be resumed", "err", r.err)
		a.done(ctx, from)
		return nil, nil, "", nil
	}
	if r.err != nil {
		return nil, nil, "read token results", r.err
	}
	return rs, results, "", nil
}

// resumeRun continues the run of rs with results on bot.Runs.
func (a *app) resumeRun(ctx context.Context, log *slog.Logger, from resumeFrom, rs *store.RunState, results *agentrunner.DeferredToolResults) {
	deps := &bot.RunDeps{}
	var err error
	if deps.Origin, err = rs.RunOrigin(); err != nil {
		log.ErrorContext(ctx, "decode run origin", "err", err)
	}
	deps.Asked(from.token, time.Time{})
	// The job stays pending until the run finished (Runs' Followups.Done,
	// and done below): if this process dies on the way, another replica
	// takes the run over; the claim and the call journal keep its
	// approved tools from running twice.
	a.metrics.resumes.WithLabelValues(from.path).Inc()
	log.InfoContext(ctx, "resuming run from saved state")
	a.runs.ResumeIn(ctx, agentrunner.RunInput{
		RunID: rs.RunID, History: rs.Messages, Results: results, Pending: &rs.Pending, Deps: deps,
	}, deps, func(suspended bool) {
		ctx := context.WithoutCancel(ctx)
		// A run that suspended again saved its state for its next token
		// over this one's: that state stays.
		if !suspended {
			if err := a.store.DeleteRun(ctx, rs.RunID); err != nil {
				log.Error("delete run state", "err", err)
			}
		}
		a.done(ctx, from)
	})
}

// jobAge is how long ago the stream entry id (milliseconds-sequence) was
// added.
func jobAge(id string, now time.Time) (time.Duration, bool) {
	ms, _, _ := strings.Cut(id, "-")
	n, err := strconv.ParseInt(ms, 10, 64)
	if err != nil {
		return 0, false
	}
	return now.Sub(time.UnixMilli(n)), true
}
