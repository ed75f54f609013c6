package runs

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
)

// A run started from a chat message hibernates while people decide: it
// suspends once its cards are posted and its state saved
// (agentrunner.AskHandler's Suspend), and nothing of it stays in any
// process. The process that ends its request (a click, a form, an
// answer, the expiry sweep) resumes it at once from the saved state
// (ResumeDirect); the resume queue (ResumeQueued) is the way for every
// run that process does not take: it died on the way, or could not reach
// Redis. Both go through continueRun, under a claim that lets exactly one
// of them resume.

// DirectFirst is how long after a token ended its resume job is left to
// the process that ended it, which resumes the run directly: a queue
// consumer that reads the job sooner leaves it pending, and takes it
// from the queue later (after ResumeReclaimIdle) if the run was not
// resumed by then.
const (
	DirectFirst       = 2 * time.Second
	ResumeReclaimIdle = 5 * time.Second
)

// ResumeJob is one job of the resume queue: the token that ended and the
// run that waited on it.
type ResumeJob struct {
	// ID is the job's id on the queue (a stream entry id: its first part
	// is when it was added, in Unix milliseconds).
	ID    string
	Token string
	RunID string
	// TraceParent is the W3C trace context of what ended the token, "":
	// none.
	TraceParent string
}

// resumeFrom is one way to a run's resumption: the token that ended, the
// run, the claimer that holds its claim, and the queue job (empty on the
// direct path, which takes the token's job off the queue by the token).
type resumeFrom struct {
	token, runID, claimer, jobID, path string
	// ended is when the token's request ended (its decision recorded),
	// once resumable read it: the resume lag is timed from it.
	ended time.Time
}

// ResumeQueued continues the run of one resume-queue job from its saved
// state, at most once at a time across all processes (RunStore's
// ClaimResume, whose claim dies with its owner), and takes the job off
// the queue once the run finished. A job younger than DirectFirst is left
// to the process that ended its token.
func (rs *Runs) ResumeQueued(ctx context.Context, j ResumeJob) {
	if age, ok := jobAge(j.ID, time.Now()); ok && age < DirectFirst {
		// The process that ended the token resumes the run directly; if
		// it does not, the job is reclaimed later.
		return
	}
	// The queue claims under its own name: a process's direct resumes
	// and local waiters claim under theirs, and a claim is re-entrant for
	// its owner.
	from := resumeFrom{token: j.Token, runID: j.RunID, claimer: rs.Owner + "/queue", jobID: j.ID, path: ResumeHowQueue}
	ok, err := rs.State.ClaimResume(ctx, j.Token, from.claimer)
	if err != nil {
		rs.log().ErrorContext(ctx, "claim resume", "err", err, "run", j.RunID)
		return // not acked: redelivered later
	}
	if !ok {
		// A live process resumes it: the job stays pending, so that it is
		// taken over if that process dies before the run finished.
		return
	}
	// The run goes on in the trace of what ended its token, whichever
	// replica that was: the job carried its context through Redis.
	ctx, end := rs.span(ctx, j.TraceParent, from)
	defer end(nil)
	rs.continueRun(ctx, from)
}

// ResumeDirect continues here and now the run that waited on token, whose
// request this process just ended (approval's Resumed port), unless
// another process holds the run or waits on it in place. A run it cannot
// resume stays on the resume queue.
func (rs *Runs) ResumeDirect(ctx context.Context, token, runID string) error {
	from := resumeFrom{token: token, runID: runID, claimer: rs.Owner + "/direct", path: ResumeHowDirect}
	ok, err := rs.State.ClaimDirect(ctx, token, from.claimer)
	if err != nil {
		return fmt.Errorf("resume run %s directly; left to the queue: %w", runID, err)
	}
	if ok {
		ctx, end := rs.span(ctx, "", from)
		defer end(nil)
		rs.continueRun(ctx, from)
	}
	return nil
}

func (rs *Runs) span(ctx context.Context, traceParent string, from resumeFrom) (context.Context, func(error)) {
	if rs.Trace == nil {
		return ctx, func(error) {}
	}
	return rs.Trace(ctx, traceParent, from.runID, from.path)
}

// continueRun resumes the run of from, whose claim from.claimer holds.
func (rs *Runs) continueRun(ctx context.Context, from resumeFrom) {
	log := rs.log().With("run", from.runID, "path", from.path)
	// Nothing has run yet: on a passing failure give the claim back and
	// leave the job on the queue, so this or another replica retries.
	giveBack := func(what string, err error) {
		log.ErrorContext(ctx, what+"; will retry", "err", err)
		if err := rs.State.ReleaseResume(context.WithoutCancel(ctx), from.token, from.claimer); err != nil {
			log.Error("release resume claim", "err", err)
		}
	}
	saved, results, what, err := rs.resumable(ctx, log, &from)
	switch {
	case err != nil:
		giveBack(what, err)
	case saved == nil:
		// Nothing to resume: resumable took the job off the queue.
	case ctx.Err() != nil:
		giveBack("shutting down", ctx.Err())
	default:
		rs.resumeRun(ctx, log, from, saved, results)
	}
}

// done takes from's job off the queue: the run finished, moved on, or
// cannot be resumed.
func (rs *Runs) done(ctx context.Context, from resumeFrom) {
	var err error
	if from.jobID != "" {
		err = rs.State.AckResume(ctx, from.jobID)
	} else {
		err = rs.State.FinishResume(ctx, from.token)
	}
	if err != nil {
		rs.log().ErrorContext(ctx, "take the resume job off the queue", "err", err, "run", from.runID)
	}
}

// resumable reads what from's run resumes from: its saved state and its
// token's results. It takes the job off the queue when there is nothing
// to resume from (and returns a nil state), and returns what failed with
// a passing error.
func (rs *Runs) resumable(ctx context.Context, log *slog.Logger, from *resumeFrom) (*Saved, *agentrunner.DeferredToolResults, string, error) {
	// The two reads go at once: a click waits for both before its run
	// goes on.
	type got struct {
		rec *approval.Request
		err error
	}
	recCh := make(chan got, 1)
	go func() {
		rec, err := rs.Approvals.Get(ctx, from.token)
		recCh <- got{rec, err}
	}()
	saved, err := rs.State.LoadRun(ctx, from.runID)
	r := <-recCh
	if errors.Is(err, ErrRunNotFound) {
		log.ErrorContext(ctx, "no saved state: the run cannot be resumed", "err", err)
		rs.done(ctx, *from)
		return nil, nil, "", nil
	}
	if err != nil {
		return nil, nil, "load run state", err
	}
	if saved.Token != "" && saved.Token != from.token {
		// The run went on past this token (and waits on a later one,
		// whose own job resumes it): nothing to do from this one.
		log.InfoContext(ctx, "the run moved on past this token")
		if err := rs.State.FinishResume(ctx, from.token); err != nil {
			log.ErrorContext(ctx, "finish resume", "err", err)
		}
		rs.done(ctx, *from)
		return nil, nil, "", nil
	}
	rec, err := r.rec, r.err
	var results *agentrunner.DeferredToolResults
	if err == nil {
		// Handed out here, with the receipts the run verifies.
		results = rec.Results(rs.Receipts)
		from.ended = rec.EndedAt
	}
	if errors.Is(err, approval.ErrNotFound) || (err == nil && results == nil) {
		log.ErrorContext(ctx, "the token has no results: the run cannot be resumed", "err", err)
		rs.done(ctx, *from)
		return nil, nil, "", nil
	}
	if err != nil {
		return nil, nil, "read token results", err
	}
	return saved, results, "", nil
}

// resumeRun continues the run of saved with results.
func (rs *Runs) resumeRun(ctx context.Context, log *slog.Logger, from resumeFrom, saved *Saved, results *agentrunner.DeferredToolResults) {
	// A queued resume may follow one that died after it posted the answer
	// without Redis to record it: its answer looks in the thread first.
	deps := &Deps{Origin: saved.Origin, retaken: from.path == ResumeHowQueue}
	if saved.OriginErr != nil {
		log.ErrorContext(ctx, "decode run origin", "err", saved.OriginErr)
	}
	deps.Asked(from.token, time.Time{})
	// The job stays pending until the run finished (followUpTokens, and
	// done below): if this process dies on the way, another replica
	// takes the run over; the claim and the call journal keep its
	// approved tools from running twice.
	if rs.Metrics != nil {
		// Timed by this process's clock from the end the store stamped:
		// a skew between replicas shows in it (a negative one as 0).
		lag := time.Duration(-1)
		if !from.ended.IsZero() {
			lag = max(time.Since(from.ended), 0)
		}
		rs.Metrics.RunResumed(from.path, lag)
	}
	log.InfoContext(ctx, "resuming run from saved state")
	rs.ResumeIn(ctx, agentrunner.RunInput{
		RunID: saved.RunID, History: saved.Messages, Results: results, Pending: &saved.Pending, Deps: deps,
	}, deps, func(suspended bool) {
		ctx := context.WithoutCancel(ctx)
		// A run that suspended again saved its state for its next token
		// over this one's: that state stays.
		if !suspended {
			if err := rs.State.DeleteRun(ctx, saved.RunID); err != nil {
				log.Error("delete run state", "err", err)
			}
		}
		rs.done(ctx, from)
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
