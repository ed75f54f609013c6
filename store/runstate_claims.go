package store

import (
	"context"
	"fmt"

	"github.com/redis/go-redis/v9"
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
