package store

import (
	"context"
	"fmt"
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
