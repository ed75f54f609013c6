package store

import (
	"context"
	"fmt"
)

// Waiting returns how many goroutines wait in e's process.
func (e *Tokens) Waiting() int { return e.waiting() }

// ExpireHomeCache makes s read the Home viewers from Redis on its next
// HomeViewers, as it does once its copy is homeCacheAge old.
func ExpireHomeCache(s *Store) {
	s.homes.mu.Lock()
	s.homes.read = s.homes.read.Add(-homeCacheAge)
	s.homes.mu.Unlock()
}

// RequestIDKey is the Redis key of client's JSON-RPC id rpcID.
func RequestIDKey(s *Store, client, rpcID string) string { return s.requestIDKey(client, rpcID) }

// WaitMargin is what a write's WAIT leaves of its caller's budget.
const WaitMargin = waitMargin

// ClientOpenCount returns how many of client's tokens are admitted and not
// past their deadline. Tokens that ended count until TakeQuota next
// reaches MaxOpen and drops them. Only tests read it.
func (s *Store) ClientOpenCount(ctx context.Context, client string) (int, error) {
	n, err := s.rdb.ZCount(ctx, s.quotaOpenKey(client), "("+ms(s.now()), "+inf").Result()
	if err != nil {
		return 0, fmt.Errorf("open count for %s: %w", client, err)
	}
	return int(n), nil
}
