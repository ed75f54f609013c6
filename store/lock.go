package store

import (
	"context"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/slackapprove/slackbot/agentrunner"
)

// unlockScript deletes a lease only if its holder still owns it.
var unlockScript = redis.NewScript(`
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
`)

// lockScript takes a lease that is free, or whose holder's process (the
// value up to its '/') has no heartbeat any more. KEYS: lease. ARGV:
// holder, ttl (ms), heartbeat key prefix.
var lockScript = redis.NewScript(`
local cur = redis.call('GET', KEYS[1])
if cur then
  local who = string.match(cur, '^([^/]+)/')
  if not who or redis.call('EXISTS', ARGV[3] .. who) == 1 then return 0 end
end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
return 1
`)

// Lock takes an exclusive lease on name for at most ttl, across every
// process, waiting (polling every few milliseconds) until it is free or
// ctx ends. Release frees it if it is still held. It serializes short
// read-modify-write sequences outside Redis, such as re-rendering one
// Slack message from the latest state: whoever writes last read last.
// With Options.Owner set, the lease dies with this process's heartbeat:
// another process takes it over as soon as the heartbeat is gone.
func (s *Store) Lock(ctx context.Context, name string, ttl time.Duration) (release func(), err error) {
	key := s.key("lock:" + name)
	owner := s.opts.Owner + "/" + agentrunner.NewToken()
	wait := 2 * time.Millisecond
	for {
		ok, err := lockScript.Run(ctx, s.rdb, []string{key}, owner, ttl.Milliseconds(), s.procKey("")).Bool()
		if err != nil && !isRedisNil(err) {
			return nil, fmt.Errorf("lock %s: %w", name, err)
		}
		if ok {
			return func() {
				ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
				defer cancel()
				_ = unlockScript.Run(ctx, s.rdb, []string{key}, owner).Err()
			}, nil
		}
		t := time.NewTimer(wait)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return nil, fmt.Errorf("lock %s: %w", name, ctx.Err())
		}
		wait = min(wait*2, 50*time.Millisecond)
	}
}
