package store

import (
	"context"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/slackapprove/slackbot/approval"
)

// CardJobDelay is how long the durable update of a card that a decision
// schedules (approval.Decision.CardJob) waits before any replica's job
// consumer does it: the process that decided updates the card within
// milliseconds and drops the job (ReleaseCard); only if it dies first, or
// its update fails, does the job become due.
const CardJobDelay = 10 * time.Second

// cardLeaseTTL bounds how long one process may hold a card's lease while
// it updates the card (the lease also dies with its process's heartbeat).
const cardLeaseTTL = 30 * time.Second

// maxCardJob bounds the length of a card job's or lease holder's name.
const maxCardJob = 64

// cardLeaseKey is the lease of one call's card: the key Lock("card:<token>:<call>")
// takes, so that processes of either version exclude each other.
func (s *Store) cardLeaseKey(token, callID string) string {
	return s.key("lock:card:" + token + ":" + callID)
}

// cardHolder is the value of a card lease held by holder in this process:
// its Owner first, so that the lease dies with its heartbeat (lockScript).
func (s *Store) cardHolder(holder string) string { return s.opts.Owner + "/" + holder }

// cardJobMember is the member of the job retry schedule (JobQueue) that
// the durable card update job of a decision on callID is, as
// jobPromoteScript reads it: attempt 1, JobCardUpdate, the token, data
// "<job> <call id>" (data "<job>" without a call). A job name is random per
// decision, so two decisions never share one member.
func cardJobMember(token, callID, job string) string {
	data := job
	if callID != "" {
		data += " " + callID
	}
	return "1 " + string(JobCardUpdate) + " " + token + " " + data
}

// validCardJob reports whether name can name a card job or lease holder:
// 1 to 64 letters, digits, '-' or '_' (a token from agentrunner.NewToken).
func validCardJob(name string) bool {
	if name == "" || len(name) > maxCardJob {
		return false
	}
	for _, r := range name {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '_':
		default:
			return false
		}
	}
	return true
}

// LockCard implements approval.Store: it takes the lease of callID's card
// for holder, waiting (polling every few milliseconds) until the lease is
// free or its holder's process has no heartbeat any more, or until ctx
// ends, and returns the request as it stands under the lease, read in the
// same round trip. It returns approval.ErrNotFound (holding no lease) if
// the token is gone, approval.ErrInvalid for a malformed holder.
func (s *Store) LockCard(ctx context.Context, token, callID, holder string) (*approval.Request, error) {
	if !validToken(token) {
		return nil, fmt.Errorf("lock card %s: %w", short(token), approval.ErrNotFound)
	}
	if !validCardJob(holder) {
		return nil, fmt.Errorf("lock card %s: %w: bad holder", short(token), approval.ErrInvalid)
	}
	keys := []string{s.cardLeaseKey(token, callID), s.recKey(token)}
	wait := 2 * time.Millisecond
	for {
		res, err := lockCardScript.Run(ctx, s.rdb, keys, s.cardHolder(holder), cardLeaseTTL.Milliseconds(), s.procKey("")).StringSlice()
		if err != nil {
			return nil, fmt.Errorf("lock card %s: %w", short(token), err)
		}
		switch res[0] {
		case "gone":
			return nil, fmt.Errorf("lock card %s: %w", short(token), approval.ErrNotFound)
		case "held":
			a, err := s.parseApproval(token, flatMap(res[1:]))
			if err != nil {
				_ = s.ReleaseCard(ctx, token, callID, holder, "")
				return nil, fmt.Errorf("lock card %s: %w", short(token), err)
			}
			return a, nil
		}
		t := time.NewTimer(wait)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return nil, fmt.Errorf("lock card %s: %w", short(token), ctx.Err())
		}
		wait = min(wait*2, 50*time.Millisecond)
	}
}

// ReleaseCard implements approval.Store: in one round trip it frees the
// lease of callID's card if holder (non-empty) still holds it, and drops
// the durable card update job (empty: none) scheduled with a decision on
// callID (approval.Decision.CardJob), or, with callID empty, with a change
// of the whole request. It is detached from ctx's cancellation: a card
// updated must not keep its lease or its job because the caller gave up.
func (s *Store) ReleaseCard(ctx context.Context, token, callID, holder, job string) error {
	if !validToken(token) {
		return fmt.Errorf("release card %s: %w", short(token), approval.ErrNotFound)
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	lease, member := "", ""
	if holder != "" {
		lease = s.cardHolder(holder)
	}
	if job != "" {
		member = cardJobMember(token, callID, job)
	}
	keys := []string{s.cardLeaseKey(token, callID), s.jobsRetryKey()}
	if err := releaseCardScript.Run(ctx, s.rdb, keys, lease, member).Err(); err != nil && !isRedisNil(err) {
		return fmt.Errorf("release card %s: %w", short(token), err)
	}
	return nil
}

// ScheduleCards implements approval.Store: it schedules the durable
// update of every card of token (a JobCardUpdate due CardJobDelay from
// now, data job), before a change of the whole request (an API answer, a
// cancellation, a failure) whose process then updates the cards itself
// and drops the job (ReleaseCard with callID empty). It returns
// approval.ErrInvalid for a malformed job name.
func (s *Store) ScheduleCards(ctx context.Context, token, job string) error {
	if !validToken(token) {
		return fmt.Errorf("schedule cards %s: %w", short(token), approval.ErrNotFound)
	}
	if !validCardJob(job) {
		return fmt.Errorf("schedule cards %s: %w: bad job name", short(token), approval.ErrInvalid)
	}
	if err := s.addDue(ctx, false, dueJob{at: s.now().Add(CardJobDelay), member: cardJobMember(token, "", job)}); err != nil {
		return fmt.Errorf("schedule cards %s: %w", short(token), err)
	}
	return nil
}

// leaseLua takes a lease: free, or held by a process (the value up to its
// first '/') without a heartbeat (as lockScript does).
const leaseLua = `
local function takeLease(key, holder, ttl, proc)
  local cur = redis.call('GET', key)
  if cur then
    local who = string.match(cur, '^([^/]+)/')
    if not who or redis.call('EXISTS', proc .. who) == 1 then return false end
  end
  redis.call('SET', key, holder, 'PX', ttl)
  return true
end
`

// lockCardScript takes a card's lease and reads the record under it:
// {'gone'} if the record is gone (no lease taken), {'busy'} if another
// live holder has it, else {'held', record...}.
// KEYS: lease, rec. ARGV: holder, ttl (ms), heartbeat key prefix.
var lockCardScript = redis.NewScript(leaseLua + `
if redis.call('EXISTS', KEYS[2]) == 0 then return {'gone'} end
if not takeLease(KEYS[1], ARGV[1], ARGV[2], ARGV[3]) then return {'busy'} end
local r = redis.call('HGETALL', KEYS[2])
table.insert(r, 1, 'held')
return r
`)

// releaseCardScript frees a card's lease if its holder still holds it and
// drops a scheduled card job. KEYS: lease, job retry set. ARGV: holder
// (” for no lease), member (” for no job).
var releaseCardScript = redis.NewScript(`
if ARGV[1] ~= '' and redis.call('GET', KEYS[1]) == ARGV[1] then redis.call('DEL', KEYS[1]) end
if ARGV[2] ~= '' then redis.call('ZREM', KEYS[2], ARGV[2]) end
return 1
`)
