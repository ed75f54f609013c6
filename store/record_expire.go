package store

import (
	"context"
	"errors"
	"fmt"

	"github.com/redis/go-redis/v9"

	"github.com/slackapprove/slackbot/agentrunner"
	"github.com/slackapprove/slackbot/approval"
)

// sweepBatch is how many due tokens one sweep round claims at most.
const sweepBatch = 256

// Sweep expires every open token whose deadline has passed (by the store's
// clock) and returns their records, so the caller can tell people (e.g.
// update the Slack messages to say "expired"). Each token is claimed by
// exactly one sweeper across all processes and restarts: the claim is the
// atomic removal of the token from the deadline set, in the same script
// that marks it expired, records agentrunner.NoDecision results with
// reason agentrunner.ReasonExpired, queues its run for resumption, queues
// a JobCardUpdate on the JobQueue (so the cards say expired even if this
// process dies now) and wakes its waiters (who get a NoDecisionError with
// Cause ErrTokenExpired).
// Tokens.Run sweeps periodically; call Sweep directly in tests.
func (s *Store) Sweep(ctx context.Context) ([]*approval.Request, error) {
	var out []*approval.Request
	for {
		now := s.now()
		tokens, err := s.rdb.ZRangeByScore(ctx, s.deadlinesKey(), &redis.ZRangeBy{Min: "-inf", Max: ms(now), Count: sweepBatch}).Result()
		if err != nil {
			return out, fmt.Errorf("sweep: %w", err)
		}
		if len(tokens) == 0 {
			return out, nil
		}
		cmds, err := s.pipelined(ctx, expireScript, len(tokens), func(i int) ([]string, []any) {
			keys := append(s.tokenKeys(tokens[i]), s.jobsKey())
			return keys, withTrace(ctx, s.tokenArgs(tokens[i], now, agentrunner.ReasonExpired, string(JobCardUpdate)))
		})
		if err != nil {
			return out, fmt.Errorf("sweep: %w", err)
		}
		for i, cmd := range cmds {
			res, err := cmd.StringSlice()
			if err != nil {
				return out, fmt.Errorf("sweep %s: %w", short(tokens[i]), err)
			}
			if len(res) == 0 {
				continue // another sweeper claimed it, or it ended first
			}
			a, err := s.parseApproval(tokens[i], flatMap(res[1:]))
			if err != nil {
				return out, fmt.Errorf("sweep %s: %w", short(tokens[i]), err)
			}
			out = append(out, a)
		}
		if len(tokens) < sweepBatch {
			return out, nil
		}
	}
}

// pipelined runs script n times in one pipeline, loading it first if the
// server does not know it yet.
func (s *Store) pipelined(ctx context.Context, script *redis.Script, n int, call func(i int) ([]string, []any)) ([]*redis.Cmd, error) {
	run := func() ([]*redis.Cmd, error) {
		cmds := make([]*redis.Cmd, n)
		_, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
			for i := range n {
				keys, args := call(i)
				cmds[i] = script.EvalSha(ctx, p, keys, args...)
			}
			return nil
		})
		return cmds, err
	}
	cmds, err := run()
	if err != nil && redis.HasErrorPrefix(err, "NOSCRIPT") {
		if err := script.Load(ctx, s.rdb).Err(); err != nil {
			return nil, err
		}
		cmds, err = run()
	}
	if err != nil && !errors.Is(err, redis.Nil) {
		return nil, err
	}
	return cmds, nil
}

// expireScript expires a token whose deadline has passed. Removing the
// token from the deadline set is the claim: of all the sweepers racing on
// the token, only the one that removes it acts, and in the same step it
// queues the job that updates the token's cards (see JobQueue), so the
// cards are updated even if the sweeper dies at once. A change staged on
// the token and still unconfirmed at its deadline is void: dropped.
// KEYS 8: the job stream. ARGV 7: reason, 8: the card update job's kind.
var expireScript = redis.NewScript(scriptPrelude + stageLua + `
local score = redis.call('ZSCORE', deadlines, token)
if not score or tonumber(score) > tonumber(now) then return {} end
redis.call('ZREM', deadlines, token)
if redis.call('HGET', rec, 'state') ~= 'open' then return {} end
if redis.call('EXISTS', stagedkey) == 1 then unstage() end
finish('expired', '', ARGV[7])
redis.call('XADD', KEYS[8], '*', 'kind', ARGV[8], 'token', token, 'data', '', 'attempt', '1')
redis.call('PEXPIRE', KEYS[8], keep)
return reply('expired')
`)
