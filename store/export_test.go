package store

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
