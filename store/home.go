package store

import (
	"context"
	"fmt"
	"slices"
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
// MaxPending) requests still pending, soonest deadline first, at most
// perRequester of them of one requester (a Slack user, or an API key
// whatever name it gives; perRequester < 1: no such bound); partial
// reports that pending requests were left out past either bound, or past
// the maxPendingScan soonest. Each is read as a Home shows it (homeScript):
// without its results, context or callback, its calls' arguments and
// metadata up to homeArgsMax bytes each (longer arguments as their first
// homeArgsMax bytes, which are no JSON; longer metadata not at all). In
// round trips: the expiry set and each page's requesters, then every
// request read in one pipeline. Records gone or ended meanwhile are left
// out.
func (s *Store) Pending(ctx context.Context, limit, perRequester int) ([]*approval.Request, bool, error) {
	limit = min(max(limit, 0), MaxPending)
	if limit == 0 {
		return nil, false, nil
	}
	if perRequester < 1 {
		perRequester = limit
	}
	tokens, partial, err := s.pendingTokens(ctx, limit, perRequester)
	if err != nil || len(tokens) == 0 {
		return nil, partial, err
	}
	cmds, err := s.pipelined(ctx, homeScript, len(tokens), func(i int) ([]string, []any) {
		return []string{s.recKey(tokens[i])}, []any{homeArgsMax}
	})
	if err != nil {
		return nil, partial, fmt.Errorf("pending: %w", err)
	}
	out := make([]*approval.Request, 0, len(tokens))
	for i, cmd := range cmds {
		kv, err := cmd.StringSlice()
		if err != nil && !isRedisNil(err) {
			return nil, partial, fmt.Errorf("pending %s: %w", short(tokens[i]), err)
		}
		if len(kv) == 0 {
			continue
		}
		r, err := s.parseApproval(tokens[i], flatMap(kv))
		if err != nil {
			return nil, partial, fmt.Errorf("pending %s: %w", short(tokens[i]), err)
		}
		if r.State == approval.StatePending {
			out = append(out, r)
		}
	}
	return out, partial, nil
}

// Bounds of what Pending reads.
const (
	// maxPendingScan bounds the pending tokens Pending looks at, soonest
	// deadline first, for their requester.
	maxPendingScan = 10 * MaxPending
	// pendingPage is how many tokens one round trip looks at.
	pendingPage = 500
	// homeArgsMax bounds what a Home reads of a call's arguments and of
	// its metadata; Create keeps the first homeArgsMax bytes of longer
	// arguments beside them (field "c<i>.ap"), for the Home.
	homeArgsMax = 4 << 10
)

// pendingTokens returns the tokens of at most limit pending requests,
// soonest deadline first, at most perRequester of one requester, and
// whether it left any out: it reads the expiry set a page at a time, and
// of each record only who asked.
func (s *Store) pendingTokens(ctx context.Context, limit, perRequester int) ([]string, bool, error) {
	var picked []string
	seen := map[string]int{}
	partial := false
	for offset := 0; offset < maxPendingScan && len(picked) < limit; offset += pendingPage {
		page, err := s.rdb.ZRangeByScore(ctx, s.deadlinesKey(), &redis.ZRangeBy{
			Min: "(" + ms(s.now()), Max: "+inf", Offset: int64(offset), Count: pendingPage,
		}).Result()
		if err != nil {
			return nil, false, fmt.Errorf("pending: %w", err)
		}
		valid := slices.DeleteFunc(page, func(t string) bool { return !validToken(t) })
		who := make([]*redis.SliceCmd, len(valid))
		if _, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
			for i, t := range valid {
				who[i] = p.HMGet(ctx, s.recKey(t), "requester", "client")
			}
			return nil
		}); err != nil {
			return nil, false, fmt.Errorf("pending: %w", err)
		}
		for i, t := range valid {
			key := homeRequester(who[i].Val())
			if seen[key] >= perRequester {
				partial = true
				continue
			}
			if len(picked) == limit {
				return picked, true, nil
			}
			seen[key]++
			picked = append(picked, t)
		}
		if len(page) < pendingPage {
			return picked, partial, nil
		}
	}
	// Stopped at limit or at the scan's bound: there may be more.
	return picked, true, nil
}

// homeRequester is who asked for a record, as Pending bounds them: its API
// client (the key, not the name the client gave), else its requester.
func homeRequester(v []any) string {
	requester, _ := v[0].(string)
	if client, _ := v[1].(string); client != "" {
		return approval.APIClientPrefix + client
	}
	return requester
}

// homeScript reads a record as a Home shows it: who asked, where, when,
// its state, and of each call all but its result, outcome and decision
// metadata, with its arguments (or, when longer than ARGV[1] bytes, the
// first bytes Create kept of them) and its request metadata only when it
// is at most ARGV[1] bytes. KEYS: the record. It returns field, value
// pairs, as HGETALL would; nothing for a record that is gone.
var homeScript = redis.NewScript(`
local key, cap = KEYS[1], tonumber(ARGV[1])
local n = tonumber(redis.call('HGET', key, 'n'))
if not n then return {} end
local out = {}
local function put(f, v) if v then out[#out + 1] = f; out[#out + 1] = v end end
local function putAll(fs)
  local vs = redis.call('HMGET', key, unpack(fs))
  for i, f in ipairs(fs) do put(f, vs[i]) end
end
putAll({'created', 'exp', 'state', 'run', 'requester', 'client', 'team', 'channel', 'thread', 'n', 'ended', 'endby', 'reason'})
for i = 1, n do
  local p = 'c' .. i .. '.'
  local fs = {}
  for _, f in ipairs({'id', 'tool', 'kind', 'route', 'need', 'st', 'by', 'at', 'act', 'ch', 'ts', 'rule', 'perr', 'key'}) do fs[#fs + 1] = p .. f end
  putAll(fs)
  for _, f in ipairs({'args', 'rq'}) do
    local len = redis.call('HSTRLEN', key, p .. f)
    if len > 0 and len <= cap then
      put(p .. f, redis.call('HGET', key, p .. f))
    elseif len > cap and f == 'args' then
      -- a record written before Create kept the first bytes: cut them here
      put(p .. f, redis.call('HGET', key, p .. 'ap') or string.sub(redis.call('HGET', key, p .. f), 1, cap))
    end
  end
end
for _, f in ipairs(redis.call('HKEYS', key)) do
  if string.match(f, '^c%d+%.v:') then put(f, redis.call('HGET', key, f)) end
end
return out
`)

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
