package store

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"
)

// ConsumeOptions configures a consumer loop (ResumeQueue.Consume,
// JobQueue.Consume). The zero value is usable.
type ConsumeOptions struct {
	// Block is how long one read waits for a job; it also bounds how long
	// the loop takes to end once ctx ends. Default 2s.
	Block time.Duration
	// ReclaimIdle is how long a job may stay unacknowledged with a
	// consumer that still lives before another takes it over. Default:
	// 10s for resume jobs, DefaultJobReclaimIdle for jobs.
	ReclaimIdle time.Duration
	// Log receives the loop's failures; nil discards them.
	Log *slog.Logger
}

func (o ConsumeOptions) withDefaults(reclaimIdle time.Duration) ConsumeOptions {
	if o.Block <= 0 {
		o.Block = 2 * time.Second
	}
	if o.ReclaimIdle <= 0 {
		o.ReclaimIdle = reclaimIdle
	}
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	return o
}

// DefaultResumeReclaimIdle is how long a resume job may sit
// unacknowledged before another consumer looks at it again.
const DefaultResumeReclaimIdle = 10 * time.Second

// Consume hands the resume jobs of consumer to handle, one at a time,
// until ctx ends: new jobs (Read), the jobs of consumers whose process
// died (ReclaimDead: their runs, waiting or in the middle of resuming,
// are taken over once the heartbeat is gone), and jobs left unacknowledged
// past ReclaimIdle (left to a live waiter, or held by a consumer that lost
// them). handle acknowledges a job itself (Ack), when the run it resumes
// has finished; a job it does not acknowledge is handed out again.
//
// consumer must be named as its process's Tokens Owner, and Consume
// started once that process's heartbeat runs (Tokens.Ready).
func (q *ResumeQueue) Consume(ctx context.Context, consumer string, opts ConsumeOptions, handle func(context.Context, ResumeJob)) {
	opts = opts.withDefaults(DefaultResumeReclaimIdle)
	for ctx.Err() == nil {
		jobs, ok := nextBatch(ctx, consumer, opts, "resume queue", "resume jobs", q.Read, q.ReclaimDead, q.Reclaim)
		if !ok {
			continue
		}
		for _, j := range jobs {
			handle(ctx, j)
		}
	}
}

// nextBatch is one look of a consumer loop at its queue: the new jobs
// (read, blocking up to opts.Block), the jobs of consumers whose process
// died (dead), and the jobs left unacknowledged past opts.ReclaimIdle
// (stale). A failed read is logged and waited out (ok false); a failed
// reclaim is logged and the rest is handed out. queue and jobs name them
// in the log.
func nextBatch[J any](ctx context.Context, consumer string, opts ConsumeOptions, queue, jobs string,
	read func(context.Context, string, time.Duration) ([]J, error),
	dead func(context.Context, string) ([]J, error),
	stale func(context.Context, string, time.Duration) ([]J, error),
) (batch []J, ok bool) {
	batch, err := read(ctx, consumer, opts.Block)
	if err != nil {
		if ctx.Err() == nil {
			opts.Log.ErrorContext(ctx, "read "+queue, "err", err)
			sleep(ctx, time.Second)
		}
		return nil, false
	}
	more, err := dead(ctx, consumer)
	if err != nil && ctx.Err() == nil {
		opts.Log.ErrorContext(ctx, "reclaim "+jobs+" of stopped replicas", "err", err)
	}
	batch = append(batch, more...)
	more, err = stale(ctx, consumer, opts.ReclaimIdle)
	if err != nil && ctx.Err() == nil {
		opts.Log.ErrorContext(ctx, "reclaim stale "+jobs, "err", err)
	}
	return append(batch, more...), true
}

// Errors a job handler returns to JobQueue.Consume to say what becomes of
// the job other than "done" (nil) or "failed, retry after a backoff".
var (
	// ErrJobLeft leaves the job pending for another consumer (e.g. a kind
	// this version does not know, queued by a newer replica during a
	// rolling update): Reclaim hands it on after ReclaimIdle.
	ErrJobLeft = errors.New("job left for another consumer")
	// ErrJobBusy means another live consumer is doing the job's work: it
	// is looked at again after JobConsumeOptions.Backoff, without
	// spending an attempt.
	ErrJobBusy = errors.New("job busy elsewhere")
)

// Job consumer defaults; see JobConsumeOptions.
const (
	DefaultJobTimeout     = 2 * time.Minute
	DefaultJobReclaimIdle = 2*DefaultJobTimeout + 30*time.Second
	DefaultJobAttempts    = 8
	DefaultJobBackoff     = 5 * time.Second
	DefaultJobMaxBackoff  = 5 * time.Minute
	DefaultJobParallel    = 8
)

// JobConsumeOptions configures JobQueue.Consume. The zero value is usable.
type JobConsumeOptions struct {
	ConsumeOptions
	// Timeout bounds one attempt of a job (every card of a token updated,
	// Slack's rate limits included); default DefaultJobTimeout. The
	// default ReclaimIdle is past twice this, so only a consumer that lost
	// track of a job loses it; a dead consumer's jobs are taken over within
	// seconds (ReclaimDead).
	Timeout time.Duration
	// Attempts bounds the attempts of one job; the backoff between them
	// doubles from Backoff up to MaxBackoff. Defaults: 8, 5s and 5m (about
	// 20 minutes in all).
	Attempts            int
	Backoff, MaxBackoff time.Duration
	// Parallel bounds the jobs worked on at once; default 8.
	Parallel int
}

func (o JobConsumeOptions) withDefaults() JobConsumeOptions {
	o.ConsumeOptions = o.ConsumeOptions.withDefaults(DefaultJobReclaimIdle)
	if o.Timeout <= 0 {
		o.Timeout = DefaultJobTimeout
	}
	if o.Attempts <= 0 {
		o.Attempts = DefaultJobAttempts
	}
	if o.Backoff <= 0 {
		o.Backoff = DefaultJobBackoff
	}
	if o.MaxBackoff <= 0 {
		o.MaxBackoff = DefaultJobMaxBackoff
	}
	if o.Parallel <= 0 {
		o.Parallel = DefaultJobParallel
	}
	return o
}

// Consume works the job queue as consumer until ctx ends: due retries are
// promoted, and new jobs, the jobs of consumers whose process died and the
// jobs left unacknowledged past ReclaimIdle go to handle, Parallel at a
// time, each bounded by Timeout. A job handle does (nil) is acknowledged;
// one that fails is retried after its backoff, and given up after
// Attempts; see ErrJobLeft and ErrJobBusy for the others. A job whose
// attempt ends because ctx ended stays pending for another consumer.
//
// consumer must be named as its process's Tokens Owner, and Consume
// started once that process's heartbeat runs (Tokens.Ready): other
// consumers take over the jobs of a consumer without one.
func (q *JobQueue) Consume(ctx context.Context, consumer string, opts JobConsumeOptions, handle func(context.Context, Job) error) {
	opts = opts.withDefaults()
	for ctx.Err() == nil {
		if _, err := q.Promote(ctx); err != nil && ctx.Err() == nil {
			opts.Log.ErrorContext(ctx, "promote job retries", "err", err)
		}
		jobs, ok := nextBatch(ctx, consumer, opts.ConsumeOptions, "job queue", "jobs", q.Read, q.ReclaimDead, q.Reclaim)
		if !ok {
			continue
		}
		q.work(ctx, opts, jobs, handle)
	}
}

// work does jobs, opts.Parallel at a time, and returns when all are done.
func (q *JobQueue) work(ctx context.Context, opts JobConsumeOptions, jobs []Job, handle func(context.Context, Job) error) {
	sem := make(chan struct{}, opts.Parallel)
	var wg sync.WaitGroup
	for _, j := range jobs {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			q.attempt(ctx, opts, j, handle)
		})
	}
	wg.Wait()
}

// attempt makes one attempt at j and then acknowledges it, schedules its
// next attempt, or (shutting down, or ErrJobLeft) leaves it pending.
func (q *JobQueue) attempt(ctx context.Context, opts JobConsumeOptions, j Job, handle func(context.Context, Job) error) {
	log := JobLogger(opts.Log, j)
	jctx, cancel := context.WithTimeout(ctx, opts.Timeout)
	err := handle(jctx, j)
	cancel()
	if errors.Is(err, ErrJobLeft) || ctx.Err() != nil {
		return // another consumer takes it over
	}
	if err == nil {
		if err := q.Ack(ctx, j.ID); err != nil {
			log.ErrorContext(ctx, "acknowledge job", "err", err)
		}
		return
	}
	q.failed(ctx, opts, log, j, err)
}

// failed schedules the next attempt of j after its backoff, or gives up on
// it after opts.Attempts.
func (q *JobQueue) failed(ctx context.Context, opts JobConsumeOptions, log *slog.Logger, j Job, err error) {
	if errors.Is(err, ErrJobBusy) {
		// Not a failure: look again soon, without spending an attempt,
		// until the consumer doing it is done or dead.
		j.Attempt--
		if err := q.Retry(ctx, j, opts.Backoff); err != nil {
			log.ErrorContext(ctx, "schedule job retry", "err", err)
		}
		return
	}
	if j.Attempt >= opts.Attempts {
		log.ErrorContext(ctx, "job failed; giving up", "err", err)
		if err := q.Ack(ctx, j.ID); err != nil {
			log.ErrorContext(ctx, "acknowledge job", "err", err)
		}
		return
	}
	wait := min(opts.Backoff<<(j.Attempt-1), opts.MaxBackoff)
	log.WarnContext(ctx, "job failed; will retry", "in", wait, "err", err)
	if err := q.Retry(ctx, j, wait); err != nil {
		// Left pending: Reclaim takes it up after ReclaimIdle.
		log.ErrorContext(ctx, "schedule job retry", "err", err)
	}
}

// JobLogger is log with j's kind, attempt and token (a prefix of it, safe
// to log), as the consumer logs them.
func JobLogger(log *slog.Logger, j Job) *slog.Logger {
	token := j.Token
	if len(token) > 6 {
		token = token[:6] + "…"
	}
	return log.With("job", j.Kind, "token", token, "attempt", j.Attempt)
}

// sleep waits d or until ctx ends.
func sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}
