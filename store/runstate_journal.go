package store

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/slackapprove/slackbot/agentrunner"
	"github.com/slackapprove/slackbot/approval"
)

// CallJournal is the store's agentrunner.Journal: for each tool call of a
// run it records "started" before the tool runs and the tool's return
// after, with the run's last checkpoint (its history up to the model
// response whose calls run), in one hash per run kept for the store's
// Grace, so that a process that takes over a run whose process died runs
// no tool twice and goes on from where the run was. Each Begin and each
// End is one round trip; a checkpoint rides on the Begin of the first
// call of a response.
type CallJournal struct{ s *Store }

// CallJournal returns the store's call journal.
func (s *Store) CallJournal() CallJournal { return CallJournal{s} }

func (s *Store) execKey(runID string) string { return s.key("exec:" + runID) }

// Begin implements agentrunner.Journal: the run's later checkpoint as
// Progress, the recorded return of a call that ran,
// agentrunner.ErrOutcomeLost for one that started and was never recorded,
// or nothing after marking the call started (and keeping at's messages as
// the run's checkpoint).
func (j CallJournal) Begin(ctx context.Context, runID string, c agentrunner.ToolCallPart, at agentrunner.Checkpoint) (agentrunner.Begun, error) {
	if runID == "" || c.ToolCallID == "" || at.Step < 1 {
		return agentrunner.Begun{}, fmt.Errorf("begin call: %w: no run or call id, or no step", approval.ErrInvalid)
	}
	var cp []byte
	if at.Messages != nil {
		var err error
		if cp, err = json.Marshal(at.Messages); err != nil {
			return agentrunner.Begun{}, fmt.Errorf("begin call %s of run %s: checkpoint: %w", c.ToolCallID, runID, err)
		}
	}
	res, err := journalBeginScript.Run(ctx, j.s.rdb, []string{j.s.execKey(runID)}, c.ToolCallID, ms(j.s.now()), j.s.opts.Grace.Milliseconds(), at.Step, cp).Text()
	if err != nil {
		return agentrunner.Begun{}, fmt.Errorf("begin call %s of run %s: %w", c.ToolCallID, runID, err)
	}
	switch {
	case res == "new":
		return agentrunner.Begun{}, nil
	case res == "started":
		return agentrunner.Begun{}, agentrunner.ErrOutcomeLost
	}
	if b, ok := strings.CutPrefix(res, "progress:"); ok {
		var msgs []agentrunner.Message
		if err := json.Unmarshal([]byte(b), &msgs); err != nil {
			return agentrunner.Begun{}, fmt.Errorf("begin call %s of run %s: checkpoint: %w", c.ToolCallID, runID, err)
		}
		return agentrunner.Begun{Progress: msgs}, nil
	}
	var p agentrunner.Part
	if err := json.Unmarshal([]byte(strings.TrimPrefix(res, "ret:")), &p); err != nil {
		return agentrunner.Begun{}, fmt.Errorf("begin call %s of run %s: recorded return: %w", c.ToolCallID, runID, err)
	}
	return agentrunner.Begun{Return: &p}, nil
}

// End implements agentrunner.Journal: it records the call's return, or
// with ret nil forgets that it started.
func (j CallJournal) End(ctx context.Context, runID string, c agentrunner.ToolCallPart, ret *agentrunner.Part) error {
	key := j.s.execKey(runID)
	if ret == nil {
		if err := j.s.rdb.HDel(ctx, key, c.ToolCallID+".s").Err(); err != nil {
			return fmt.Errorf("end call %s of run %s: %w", c.ToolCallID, runID, err)
		}
		return nil
	}
	b, err := json.Marshal(ret)
	if err != nil {
		return fmt.Errorf("end call %s of run %s: %w", c.ToolCallID, runID, err)
	}
	_, err = j.s.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.HSet(ctx, key, c.ToolCallID+".r", b)
		p.PExpire(ctx, key, j.s.opts.Grace)
		return nil
	})
	if err != nil {
		return fmt.Errorf("end call %s of run %s: %w", c.ToolCallID, runID, err)
	}
	return nil
}

// journalBeginScript returns 'progress:<checkpoint>' when the run's
// checkpoint is past the caller's step, or at the caller's step with
// other messages than the caller's (another process got another response
// of the model there); else it keeps the caller's checkpoint if it is
// later, and returns 'ret:<return>' for a call that ran, 'started' for one
// that started, or marks the call started and returns 'new'. The
// checkpoint is in fields '#cp' (JSON) and '#n' (its step); a call's in
// '<id>.s' and '<id>.r', which never collide with them. KEYS: exec.
// ARGV: call id, now (ms), ttl (ms), step, checkpoint (empty: none).
var journalBeginScript = redis.NewScript(`
local n = tonumber(redis.call('HGET', KEYS[1], '#n') or '0')
local step = tonumber(ARGV[4])
if n > step or (ARGV[5] ~= '' and n == step and redis.call('HGET', KEYS[1], '#cp') ~= ARGV[5]) then
  return 'progress:' .. redis.call('HGET', KEYS[1], '#cp')
end
if ARGV[5] ~= '' and n < step then
  redis.call('HSET', KEYS[1], '#cp', ARGV[5], '#n', step)
  redis.call('PEXPIRE', KEYS[1], ARGV[3])
end
local r = redis.call('HGET', KEYS[1], ARGV[1] .. '.r')
if r then return 'ret:' .. r end
if redis.call('HEXISTS', KEYS[1], ARGV[1] .. '.s') == 1 then return 'started' end
redis.call('HSET', KEYS[1], ARGV[1] .. '.s', ARGV[2])
redis.call('PEXPIRE', KEYS[1], ARGV[3])
return 'new'
`)
