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

// Lock takes an exclusive lease on name for at most ttl, across every
// process, waiting (polling every few milliseconds) until it is free or
// ctx ends. Release frees it if it is still held. It serializes short
// read-modify-write sequences outside Redis, such as re-rendering one
// Slack message from the latest state: whoever writes last read last.
func (s *Store) Lock(ctx context.Context, name string, ttl time.Duration) (release func(), err error) {
	key := s.key("lock:" + name)
	owner := agentrunner.NewToken()
	wait := 2 * time.Millisecond
	for {
		ok, err := s.rdb.SetNX(ctx, key, owner, ttl).Result()
		if err != nil {
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
