package store

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/redis/go-redis/v9"
)

// outcomeScript records a call's tool outcome on its record, which keeps
// its TTL (HSET does not touch it).
// KEYS: rec. ARGV: call id, outcome JSON.
var outcomeScript = redis.NewScript(`
if redis.call('EXISTS', KEYS[1]) == 0 then return 'e:notfound' end
local n = redis.call('HGET', KEYS[1], 'i:' .. ARGV[1])
if not n then return 'e:notpending' end
redis.call('HSET', KEYS[1], 'c' .. n .. '.out', ARGV[2])
return 'ok'
`)

// SetOutcome records what a decided call's tool did (status "ran" or
// "failed", and a summary), so every later rendering of the call shows it,
// whichever process renders. It also writes a tool_outcome audit event.
// It returns ErrNotFound if the token is unknown or gone, and
// ErrNotPendingCall if callID is not one of its calls.
func (s *Store) SetOutcome(ctx context.Context, token, runID, callID, tool string, o ToolOutcome) error {
	if !validToken(token) {
		return fmt.Errorf("set outcome %s: %w", short(token), ErrNotFound)
	}
	b, err := json.Marshal(o)
	if err != nil {
		return fmt.Errorf("set outcome %s: %w", short(token), err)
	}
	code, err := outcomeScript.Run(ctx, s.rdb, []string{s.recKey(token)}, callID, string(b)).Text()
	if err != nil {
		return fmt.Errorf("set outcome %s: %w", short(token), err)
	}
	if err := codeErr(code); err != nil {
		return fmt.Errorf("set outcome %s %s: %w", short(token), callID, err)
	}
	return s.AuditToolOutcome(ctx, token, runID, callID, tool, o.Status, o.Summary)
}
