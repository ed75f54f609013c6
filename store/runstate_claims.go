package store

import (
	"context"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/slackapprove/slackbot/approval"
)

// ClaimDirect claims the resumption of the run waiting on token for owner,
// as ClaimResume does, for the process that recorded the decision ending
// token: it resumes the run at once, without a trip through the resume
// queue. It reports false, claiming nothing, when another owner holds the
// claim or when a live process waits on token in place (Tokens.WaitEnded): that
// waiter continues the run. The resume job stays on the queue until
// FinishResume, so that a crash hands the run to another replica.
func (s *Store) ClaimDirect(ctx context.Context, token, owner string) (bool, error) {
	if owner == "" {
		return false, fmt.Errorf("claim resume %s: no owner", short(token))
	}
	keys := []string{s.claimKey(token), s.recKey(token)}
	n, err := claimDirectScript.Run(ctx, s.rdb, keys, owner, s.opts.Grace.Milliseconds(), s.procKey("")).Int()
	if err != nil {
		return false, fmt.Errorf("claim resume %s: %w", short(token), err)
	}
	return n == 1, nil
}

// claimDirectScript is ClaimDirect: the claim, unless the token has a
// registered waiter whose process is alive.
// KEYS: claim, rec. ARGV: owner, ttl (ms), heartbeat key prefix.
var claimDirectScript = redis.NewScript(claimLua + `
local w = redis.call('HGET', KEYS[2], 'waiter')
if w and w ~= '' and redis.call('EXISTS', ARGV[3] .. string.match(w, '^[^/]*')) == 1 then return 0 end
if not claim(KEYS[1], ARGV[1], ARGV[2], ARGV[3]) then return 0 end
return 1
`)

// claimLua begins the scripts that claim the resumption of a token's run
// (ClaimResume, a waiter's claim in Tokens.WaitEnded).
const claimLua = `
-- claim claims the resumption of a run for owner in the key claimKey for
-- ttl ms. It succeeds if nobody holds the claim or owner already does, or
-- if the claim is tied to a process heartbeat that is gone. A claim is
-- tied ('@' before the owner) when its owner's process (the owner up to
-- its first '/') has a heartbeat, the key proc .. process, as it is
-- claimed: it dies with the process, so that another takes the run over.
local function claim(claimKey, owner, ttl, proc)
  local cur = redis.call('GET', claimKey)
  if cur then
    local tied = string.sub(cur, 1, 1) == '@'
    local who = cur
    if tied then who = string.sub(cur, 2) end
    if who == owner then return true end
    if not tied then return false end
    if redis.call('EXISTS', proc .. string.match(who, '^[^/]*')) == 1 then return false end
  end
  local v = owner
  if redis.call('EXISTS', proc .. string.match(owner, '^[^/]*')) == 1 then v = '@' .. owner end
  redis.call('SET', claimKey, v, 'PX', ttl)
  return true
end

-- takeOver is the claim of the process that waited on the token of record
-- rec: it drops owner's waiter registration. The run's job stays on the
-- resume stream until the run finished (finishScript): while owner lives
-- the queue leaves it alone, and once owner died another process takes
-- the run over with it.
local function takeOver(rec, owner)
  if redis.call('HGET', rec, 'waiter') == owner then redis.call('HDEL', rec, 'waiter') end
end
`

// claimScript claims the resumption of a token's run for owner: it
// succeeds if nobody holds the claim, owner already does, or the holder's
// process died (claimLua). With local set, the claimer is the process that
// waited on the token: it also drops its waiter registration.
// KEYS: claim, rec, resume. ARGV: owner, ttl (ms), group, local ('1'|'0'),
// heartbeat key prefix.
var claimScript = redis.NewScript(claimLua + `
if not claim(KEYS[1], ARGV[1], ARGV[2], ARGV[5]) then return 0 end
if ARGV[4] == '1' then takeOver(KEYS[2], ARGV[1]) end
return 1
`)

// releaseScript drops owner's claim, tied or not.
// KEYS: claim. ARGV: owner.
var releaseScript = redis.NewScript(`
local cur = redis.call('GET', KEYS[1])
if cur == ARGV[1] or cur == '@' .. ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
`)

// finishScript takes the resume job of a token whose run finished off
// the resume stream: nobody is to resume the run again.
// KEYS: rec, resume. ARGV: group.
var finishScript = redis.NewScript(`
local job = redis.call('HGET', KEYS[1], 'job')
if job then
  redis.pcall('XACK', KEYS[2], ARGV[1], job)
  redis.call('XDEL', KEYS[2], job)
end
return 1
`)

// ClaimResume claims the right to resume the run waiting on token for
// owner, so that an approved call executes at most once however many
// processes race to resume it. It reports true if owner now holds the
// claim (claiming again as the same owner succeeds), false if someone
// else does. The claim lasts ttl (zero means the store's Grace).
//
// A claim dies with its owner's process: when the owner, up to its first
// '/', is an Tokens Owner whose heartbeat runs as it claims, the claim is
// tied to that heartbeat, and once the heartbeat is gone (the process
// died; within 3 × TokensOptions.HeartbeatEvery) another owner's claim
// succeeds. The resume job stays on the queue until FinishResume, so that
// such a takeover is found (ResumeQueue.ReclaimDead, Reclaim). Tools do
// not run twice across a takeover: the runner's Journal (CallJournal)
// records which calls started. A claim without a heartbeat lasts its ttl.
// Call ReleaseResume when a resume fails before anything ran, so another
// process may try. It returns approval.ErrInvalid for an empty owner.
func (s *Store) ClaimResume(ctx context.Context, token, owner string, ttl time.Duration) (bool, error) {
	return s.claim(ctx, token, owner, ttl, false)
}

// ReleaseResume gives up owner's claim on token, if owner holds it.
func (s *Store) ReleaseResume(ctx context.Context, token, owner string) error {
	if err := releaseScript.Run(ctx, s.rdb, []string{s.claimKey(token)}, owner).Err(); err != nil {
		return fmt.Errorf("release resume %s: %w", short(token), err)
	}
	return nil
}

// FinishResume takes the resume job of token off the queue once the run
// that waited on token finished (or moved on to wait on a later token):
// nobody is to resume it from token again.
func (s *Store) FinishResume(ctx context.Context, token string) error {
	if err := finishScript.Run(ctx, s.rdb, []string{s.recKey(token), s.resumeKey()}, resumeGroup).Err(); err != nil {
		return fmt.Errorf("finish resume %s: %w", short(token), err)
	}
	return nil
}

func (s *Store) claim(ctx context.Context, token, owner string, ttl time.Duration, local bool) (bool, error) {
	if owner == "" {
		return false, fmt.Errorf("claim resume %s: %w: no owner", short(token), approval.ErrInvalid)
	}
	if ttl <= 0 {
		ttl = s.opts.Grace
	}
	loc := "0"
	if local {
		loc = "1"
	}
	keys := []string{s.claimKey(token), s.recKey(token), s.resumeKey()}
	n, err := claimScript.Run(ctx, s.rdb, keys, owner, ttl.Milliseconds(), resumeGroup, loc, s.procKey("")).Int()
	if err != nil {
		return false, fmt.Errorf("claim resume %s: %w", short(token), err)
	}
	return n == 1, nil
}
