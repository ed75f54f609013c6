package store

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/slackapprove/slackbot/agentrunner"
	"github.com/slackapprove/slackbot/approval"
)

// This file holds what the HTTP API needs beyond the token lifecycle:
// answers that may cover only some calls, and idempotency keys.

// Answer records answers to some or all of the pending calls of an open
// token atomically (one round trip), as the HTTP API's results endpoint
// does. Every answer must name a call that is still pending, under the
// right kind (approvals for approvals, calls for questions and external
// calls); then all of them are recorded at once, and the token is resolved
// if no call is left pending. Calls the results leave out stay pending. results.AnsweredBy names who answered each call, by
// otherwise. Answers are authoritative: an approval approves a call that
// needs several approvers at once.
//
// Answer returns approval.ErrInvalid for results that answer nothing or a token
// that was opened but not created, approval.ErrNotFound if the token is unknown,
// approval.ErrNotPending (naming the offending ids) if an answer names a call
// that is not pending, approval.ErrExpired past the deadline, and approval.ErrResolved,
// approval.ErrExpired, approval.ErrCancelled or approval.ErrFailed if the token already ended.
// Nothing changes on error. Under Options.WaitReplicas the answers are held
// until Redis's replicas confirm them, as Decide's decision is.
func (s *Store) Answer(ctx context.Context, token, by string, results *agentrunner.DeferredToolResults) (*approval.Request, error) {
	if !validToken(token) {
		return nil, fmt.Errorf("answer %s: %w", short(token), approval.ErrNotFound)
	}
	if results.Len() == 0 {
		return nil, fmt.Errorf("answer %s: %w: no answers", short(token), approval.ErrInvalid)
	}
	answers, n, err := answerArgs(by, results)
	if err != nil {
		return nil, fmt.Errorf("answer %s: %w", short(token), err)
	}
	args := s.tokenArgs(token, s.now(), by, n)
	args = append(args, answers...)
	ident := stageIdent("answer", append([]any{by}, answers...)...)
	res, unconfirmed := s.runStaged(ctx, OpAnswer, token, time.Time{}, answerScript, s.tokenKeys(token), ident, cardWork{lease: s.cardLeaseKey(token, "")}, args)
	if res == nil {
		return nil, fmt.Errorf("answer %s: %w", short(token), unconfirmed)
	}
	if res[0] == "e:notpending" {
		return nil, fmt.Errorf("answer %s: %w: %s", short(token), approval.ErrNotPending, strings.Join(res[1:], ", "))
	}
	if err := codeErr(res[0]); err != nil {
		return nil, fmt.Errorf("answer %s: %w", short(token), err)
	}
	a, err := s.parseApproval(token, flatMap(res[1:]))
	if err != nil {
		return nil, fmt.Errorf("answer %s: %w", short(token), err)
	}
	if unconfirmed != nil {
		return a, fmt.Errorf("answer %s: %w", short(token), unconfirmed)
	}
	return a, nil
}

// answerScript records answers to pending calls and resolves the token
// when none is left pending (answerLua).
// ARGV 7: by, 8: number of answers, then 6 strings per answer: id, class
// (approval|call), result, new state, answered by, results metadata; then
// the stage mode and identity (stageLua).
var answerScript = redis.NewScript(scriptPrelude + leaseLua + cardWorkLua + stageLua + answersLua + answerLua + `
return answerCalls(ARGV, stageMode, noCardWork)
`)

// answerLua defines answerCalls, which records the answers A holds
// (answerScript's arguments, or the ones staged with them), doing the card
// work L with them; its modes are decide's (decideLua).
const answerLua = `
local function answerCalls(A, mode, L)
  if redis.call('EXISTS', rec) == 0 then return {'e:notfound'} end
  local top = redis.call('HMGET', rec, 'state', 'exp', 'created', 'run')
  if top[1] ~= 'open' then return {'e:' .. top[1]} end
  if tonumber(now) >= tonumber(top[2]) then return {'e:expired'} end
  if not top[3] then return {'e:invalid'} end
  if mode ~= 'commit' then
    local staged = staging()
    if staged == 'staged' then return reply(staged) end
    if staged then return {staged} end
  end
  local by, m = A[7], tonumber(A[8])
  local nums, bad = pendingAnswers(A, 9, m)
  if not nums then return bad end
  if mode == 'stage' then
    stage('answer')
    return reply('staged')
  end
  recordAnswers(A, 9, m, nums, 'answer', top[4] or '')
  cardWork(L)
  if redis.call('HINCRBY', rec, 'left', -m) <= 0 then
    finish('resolved', by, '')
    return reply('resolved')
  end
  return reply('answered')
end
`

// answerArgs turns results into the answers of answerScript
// (approval.RecordedAnswers): 6 strings per answer (id, class, result, new
// state, answered by, results metadata), and their number.
func answerArgs(by string, results *agentrunner.DeferredToolResults) ([]any, int, error) {
	recorded, err := approval.RecordedAnswers(by, results)
	if err != nil {
		return nil, 0, err
	}
	answers := make([]any, 0, 6*len(recorded))
	for _, r := range recorded {
		answers = append(answers, r.ID, r.Class, r.Result, string(r.State), r.By, r.Metadata)
	}
	return answers, len(recorded), nil
}
