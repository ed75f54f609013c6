package store

import (
	"context"
	"fmt"

	"github.com/redis/go-redis/v9"

	"github.com/slackapprove/slackbot/approval"
)

// BeginAnswer marks the answer key (a run's answer after one of its
// tokens) as being posted by owner (an Tokens Owner, then '/' and a name
// for this attempt), and returns what an earlier attempt left: "" (none:
// post it), "posting" (an attempt that failed, or whose process died, may
// have posted it: look for it before posting again), "busy" (an attempt
// of a live process is under way: try later) or "posted" (done). An
// attempt ends with AnswerPosted or AnswerFailed. The mark is kept for
// the store's Grace.
func (s *Store) BeginAnswer(ctx context.Context, key, owner string) (string, error) {
	if key == "" || owner == "" {
		return "", fmt.Errorf("begin answer: %w: no key or owner", approval.ErrInvalid)
	}
	prev, err := answerBeginScript.Run(ctx, s.rdb, []string{s.key("answer:" + key)}, owner, s.opts.Grace.Milliseconds(), s.procKey("")).Text()
	if err != nil {
		return "", fmt.Errorf("begin answer: %w", err)
	}
	return prev, nil
}

// answerBeginScript: see BeginAnswer. KEYS: answer mark. ARGV: owner, ttl
// (ms), heartbeat key prefix.
var answerBeginScript = redis.NewScript(`
local cur = redis.call('GET', KEYS[1])
if cur and string.sub(cur, 1, 6) == 'posted' then return 'posted' end
local prev = ''
if cur then
  local who = string.match(cur, '^posting ([^/]*)')
  if who and redis.call('EXISTS', ARGV[3] .. who) == 1 then return 'busy' end
  prev = 'posting'
end
redis.call('SET', KEYS[1], 'posting ' .. ARGV[1], 'PX', ARGV[2])
return prev
`)

// AnswerFailed records that an attempt at the answer of key failed, and
// may or may not have posted it.
func (s *Store) AnswerFailed(ctx context.Context, key string) error {
	if err := s.rdb.Set(ctx, s.key("answer:"+key), "failed", s.opts.Grace).Err(); err != nil {
		return fmt.Errorf("answer failed: %w", err)
	}
	return nil
}

// AnswerPosted records that the answer of key was posted as message ts.
func (s *Store) AnswerPosted(ctx context.Context, key, ts string) error {
	if err := s.rdb.Set(ctx, s.key("answer:"+key), "posted "+ts, s.opts.Grace).Err(); err != nil {
		return fmt.Errorf("answer posted: %w", err)
	}
	return nil
}
