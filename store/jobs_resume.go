package store

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/slackapprove/slackbot/approval"
)

// resumeGroup is the consumer group of the resume stream.
const resumeGroup = "resumers"

// ResumeJob says that the run waiting on a token can continue: the token
// ended (State) and RunID names the run.
type ResumeJob struct {
	// ID is the job's stream entry id, to Ack.
	ID    string
	Token string
	RunID string
	State approval.State
	// TraceParent is the W3C trace context of what ended the token (a
	// click, an API call), "" without tracing: the resume continues its
	// trace on whichever replica takes the job.
	TraceParent string
}

// ResumeQueueOptions configures a ResumeQueue. The zero value is usable.
type ResumeQueueOptions struct {
	// DeferToWaiter is how long after a token ended its job is left to the
	// live process that waits on it locally; default 1 minute. A waiting
	// process claims the run within milliseconds of the end; the bound
	// only matters if it stopped waiting without saying so.
	DeferToWaiter time.Duration
	// Count bounds the jobs one Read or Reclaim returns; default 16.
	Count int64
}

// ResumeQueue hands the runs whose tokens ended to the processes that
// resume them: a Redis stream with one consumer group, written by the
// token scripts atomically with the end of every token that has a run id.
// Each job goes to one consumer; a job whose consumer died is taken over
// with Reclaim.
//
// A consumer (every replica runs one, named as its Tokens Owner) loops:
//
//	jobs, _ := q.Read(ctx, me, 5*time.Second)
//	dead, _ := q.ReclaimDead(ctx, me)
//	stale, _ := q.Reclaim(ctx, me, 10*time.Second)
//	for _, j := range jobs + dead + stale {
//		ok, _ := st.ClaimResume(ctx, j.Token, me+"/queue", 0)
//		if ok {
//			// LoadRun(j.RunID), Get(j.Token).Results, continue the run;
//			// once it finished: FinishResume, DeleteRun, Ack. On failure
//			// before any tool ran, ReleaseResume and do not Ack.
//		}
//		// Not ok: a live process resumes it; leave the job pending.
//	}
//
// Read and Reclaim leave out (but keep pending) the jobs a live process
// is on: of tokens it waits on locally (Tokens.WaitEnded), and of runs it
// claimed and has not finished. If that process dies, its heartbeat goes
// and the job is handed out again, so the run is taken over.
type ResumeQueue struct {
	streamQueue
	opts ResumeQueueOptions
}

// ResumeQueue returns the store's resume queue.
func (s *Store) ResumeQueue(opts ResumeQueueOptions) *ResumeQueue {
	if opts.DeferToWaiter <= 0 {
		opts.DeferToWaiter = time.Minute
	}
	if opts.Count <= 0 {
		opts.Count = 16
	}
	return &ResumeQueue{
		streamQueue: streamQueue{
			s: s, key: s.resumeKey(), group: resumeGroup, noun: "resume",
			// Jobs left to live waiters stay pending, so a reclaim may
			// have to page past them.
			count: opts.Count, pages: 10,
		},
		opts: opts,
	}
}

// Read returns new jobs for consumer, waiting up to block for one (zero
// or less: not at all). Keep block short: a blocked read holds a pooled
// connection and does not end with ctx. Read returns no jobs and a nil
// error when none arrived.
func (q *ResumeQueue) Read(ctx context.Context, consumer string, block time.Duration) ([]ResumeJob, error) {
	msgs, err := q.read(ctx, consumer, block)
	if err != nil {
		return nil, err
	}
	return q.filter(ctx, msgs)
}

// Reclaim takes over the jobs that were delivered to some consumer more
// than minIdle ago and not acknowledged (their consumer died, or left
// them to a live waiter) and returns them to consumer.
func (q *ResumeQueue) Reclaim(ctx context.Context, consumer string, minIdle time.Duration) ([]ResumeJob, error) {
	msgs, err := q.reclaim(ctx, consumer, minIdle)
	if err != nil {
		return nil, err
	}
	return q.filter(ctx, msgs)
}

// Ack removes jobs from the queue once handled.
func (q *ResumeQueue) Ack(ctx context.Context, ids ...string) error {
	return q.ack(ctx, ids)
}

// ReclaimDead takes over for consumer the jobs pending with consumers
// whose process heartbeat is gone (consumers are named as their process's
// Tokens Owner), and returns them, leaving out those filter leaves out.
// Each job is taken over by one reclaimer however many race.
func (q *ResumeQueue) ReclaimDead(ctx context.Context, consumer string) ([]ResumeJob, error) {
	msgs, err := q.reclaimDead(ctx, consumer)
	if err != nil {
		return nil, err
	}
	return q.filter(ctx, msgs)
}

// filter turns stream entries into jobs, leaving out (pending, for
// Reclaim to look at again) those a live process is on: whose token a
// live process waits on locally and that ended less than DeferToWaiter
// ago, and those whose run a live process claimed and is still resuming.
func (q *ResumeQueue) filter(ctx context.Context, msgs []redis.XMessage) ([]ResumeJob, error) {
	if len(msgs) == 0 {
		return nil, nil
	}
	jobs := make([]ResumeJob, 0, len(msgs))
	for _, m := range msgs {
		str := func(k string) string { v, _ := m.Values[k].(string); return v }
		jobs = append(jobs, ResumeJob{ID: m.ID, Token: str("token"), RunID: str("run"), State: parseState(str("state")), TraceParent: str("tp")})
	}
	recs := make([]*redis.SliceCmd, len(jobs))
	claims := make([]*redis.StringCmd, len(jobs))
	_, err := q.s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, j := range jobs {
			recs[i] = p.HMGet(ctx, q.s.recKey(j.Token), "waiter", "ended")
			claims[i] = p.Get(ctx, q.s.claimKey(j.Token))
		}
		return nil
	})
	if err != nil && !isRedisNil(err) {
		return nil, fmt.Errorf("read resume jobs' waiters: %w", err)
	}
	now := q.s.now()
	owners := make([]string, len(jobs))
	for i, c := range recs {
		v := c.Val()
		owner, _ := v[0].(string)
		ended, _ := v[1].(string)
		if owner != "" && now.Sub(fromMS(ended)) < q.opts.DeferToWaiter {
			owners[i] = owner
		} else if holder, tied := strings.CutPrefix(claims[i].Val(), "@"); tied {
			owners[i], _, _ = strings.Cut(holder, "/")
		}
	}
	alive := make([]*redis.IntCmd, len(jobs))
	_, err = q.s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, o := range owners {
			if o != "" {
				alive[i] = p.Exists(ctx, q.s.procKey(o))
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read resume jobs' waiters: %w", err)
	}
	out := jobs[:0]
	for i, j := range jobs {
		if alive[i] != nil && alive[i].Val() == 1 {
			continue
		}
		out = append(out, j)
	}
	return out, nil
}
