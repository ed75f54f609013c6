package store

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/slackapprove/slackbot/approval"
)

// What App Home reads and keeps. The pending requests are those in the
// expiry set (deadlines) whose deadline has not passed; the users who
// opened their Home recently are a sorted set, homes, scored by when each
// last opened it, trimmed as it is written; a Home waiting to be
// republished is one member of the job queue's schedule per user.

// JobHomeRefresh republishes one user's App Home (Job.Data is the user
// id): a call they could decide changed state.
const JobHomeRefresh JobKind = "home.refresh"

// MaxPending bounds Pending's limit.
const MaxPending = 1000

var _ approval.HomeStore = (*Store)(nil)

func (s *Store) homesKey() string { return s.key("homes") }

// Pending implements approval.HomeStore: at most limit (capped at
// MaxPending) requests still pending, soonest deadline first, in two
// round trips (the expiry set, then every record in one pipeline).
// Records gone or ended meanwhile are left out.
func (s *Store) Pending(ctx context.Context, limit int) ([]*approval.Request, error) {
	limit = min(max(limit, 0), MaxPending)
	if limit == 0 {
		return nil, nil
	}
	tokens, err := s.rdb.ZRangeByScore(ctx, s.deadlinesKey(), &redis.ZRangeBy{
		Min: "(" + ms(s.now()), Max: "+inf", Count: int64(limit),
	}).Result()
	if err != nil {
		return nil, fmt.Errorf("pending: %w", err)
	}
	if len(tokens) == 0 {
		return nil, nil
	}
	cmds := make([]*redis.MapStringStringCmd, 0, len(tokens))
	pipe := s.rdb.Pipeline()
	valid := tokens[:0]
	for _, t := range tokens {
		if validToken(t) {
			valid = append(valid, t)
			cmds = append(cmds, pipe.HGetAll(ctx, s.recKey(t)))
		}
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return nil, fmt.Errorf("pending: %w", err)
	}
	out := make([]*approval.Request, 0, len(valid))
	for i, cmd := range cmds {
		m := cmd.Val()
		if len(m) == 0 {
			continue
		}
		r, err := s.parseApproval(valid[i], m)
		if err != nil {
			return nil, fmt.Errorf("pending %s: %w", short(valid[i]), err)
		}
		if r.State == approval.StatePending {
			out = append(out, r)
		}
	}
	return out, nil
}

// HomeOpened implements approval.HomeStore: user opened their Home now;
// they count as a recent viewer for ttl. Entries older than ttl are
// dropped as it writes, so the set stays as small as its viewers.
func (s *Store) HomeOpened(ctx context.Context, user string, ttl time.Duration) error {
	if user == "" || ttl <= 0 {
		return fmt.Errorf("home opened: %w: a user and a ttl", approval.ErrInvalid)
	}
	now := s.now()
	pipe := s.rdb.TxPipeline()
	pipe.ZAdd(ctx, s.homesKey(), redis.Z{Score: float64(now.UnixMilli()), Member: user})
	pipe.ZRemRangeByScore(ctx, s.homesKey(), "-inf", "("+ms(now.Add(-ttl)))
	pipe.PExpire(ctx, s.homesKey(), ttl)
	if _, err := pipe.Exec(ctx); err != nil {
		return fmt.Errorf("home opened: %w", err)
	}
	s.homes.saw(user, float64(now.UnixMilli()))
	return nil
}

// HomeViewers implements approval.HomeStore: which of users opened their
// Home within ttl, in the order given. Every card update asks it, so the
// answer comes from this process's copy of the viewers, read from Redis at
// most once per homeCacheAge (a Home opened on another replica is seen
// within that; one opened here at once); with more than homeCacheMax
// viewers it asks Redis for users alone each time.
func (s *Store) HomeViewers(ctx context.Context, users []string, ttl time.Duration) ([]string, error) {
	if len(users) == 0 {
		return nil, nil
	}
	scores, err := s.homes.lookup(ctx, s, users)
	if err != nil {
		return nil, fmt.Errorf("home viewers: %w", err)
	}
	since := float64(s.now().Add(-ttl).UnixMilli())
	var out []string
	for i, sc := range scores {
		// A member that is not in the set scores 0.
		if sc > 0 && sc >= since {
			out = append(out, users[i])
		}
	}
	return out, nil
}

// homeCache is a process's copy of the Home viewers set.
const (
	homeCacheAge = time.Second
	homeCacheMax = 5000
)

type homeCache struct {
	mu     sync.Mutex
	read   time.Time // by the wall clock: how fresh the copy is
	big    bool      // the set had more than homeCacheMax members
	scores map[string]float64
}

// lookup returns the score of each of users in the viewers set (0 when
// absent), from the copy when it is fresh.
func (c *homeCache) lookup(ctx context.Context, s *Store, users []string) ([]float64, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if time.Since(c.read) >= homeCacheAge {
		zs, err := s.rdb.ZRangeWithScores(ctx, s.homesKey(), 0, homeCacheMax).Result()
		if err != nil {
			return nil, err
		}
		c.read, c.big, c.scores = time.Now(), len(zs) > homeCacheMax, make(map[string]float64, len(zs))
		for _, z := range zs {
			if m, ok := z.Member.(string); ok {
				c.scores[m] = z.Score
			}
		}
	}
	if c.big {
		return s.rdb.ZMScore(ctx, s.homesKey(), users...).Result()
	}
	out := make([]float64, len(users))
	for i, u := range users {
		out[i] = c.scores[u]
	}
	return out, nil
}

// saw records in the copy that user opened their Home at score.
func (c *homeCache) saw(user string, score float64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.scores != nil {
		c.scores[user] = score
	}
}

// ScheduleHome implements approval.HomeScheduler: a JobHomeRefresh for
// user, due after delay (by the store's clock). While one waits for the
// user, another is not added and the one waiting keeps its time, so the
// changes within one delay are published once.
func (q *JobQueue) ScheduleHome(ctx context.Context, user string, delay time.Duration) error {
	if user == "" || len(user) > 64 {
		return fmt.Errorf("schedule home: %w: bad user", approval.ErrInvalid)
	}
	member := "1 " + string(JobHomeRefresh) + " - " + user
	if err := q.s.addDue(ctx, true, dueJob{at: q.s.now().Add(delay), member: member}); err != nil {
		return fmt.Errorf("schedule home: %w", err)
	}
	return nil
}
