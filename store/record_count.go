package store

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/slackapprove/slackbot/approval"
)

// OpenCount returns how many tokens wait for a decision: the size of the
// deadline set, one O(1) read, cheap enough for a metrics scrape.
func (s *Store) OpenCount(ctx context.Context) (int64, error) {
	n, err := s.rdb.ZCard(ctx, s.deadlinesKey()).Result()
	if err != nil {
		return 0, fmt.Errorf("count open tokens: %w", err)
	}
	return n, nil
}

// RoutePending is what waits on one route: how many open requests have a
// pending call on it, and how long ago the oldest of them was opened.
type RoutePending struct {
	Open   int
	Oldest time.Duration
}

// MaxPendingByRoute bounds the open requests PendingByRoute reads: with
// more open, it counts those with the soonest deadlines.
const MaxPendingByRoute = 10000

// PendingByRoute returns, for each route with a pending call of an open
// request, how many such requests there are and the age of the oldest
// (a request with pending calls on two routes counts on both). It is
// computed from the deadline set, the index of open requests that the
// writes of requests keep (Create adds to it, every end removes from it,
// in the same script), and reads of the records' fields: no structure of
// its own, so nothing to keep in step with the records and nothing to
// heal (docs/ARCHITECTURE.md: approval is the only writer of request
// records; this only reads them). Its cost is bounded for a metrics
// scrape: at most MaxPendingByRoute tokens, a page of pendingPage at a
// time, two pipelined round trips per page (the records' creation time
// and first call, then the other calls of the records that have more).
func (s *Store) PendingByRoute(ctx context.Context) (map[string]RoutePending, error) {
	out := map[string]RoutePending{}
	now := s.now()
	for offset := int64(0); offset < MaxPendingByRoute; offset += pendingPage {
		page, err := s.rdb.ZRange(ctx, s.deadlinesKey(), offset, offset+pendingPage-1).Result()
		if err != nil {
			return nil, fmt.Errorf("pending by route: %w", err)
		}
		if err := s.pendingPageByRoute(ctx, page, now, out); err != nil {
			return nil, err
		}
		if len(page) < pendingPage {
			break
		}
	}
	return out, nil
}

// pendingPageByRoute adds the requests of tokens to out.
func (s *Store) pendingPageByRoute(ctx context.Context, tokens []string, now time.Time, out map[string]RoutePending) error {
	first := make([]*redis.SliceCmd, len(tokens))
	if _, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, t := range tokens {
			first[i] = p.HMGet(ctx, s.recKey(t), "created", "n", "c1.route", "c1.st")
		}
		return nil
	}); err != nil {
		return fmt.Errorf("pending by route: %w", err)
	}
	rest := make([]*redis.SliceCmd, len(tokens))
	if _, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, t := range tokens {
			n, _ := strconv.Atoi(str(first[i].Val(), 1))
			var fields []string
			for c := 2; c <= n; c++ {
				pre := "c" + strconv.Itoa(c) + "."
				fields = append(fields, pre+"route", pre+"st")
			}
			if len(fields) > 0 {
				rest[i] = p.HMGet(ctx, s.recKey(t), fields...)
			}
		}
		return nil
	}); err != nil {
		return fmt.Errorf("pending by route: %w", err)
	}
	for i := range tokens {
		v := first[i].Val()
		if str(v, 0) == "" {
			continue // ended and removed since the page was read
		}
		age := max(now.Sub(fromMS(str(v, 0))), 0)
		calls := v[2:]
		if rest[i] != nil {
			calls = append(calls, rest[i].Val()...)
		}
		seen := map[string]bool{}
		for c := 0; c+1 < len(calls); c += 2 {
			route := str(calls, c)
			if str(calls, c+1) != string(approval.CallPending) || seen[route] {
				continue
			}
			seen[route] = true
			p := out[route]
			p.Open++
			p.Oldest = max(p.Oldest, age)
			out[route] = p
		}
	}
	return nil
}

// str is the i-th value of an HMGET reply, "" when missing.
func str(v []any, i int) string {
	if i >= len(v) {
		return ""
	}
	s, _ := v[i].(string)
	return s
}
