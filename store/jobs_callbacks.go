package store

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/slackapprove/slackbot/approval"
)

// callbackGroup is the consumer group of the callback stream.
const callbackGroup = "callbackers"

// Outcomes of a callback attempt, in the audit stream's Decision field.
const (
	CallbackDelivered = approval.CallbackDelivered
	CallbackRetrying  = approval.CallbackRetrying
	CallbackAbandoned = approval.CallbackAbandoned
)

// CallbackJob is one attempt to tell a token's callback URL how the token
// ended (approval's, so that the HTTP API names it without importing
// store).
type CallbackJob = approval.CallbackJob

// CallbackQueue hands the deliveries of callbacks to the processes that
// make them: a Redis stream with one consumer group, written by the token
// scripts atomically with the end of every token that has a callback URL,
// so exactly one delivery sequence starts per token end, whichever process
// ended it. Each job goes to one consumer; a job whose consumer died is
// taken over with Reclaim. A failed attempt is not retried in place:
// Retry acknowledges the job and schedules the next attempt in a sorted
// set, which Promote moves back onto the stream when it is due, so no
// process holds a job while it waits and any replica makes the next
// attempt.
//
// A consumer (every replica runs one) loops:
//
//	q.Promote(ctx)
//	jobs, _ := q.Read(ctx, me, time.Second)
//	stale, _ := q.Reclaim(ctx, me, time.Minute)
//	for _, j := range append(jobs, stale...) {
//		// deliver; on success q.Ack(ctx, j.ID), on failure
//		// q.Retry(ctx, j, next) or, out of attempts, q.Ack(ctx, j.ID)
//	}
type CallbackQueue struct {
	streamQueue
}

// CallbackQueue returns the store's callback queue; Read and Reclaim
// return at most count jobs at a time (default 16).
func (s *Store) CallbackQueue(count int64) *CallbackQueue {
	if count <= 0 {
		count = 16
	}
	return &CallbackQueue{streamQueue{
		s: s, key: s.callbacksKey(), group: callbackGroup, noun: "callback",
		count: count, pages: 1,
	}}
}

func (s *Store) callbackRetryKey() string { return s.key("callbacks:retry") }

// Read returns new jobs for consumer, waiting up to block for one (zero
// or less: not at all). A blocked read holds a pooled connection and does
// not end with ctx: keep block short. Read returns no jobs and a nil error
// when none arrived.
func (q *CallbackQueue) Read(ctx context.Context, consumer string, block time.Duration) ([]CallbackJob, error) {
	msgs, err := q.read(ctx, consumer, block)
	if err != nil {
		return nil, err
	}
	return callbackJobs(msgs), nil
}

// Reclaim takes over the jobs that were delivered to some consumer more
// than minIdle ago and not acknowledged (their consumer died mid-attempt)
// and returns them to consumer. Make minIdle longer than an attempt takes.
func (q *CallbackQueue) Reclaim(ctx context.Context, consumer string, minIdle time.Duration) ([]CallbackJob, error) {
	msgs, err := q.reclaim(ctx, consumer, minIdle)
	return callbackJobs(msgs), err
}

// ReclaimDead takes over for consumer the jobs pending with consumers
// whose process heartbeat is gone (consumers are named as their process's
// Tokens Owner), within seconds of the death rather than after an idle
// bound, and returns them. Each job is taken over by one reclaimer.
func (q *CallbackQueue) ReclaimDead(ctx context.Context, consumer string) ([]CallbackJob, error) {
	msgs, err := q.reclaimDead(ctx, consumer)
	return callbackJobs(msgs), err
}

func callbackJobs(msgs []redis.XMessage) []CallbackJob {
	if len(msgs) == 0 {
		return nil
	}
	jobs := make([]CallbackJob, 0, len(msgs))
	for _, m := range msgs {
		jobs = append(jobs, callbackJob(m))
	}
	return jobs
}

func callbackJob(m redis.XMessage) CallbackJob {
	str := func(k string) string { v, _ := m.Values[k].(string); return v }
	attempt, _ := strconv.Atoi(str("attempt"))
	return CallbackJob{ID: m.ID, Token: str("token"), State: parseState(str("state")), Attempt: max(attempt, 1), TraceParent: str("tp")}
}

// Ack removes jobs from the queue once handled: delivered, or given up.
func (q *CallbackQueue) Ack(ctx context.Context, ids ...string) error {
	return q.ack(ctx, ids)
}

// Retry acknowledges job and schedules its next attempt (job.Attempt+1)
// for at, atomically: the delivery sequence continues exactly once.
func (q *CallbackQueue) Retry(ctx context.Context, job CallbackJob, at time.Time) error {
	member := strconv.Itoa(job.Attempt+1) + " " + string(job.State) + " " + job.Token
	keys := []string{q.key, q.s.callbackRetryKey()}
	err := callbackRetryScript.Run(ctx, q.s.rdb, keys, callbackGroup, job.ID, ms(at), member, q.s.opts.Retention.Milliseconds()).Err()
	if err != nil && !isRedisNil(err) {
		return fmt.Errorf("schedule callback retry %s: %w", short(job.Token), err)
	}
	return nil
}

// Promote moves the attempts that are due (by the store's clock) from the
// retry schedule back onto the stream, where Read finds them, and reports
// how many it moved. Each is moved once however many processes promote.
func (q *CallbackQueue) Promote(ctx context.Context) (int, error) {
	keys := []string{q.s.callbackRetryKey(), q.key}
	n, err := callbackPromoteScript.Run(ctx, q.s.rdb, keys, ms(q.s.now()), 256, q.s.opts.Retention.Milliseconds()).Int()
	if err != nil {
		return 0, fmt.Errorf("promote callback retries: %w", err)
	}
	return n, nil
}

// callbackRetryScript acknowledges a job and schedules its next attempt,
// keeping the retry set at least retention more (never less: the jobs'
// set also holds work scheduled further out, see JobQueue.Schedule).
// KEYS: stream, retry set. ARGV: group, job id, due (ms), member
// ("<attempt> <state> <token>"), retention (ms).
var callbackRetryScript = redis.NewScript(`
redis.call('XACK', KEYS[1], ARGV[1], ARGV[2])
redis.call('XDEL', KEYS[1], ARGV[2])
redis.call('ZADD', KEYS[2], ARGV[3], ARGV[4])
if redis.call('PTTL', KEYS[2]) < tonumber(ARGV[5]) then redis.call('PEXPIRE', KEYS[2], ARGV[5]) end
return 1
`)

// callbackPromoteScript moves due attempts onto the stream.
// KEYS: retry set, stream. ARGV: now (ms), limit, retention (ms).
var callbackPromoteScript = redis.NewScript(`
local due = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', ARGV[1], 'LIMIT', 0, ARGV[2])
for _, m in ipairs(due) do
  redis.call('ZREM', KEYS[1], m)
  local attempt, state, token = string.match(m, '^(%d+) (%S+) (%S+)$')
  if attempt then
    redis.call('XADD', KEYS[2], '*', 'token', token, 'state', state, 'attempt', attempt)
  end
end
if #due > 0 then redis.call('PEXPIRE', KEYS[2], ARGV[3]) end
return #due
`)
