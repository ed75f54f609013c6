package store

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/slackapprove/slackbot/approval"
)

// jobsGroup is the consumer group of the job stream.
const jobsGroup = "workers"

// JobKind says what a job does; the consumer dispatches on it.
type JobKind string

// JobCardUpdate re-renders every Slack card of Job.Token from the token's
// current state (after it expired: buttons removed, "expired" shown).
const JobCardUpdate JobKind = "card.update"

// JobThreadAnswer posts a run's answer in its thread, once: Job.Data is
// the answer (runs.Answer as JSON), and BeginAnswer / AnswerPosted record
// whether it was posted.
const JobThreadAnswer JobKind = "thread.answer"

// Job is one piece of work that must happen once after a token changed,
// whichever process changed it and whether or not that process lives on.
type Job struct {
	// ID is the job's stream entry id, for Ack and Retry.
	ID   string
	Kind JobKind
	// Token is the resume token the job is about; empty for kinds that are
	// about no token.
	Token string
	// Data is the job's payload, opaque to the queue; empty for kinds the
	// token says everything for (JobCardUpdate).
	Data string
	// Attempt counts the attempts of this job, from 1.
	Attempt int
	// TraceParent is the W3C trace context of the span that added the
	// job (a run's, posting its answer), on the first attempt; "" without
	// tracing.
	TraceParent string
}

// JobQueue hands after-decision work (updating Slack cards, and later
// thread answers and tool outcomes) to the processes that do it, durably:
// a Redis stream with one consumer group, written by the token scripts
// atomically with the change that calls for the job (expireScript queues
// a JobCardUpdate in the script that claims the expiry), or by Add.
//
// Each job goes to one consumer and stays pending until it is
// acknowledged, which the consumer does only once the work is done. A job
// whose consumer died is taken over by another: ReclaimDead takes the jobs
// of consumers whose process heartbeat (see TokensOptions.HeartbeatEvery)
// is gone, within seconds, and Reclaim those idle longer than a bound, in
// case a live consumer lost track of one. A failed attempt is not retried
// in place: Retry acknowledges the job and schedules the next attempt in a
// sorted set, which Promote moves back onto the stream when it is due, so
// no process holds a job while it backs off.
//
// A consumer must be named as its process's Tokens Owner, whose
// heartbeat tells that it lives. Every replica runs one, looping:
//
//	q.Promote(ctx)
//	jobs, _ := q.Read(ctx, owner, time.Second)
//	dead, _ := q.ReclaimDead(ctx, owner)
//	stale, _ := q.Reclaim(ctx, owner, 5*time.Minute)
//	for _, j := range jobs + dead + stale {
//		// do it; on success q.Ack(ctx, j.ID), on failure
//		// q.Retry(ctx, j, backoff) or, out of attempts, q.Ack(ctx, j.ID)
//	}
//
// The work itself must be idempotent: a consumer that stalls past the
// reclaim bound and then finishes does it a second time.
type JobQueue struct {
	streamQueue
}

// JobQueue returns the store's job queue; Read and Reclaim return at most
// count jobs at a time (default 16).
func (s *Store) JobQueue(count int64) *JobQueue {
	if count <= 0 {
		count = 16
	}
	return &JobQueue{streamQueue{
		s: s, key: s.jobsKey(), group: jobsGroup, noun: "job",
		count: count, pages: 4,
	}}
}

func (s *Store) jobsKey() string      { return s.key("jobs") }
func (s *Store) jobsRetryKey() string { return s.key("jobs:retry") }

// Add queues a job of kind about token with payload data and returns its
// id. Kind must be a single word of letters, digits, '.', '_' or '-', and
// token a valid token or empty; otherwise Add returns approval.ErrInvalid.
func (q *JobQueue) Add(ctx context.Context, kind JobKind, token, data string) (string, error) {
	if !validKind(kind) || (token != "" && !validToken(token)) {
		return "", fmt.Errorf("add job: %w: bad kind or token", approval.ErrInvalid)
	}
	id, err := jobAddScript.Run(ctx, q.s.rdb, []string{q.key}, string(kind), token, data, q.s.opts.Retention.Milliseconds(), traceParent(ctx)).Text()
	if err != nil {
		return "", fmt.Errorf("add %s job %s: %w", kind, short(token), err)
	}
	return id, nil
}

func validKind(k JobKind) bool {
	if k == "" || len(k) > 64 {
		return false
	}
	for _, r := range k {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '.', r == '_', r == '-':
		default:
			return false
		}
	}
	return true
}

// Read returns new jobs for consumer, waiting up to block for one (zero or
// less: not at all). A blocked read holds a pooled connection and does not
// end with ctx: keep block short. Read returns no jobs and a nil error
// when none arrived.
func (q *JobQueue) Read(ctx context.Context, consumer string, block time.Duration) ([]Job, error) {
	msgs, err := q.read(ctx, consumer, block)
	if err != nil {
		return nil, err
	}
	return jobs(msgs), nil
}

// Reclaim takes over the jobs delivered to some consumer more than minIdle
// ago and not acknowledged, and returns them to consumer. Make minIdle
// longer than an attempt may take.
func (q *JobQueue) Reclaim(ctx context.Context, consumer string, minIdle time.Duration) ([]Job, error) {
	msgs, err := q.reclaim(ctx, consumer, minIdle)
	if err != nil {
		return nil, err
	}
	return jobs(msgs), nil
}

// ReclaimDead takes over for consumer the jobs pending with consumers
// whose process heartbeat is gone (the process died or stopped), at most
// count of them, and returns them. Each job is taken over by one
// reclaimer however many race.
func (q *JobQueue) ReclaimDead(ctx context.Context, consumer string) ([]Job, error) {
	msgs, err := q.reclaimDead(ctx, consumer)
	if err != nil {
		return nil, err
	}
	return jobs(msgs), nil
}

func jobs(msgs []redis.XMessage) []Job {
	if len(msgs) == 0 {
		return nil
	}
	out := make([]Job, 0, len(msgs))
	for _, m := range msgs {
		str := func(k string) string { v, _ := m.Values[k].(string); return v }
		attempt, _ := strconv.Atoi(str("attempt"))
		out = append(out, Job{ID: m.ID, Kind: JobKind(str("kind")), Token: str("token"), Data: str("data"), Attempt: max(attempt, 1), TraceParent: str("tp")})
	}
	return out
}

// Ack removes jobs from the queue once done, or given up.
func (q *JobQueue) Ack(ctx context.Context, ids ...string) error {
	return q.ack(ctx, ids)
}

// Retry acknowledges job and schedules its next attempt (job.Attempt+1)
// after wait (by the store's clock), atomically: the job continues
// exactly once. Identical jobs waiting for their next attempt at once are
// merged into one.
func (q *JobQueue) Retry(ctx context.Context, job Job, wait time.Duration) error {
	at := q.s.now().Add(wait)
	token := job.Token
	if token == "" {
		token = "-"
	}
	member := strings.Join([]string{strconv.Itoa(job.Attempt + 1), string(job.Kind), token, job.Data}, " ")
	keys := []string{q.key, q.s.jobsRetryKey()}
	err := callbackRetryScript.Run(ctx, q.s.rdb, keys, q.group, job.ID, ms(at), member, q.s.opts.Retention.Milliseconds()).Err()
	if err != nil && !isRedisNil(err) {
		return fmt.Errorf("schedule %s job retry %s: %w", job.Kind, short(job.Token), err)
	}
	return nil
}

// Promote moves the attempts that are due (by the store's clock) from the
// retry schedule back onto the stream, where Read finds them, and reports
// how many it moved. Each is moved once however many processes promote.
func (q *JobQueue) Promote(ctx context.Context) (int, error) {
	keys := []string{q.s.jobsRetryKey(), q.key}
	n, err := jobPromoteScript.Run(ctx, q.s.rdb, keys, ms(q.s.now()), 256, q.s.opts.Retention.Milliseconds()).Int()
	if err != nil {
		return 0, fmt.Errorf("promote job retries: %w", err)
	}
	return n, nil
}

// jobAddScript queues a job. KEYS: stream. ARGV: kind, token, data,
// retention (ms), traceparent (or empty).
var jobAddScript = redis.NewScript(`
local id
if ARGV[5] ~= '' then
  id = redis.call('XADD', KEYS[1], '*', 'kind', ARGV[1], 'token', ARGV[2], 'data', ARGV[3], 'attempt', '1', 'tp', ARGV[5])
else
  id = redis.call('XADD', KEYS[1], '*', 'kind', ARGV[1], 'token', ARGV[2], 'data', ARGV[3], 'attempt', '1')
end
redis.call('PEXPIRE', KEYS[1], ARGV[4])
return id
`)

// jobPromoteScript moves due attempts onto the stream; a member is
// "<attempt> <kind> <token or -> <data>".
// KEYS: retry set, stream. ARGV: now (ms), limit, retention (ms).
var jobPromoteScript = redis.NewScript(`
local due = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', ARGV[1], 'LIMIT', 0, ARGV[2])
for _, m in ipairs(due) do
  redis.call('ZREM', KEYS[1], m)
  local attempt, kind, token, data = string.match(m, '^(%d+) (%S+) (%S+) (.*)$')
  if attempt then
    if token == '-' then token = '' end
    redis.call('XADD', KEYS[2], '*', 'kind', kind, 'token', token, 'data', data, 'attempt', attempt)
  end
end
if #due > 0 then redis.call('PEXPIRE', KEYS[2], ARGV[3]) end
return #due
`)
