package store

// Waiting returns how many goroutines wait in e's process.
func (e *Tokens) Waiting() int { return e.waiting() }
