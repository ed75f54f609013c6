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
	due := make([]dueJob, 0, len(work))
	for _, w := range work {
		kind, ok := scheduledKinds[w.Kind]
		if !ok || w.CallID == "" || w.N < 0 {
			return fmt.Errorf("schedule %s: %w: kind %q, call %q", short(token), approval.ErrInvalid, w.Kind, w.CallID)
		}
		due = append(due, dueJob{at: w.At, member: strings.Join([]string{"1", string(kind), token, strconv.Itoa(w.N), w.CallID}, " ")})
	}
	if err := q.s.addDue(ctx, false, due...); err != nil {
		return fmt.Errorf("schedule %s: %w", short(token), err)
	}
	return nil
}

// dueJob is a member of the job schedule ("<attempt> <kind> <token or ->
// <data>", as Promote reads it) and when it is due.
type dueJob struct {
	at     time.Time
	member string
}

// addDue puts jobs on the job schedule in one round trip; with keep, a job
// already there stays as it is (its time too, so that changes within its
// delay are done once). The schedule is kept at least until the last job
// is due plus the store's retention, never shortened: it holds work due at
// other times too.
func (s *Store) addDue(ctx context.Context, keep bool, jobs ...dueJob) error {
	if len(jobs) == 0 {
		return nil
	}
	now := s.now()
	last := now
	flag := ""
	if keep {
		flag = "NX"
	}
	args := []any{0, flag}
	for _, j := range jobs {
		args = append(args, ms(j.at), j.member)
		if j.at.After(last) {
			last = j.at
		}
	}
	args[0] = last.Sub(now).Milliseconds() + s.opts.Retention.Milliseconds()
	if err := addDueScript.Run(ctx, s.rdb, []string{s.jobsRetryKey()}, args...).Err(); err != nil && !isRedisNil(err) {
		return err
	}
	return nil
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

// addDueScript adds jobs to the job schedule, with ZADD's NX when ARGV[2]
// says so, and keeps the schedule for at least ARGV[1] ms more. KEYS:
// retry set. ARGV: ttl (ms), "NX" or "", then score, member pairs.
var addDueScript = redis.NewScript(`
for i = 3, #ARGV, 2 do
  if ARGV[2] == 'NX' then
    redis.call('ZADD', KEYS[1], 'NX', ARGV[i], ARGV[i + 1])
  else
    redis.call('ZADD', KEYS[1], ARGV[i], ARGV[i + 1])
  end
end
if redis.call('PTTL', KEYS[1]) < tonumber(ARGV[1]) then redis.call('PEXPIRE', KEYS[1], ARGV[1]) end
return 1
`)
