package store

// CancelMarksKey is the Redis key of client's remembered cancels.
func CancelMarksKey(s *Store, client string) string { return s.cancelMarksKey(client) }
