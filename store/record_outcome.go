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

// reportOutcomeScript records a reported outcome of an approved call once:
// the first report stands, and a later one gets it back unchanged.
// KEYS: rec. ARGV: call id, outcome JSON.
// Returns {'ok', run, tool} when it recorded the outcome, {'had', outcome
// JSON} when the call had one, or an error code.
var reportOutcomeScript = redis.NewScript(`
if redis.call('EXISTS', KEYS[1]) == 0 then return {'e:notfound'} end
local n = redis.call('HGET', KEYS[1], 'i:' .. ARGV[1])
if not n then return {'e:notfound'} end
local p = 'c' .. n .. '.'
local f = redis.call('HMGET', KEYS[1], p .. 'st', p .. 'out', 'run', p .. 'tool')
if f[1] ~= 'approved' then return {'notapproved', f[1] or ''} end
if f[2] then return {'had', f[2]} end
redis.call('HSET', KEYS[1], p .. 'out', ARGV[2])
return {'ok', f[3] or '', f[4] or ''}
`)

// ReportOutcome records what became of an approved call, as by (an API
// client) reports it, once: it returns the outcome the call holds and
// whether this report recorded it (false: an earlier one had, and nothing
// changed). The first report is written to the audit stream under by. It
// returns approval.ErrNotFound if the token or the call is unknown, and
// ECONFLICT if the call is not approved (pending, denied, answered, or
// ended with its request).
func (s *Store) ReportOutcome(ctx context.Context, token, callID, by string, o approval.Outcome) (approval.Outcome, bool, error) {
	if !validToken(token) {
		return approval.Outcome{}, false, fmt.Errorf("report outcome %s: %w", short(token), approval.ErrNotFound)
	}
	b, err := json.Marshal(o)
	if err != nil {
		return approval.Outcome{}, false, fmt.Errorf("report outcome %s: %w", short(token), err)
	}
	res, err := reportOutcomeScript.Run(ctx, s.rdb, []string{s.recKey(token)}, callID, string(b)).StringSlice()
	if err != nil {
		return approval.Outcome{}, false, fmt.Errorf("report outcome %s: %w", short(token), err)
	}
	switch res[0] {
	case "ok":
		err := s.Audit(ctx, AuditEvent{Type: AuditToolOutcome, Token: token, RunID: res[1], CallID: callID, Tool: res[2], By: by, Decision: o.Status, Detail: o.Summary})
		return o, true, err
	case "had":
		var had approval.Outcome
		if err := json.Unmarshal([]byte(res[1]), &had); err != nil {
			return approval.Outcome{}, false, fmt.Errorf("report outcome %s %s: the recorded outcome: %w", short(token), callID, err)
		}
		return had, false, nil
	case "notapproved":
		state := res[1]
		if state == redisUndecided || state == "" {
			state = "not decided"
		}
		return approval.Outcome{}, false, approval.Errorf(approval.ECONFLICT, "call %s is %s: only an approved call's outcome can be reported", callID, state)
	}
	return approval.Outcome{}, false, fmt.Errorf("report outcome %s %s: %w", short(token), callID, codeErr(res[0]))
}
