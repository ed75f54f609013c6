package store

import (
	"context"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/slackapprove/slackbot/agentrunner"
	"github.com/slackapprove/slackbot/approval"
)

// Cancel ends an open token: every undecided call gets no decision with
// reason agentrunner.ReasonCancelled, the run is queued for resumption,
// and waiters receive a NoDecisionError whose Cause is ErrTokenCancelled.
// by says who cancelled (for the audit stream). It returns the ended
// record, or approval.ErrNotFound if the token is unknown, or approval.ErrResolved,
// approval.ErrExpired, approval.ErrCancelled or approval.ErrFailed if it already ended.
func (s *Store) Cancel(ctx context.Context, token, by string) (*approval.Request, error) {
	return s.end(ctx, OpCancel, token, approval.StateCancelled, by, agentrunner.ReasonCancelled)
}

// Fail ends an open token without a decision, with reason for the model
// (e.g. "asking failed"); waiters receive a NoDecisionError whose Cause is
// ErrTokenFailed. Its errors are those of Cancel.
func (s *Store) Fail(ctx context.Context, token, by, reason string) (*approval.Request, error) {
	if reason == "" {
		reason = "failed"
	}
	return s.end(ctx, OpFail, token, approval.StateFailed, by, reason)
}

func (s *Store) end(ctx context.Context, op, token string, state approval.State, by, reason string) (*approval.Request, error) {
	if !validToken(token) {
		return nil, fmt.Errorf("%s %s: %w", op, short(token), approval.ErrNotFound)
	}
	args := s.tokenArgs(token, s.now(), string(state), by, reason)
	ident := stageIdent("end", state, by, reason)
	res, unconfirmed := s.runStaged(ctx, op, token, time.Time{}, endScript, s.tokenKeys(token), ident, cardWork{lease: s.cardLeaseKey(token, "")}, args)
	if res == nil {
		return nil, fmt.Errorf("%s %s: %w", op, short(token), unconfirmed)
	}
	if err := codeErr(res[0]); err != nil {
		return nil, fmt.Errorf("%s %s: %w", op, short(token), err)
	}
	a, err := s.parseApproval(token, flatMap(res[1:]))
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", op, short(token), err)
	}
	if unconfirmed != nil {
		return a, fmt.Errorf("%s %s: %w", op, short(token), unconfirmed)
	}
	return a, nil
}

// endScript cancels or fails an open token (endLua).
// ARGV 7: state (cancelled|failed), 8: by, 9: reason, then the stage mode
// and identity (stageLua).
var endScript = redis.NewScript(scriptPrelude + leaseLua + cardWorkLua + stageLua + endLua + `
return endToken(ARGV, stageMode, noCardWork)
`)

// endLua defines endToken, which ends an open token as A (endScript's
// arguments, or the ones staged with them) says, doing the card work L
// with it; its modes are decide's (decideLua).
const endLua = `
local function endToken(A, mode, L)
  local st = redis.call('HGET', rec, 'state')
  if not st then return {'e:notfound'} end
  if st ~= 'open' then return {'e:' .. st} end
  if mode ~= 'commit' then
    local staged = staging()
    if staged == 'staged' then return reply(staged) end
    if staged then return {staged} end
  end
  if mode == 'stage' then
    stage('end')
    return reply('staged')
  end
  cardWork(L)
  finish(A[7], A[8], A[9])
  return reply('ok')
end
`
