// Package clocktest is the clock tests move by hand, shared by every
// test harness, so expiry is tested without sleeping.
package clocktest

import (
	"sync"
	"time"
)

// Clock is a clock a test moves with Add. The zero Clock runs with the
// wall clock plus whatever the test added: requests expire when the test
// moves it, while retries, timeouts and signatures keep working. A Clock
// from Stopped stands still until the test moves it.
type Clock struct {
	mu      sync.Mutex
	offset  time.Duration
	stopped bool
	at      time.Time
}

// Stopped returns a Clock that reads at until the test moves it.
func Stopped(at time.Time) *Clock { return &Clock{stopped: true, at: at} }

// Now returns the clock's time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.stopped {
		return c.at
	}
	return time.Now().Add(c.offset)
}

// Add moves the clock forward by d.
func (c *Clock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.offset += d
	c.at = c.at.Add(d)
}
