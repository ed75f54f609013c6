package store

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
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
// if no call is left pending. Unlike Resolve, calls the results leave out
// stay pending. results.AnsweredBy names who answered each call, by
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
	res, unconfirmed := s.runStaged(ctx, "answer", token, time.Time{}, answerScript, s.tokenKeys(token), ident, cardWork{lease: s.cardLeaseKey(token, "")}, args)
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

// Owner returns the API client that owns token (Approval.Client), reading
// that one field and not the record: the HTTP API checks ownership with it
// before loading anything, so another client's token, however large its
// record, costs what an unknown one does. It returns approval.ErrNotFound if the
// token is unknown, its record is gone, or no API client owns it (a run
// started from Slack).
func (s *Store) Owner(ctx context.Context, token string) (string, error) {
	if !validToken(token) {
		return "", fmt.Errorf("owner %s: %w", short(token), approval.ErrNotFound)
	}
	client, err := s.rdb.HGet(ctx, s.recKey(token), "client").Result()
	if isRedisNil(err) || (err == nil && client == "") {
		return "", fmt.Errorf("owner %s: %w", short(token), approval.ErrNotFound)
	}
	if err != nil {
		return "", fmt.Errorf("owner %s: %w", short(token), err)
	}
	return client, nil
}

// Idempotency is what an API client's idempotency key stands for
// (approval's, so that the HTTP API names it without importing store).
type Idempotency = approval.Idempotency

// ClaimIdempotency makes client's idempotency key stand for token, created
// by the request with the given fingerprint, for ttl (until
// KeepIdempotency ties it to the token's record). If the key is already
// taken it changes nothing, and returns what the key stands for and first
// false. Keys are scoped per client: two clients may use the same key.
func (s *Store) ClaimIdempotency(ctx context.Context, client, key, token, fingerprint string, ttl time.Duration) (got Idempotency, first bool, err error) {
	if ttl <= 0 {
		ttl = s.opts.Grace
	}
	v, err := claimIdemScript.Run(ctx, s.rdb, []string{s.idemKey(client, key)}, token+" "+fingerprint, ttl.Milliseconds()).Text()
	if isRedisNil(err) {
		return Idempotency{Token: token, Fingerprint: fingerprint}, true, nil
	}
	if err != nil {
		return Idempotency{}, false, fmt.Errorf("claim idempotency key: %w", err)
	}
	tok, fp, _ := strings.Cut(v, " ")
	return Idempotency{Token: tok, Fingerprint: fp}, false, nil
}

// KeepIdempotency gives client's idempotency key the lifetime of the
// record of the token it stands for (its deadline plus Grace), so a retry
// finds the token for as long as the token can be read.
func (s *Store) KeepIdempotency(ctx context.Context, client, key, token string) error {
	err := keepIdemScript.Run(ctx, s.rdb, []string{s.idemKey(client, key), s.recKey(token)}, token+" ").Err()
	if err != nil && !isRedisNil(err) {
		return fmt.Errorf("keep idempotency key: %w", err)
	}
	return nil
}

// ReleaseIdempotency forgets client's idempotency key if it still stands
// for token, so that a request that failed before creating anything can
// be retried with the same key.
func (s *Store) ReleaseIdempotency(ctx context.Context, client, key, token string) error {
	err := releaseIdemScript.Run(ctx, s.rdb, []string{s.idemKey(client, key)}, token+" ").Err()
	if err != nil && !isRedisNil(err) {
		return fmt.Errorf("release idempotency key: %w", err)
	}
	return nil
}

// idemKey names the key of an idempotency key: a digest, so clients'
// keys (free text) never shape Redis key names.
func (s *Store) idemKey(client, key string) string {
	sum := sha256.Sum256([]byte(client + "\x00" + key))
	return s.key("idem:" + hex.EncodeToString(sum[:16]))
}

// claimIdemScript sets KEYS[1] to ARGV[1] for ARGV[2] ms unless it exists,
// and returns the value it has then (nil when it was just set).
var claimIdemScript = redis.NewScript(`
local v = redis.call('GET', KEYS[1])
if v then return v end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
return false
`)

// keepIdemScript gives KEYS[1] the TTL of KEYS[2] if KEYS[1] starts with
// ARGV[1].
var keepIdemScript = redis.NewScript(`
local v = redis.call('GET', KEYS[1])
if not v or string.sub(v, 1, #ARGV[1]) ~= ARGV[1] then return 0 end
local ttl = redis.call('PTTL', KEYS[2])
if ttl > 0 then redis.call('PEXPIRE', KEYS[1], ttl) end
return 1
`)

// releaseIdemScript deletes KEYS[1] if it starts with ARGV[1].
var releaseIdemScript = redis.NewScript(`
local v = redis.call('GET', KEYS[1])
if v and string.sub(v, 1, #ARGV[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
`)
