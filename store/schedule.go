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

// Job kinds of scheduled work (approval.Scheduler): their Data is
// "<n> <call id>" (ScheduledJob decodes it).
const (
	// JobRemind reminds a pending call's approvers in its card's thread.
	JobRemind JobKind = "call.remind"
	// JobEscalate escalates a pending call.
	JobEscalate JobKind = "call.escalate"
)

var scheduledKinds = map[string]JobKind{approval.Remind: JobRemind, approval.Escalate: JobEscalate}

var _ approval.Scheduler = (*JobQueue)(nil)

// Schedule implements approval.Scheduler: each piece of work becomes a
// job of the queue, due at its time (by the store's clock, as Promote
// reads it), in one round trip. The jobs wait in the schedule of retries,
// so no process holds them until they are due; work scheduled twice is
// one job (its member is the same). The schedule is kept at least until
// the last piece is due plus the queue's retention.
func (q *JobQueue) Schedule(ctx context.Context, token string, work ...approval.Scheduled) error {
	if !validToken(token) {
		return fmt.Errorf("schedule: %w: bad token", approval.ErrInvalid)
	}
	args := []any{0}
	last := q.s.now()
	for _, w := range work {
		kind, ok := scheduledKinds[w.Kind]
		if !ok || w.CallID == "" || w.N < 0 {
			return fmt.Errorf("schedule %s: %w: kind %q, call %q", short(token), approval.ErrInvalid, w.Kind, w.CallID)
		}
		member := strings.Join([]string{"1", string(kind), token, strconv.Itoa(w.N), w.CallID}, " ")
		args = append(args, ms(w.At), member)
		last = maxTime(last, w.At)
	}
	if len(work) == 0 {
		return nil
	}
	args[0] = last.Sub(q.s.now()).Milliseconds() + q.s.opts.Retention.Milliseconds()
	if err := scheduleScript.Run(ctx, q.s.rdb, []string{q.s.jobsRetryKey()}, args...).Err(); err != nil && !isRedisNil(err) {
		return fmt.Errorf("schedule %s: %w", short(token), err)
	}
	return nil
}

func maxTime(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// ScheduledJob decodes a JobRemind or JobEscalate job into the work it
// carries; ok is false for another kind or malformed data.
func ScheduledJob(j Job) (approval.Scheduled, bool) {
	var kind string
	for k, jk := range scheduledKinds {
		if jk == j.Kind {
			kind = k
		}
	}
	n, call, found := strings.Cut(j.Data, " ")
	count, err := strconv.Atoi(n)
	if kind == "" || !found || call == "" || err != nil || count < 0 {
		return approval.Scheduled{}, false
	}
	return approval.Scheduled{Kind: kind, CallID: call, N: count}, true
}

// scheduleScript adds scheduled jobs to the retry schedule, keeping the
// schedule for at least ARGV[1] ms more. KEYS: retry set. ARGV: ttl (ms),
// then score, member pairs.
var scheduleScript = redis.NewScript(`
for i = 2, #ARGV, 2 do
  redis.call('ZADD', KEYS[1], ARGV[i], ARGV[i + 1])
end
if redis.call('PTTL', KEYS[1]) < tonumber(ARGV[1]) then redis.call('PEXPIRE', KEYS[1], ARGV[1]) end
return 1
`)
