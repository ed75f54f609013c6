package store

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/redis/go-redis/v9"

	"github.com/slackapprove/slackbot/approval"
)

// outcomeScript records a call's tool outcome on its record, which keeps
// its TTL (HSET does not touch it), and returns the token's run and the
// call's tool for the audit event, in the same round trip.
// KEYS: rec. ARGV: call id, outcome JSON.
var outcomeScript = redis.NewScript(`
if redis.call('EXISTS', KEYS[1]) == 0 then return {'e:notfound'} end
local n = redis.call('HGET', KEYS[1], 'i:' .. ARGV[1])
if not n then return {'e:notpending'} end
redis.call('HSET', KEYS[1], 'c' .. n .. '.out', ARGV[2])
local rt = redis.call('HMGET', KEYS[1], 'run', 'c' .. n .. '.tool')
return {'ok', rt[1] or '', rt[2] or ''}
`)

// SetOutcome records what a decided call's tool did (status "ran" or
// "failed", and a summary), so every later rendering of the call shows it,
// whichever process renders. It also writes a tool_outcome audit event
// naming the token's run and the call's tool. It returns
// approval.ErrNotFound if the token is unknown or gone, and
// approval.ErrNotPending if callID is not one of its calls.
func (s *Store) SetOutcome(ctx context.Context, token, callID string, o approval.Outcome) error {
	if !validToken(token) {
		return fmt.Errorf("set outcome %s: %w", short(token), approval.ErrNotFound)
	}
	b, err := json.Marshal(o)
	if err != nil {
		return fmt.Errorf("set outcome %s: %w", short(token), err)
	}
	res, err := outcomeScript.Run(ctx, s.rdb, []string{s.recKey(token)}, callID, string(b)).StringSlice()
	if err != nil {
		return fmt.Errorf("set outcome %s: %w", short(token), err)
	}
	if err := codeErr(res[0]); err != nil {
		return fmt.Errorf("set outcome %s %s: %w", short(token), callID, err)
	}
	runID, tool := "", ""
	if len(res) == 3 {
		runID, tool = res[1], res[2]
	}
	return s.AuditToolOutcome(ctx, token, runID, callID, tool, o.Status, o.Summary)
}
