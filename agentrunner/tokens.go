package agentrunner

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"sync"
	"time"
)

// Errors returned by Tokens. Each is distinct so a caller can tell
// the person clicking what happened.
var (
	// ErrTokenNotFound: the token was never opened, or is gone.
	ErrTokenNotFound = errors.New("resume token not found")
	// ErrTokenResolved: the token already has an answer.
	ErrTokenResolved = errors.New("resume token already resolved")
	// ErrTokenExpired: the token's deadline passed without an answer.
	ErrTokenExpired = errors.New("resume token expired")
	// ErrTokenCancelled: the request was cancelled.
	ErrTokenCancelled = errors.New("resume token cancelled")
	// ErrTokenFailed: the wait was ended by a failure.
	ErrTokenFailed = errors.New("resume token failed")
)

// NoDecisionError ends a wait that got no answer: the token expired, was
// cancelled or failed. Reason is what the model is told after
// NoDecisionPrefix. errors.Is matches it against ErrTokenExpired,
// ErrTokenCancelled or ErrTokenFailed as appropriate.
type NoDecisionError struct {
	Reason string
	Cause  error // one of ErrTokenExpired, ErrTokenCancelled, ErrTokenFailed
}

// Error returns the message the model is told: NoDecisionPrefix + Reason.
func (e *NoDecisionError) Error() string { return NoDecisionPrefix + e.Reason }

// Unwrap returns the sentinel behind e.
func (e *NoDecisionError) Unwrap() error { return e.Cause }

// Reasons given when a wait ends without an answer.
const (
	ReasonExpired   = "the request expired"
	ReasonCancelled = "cancelled"
)

// Tokens carries answers to a run that waits on a resume token,
// possibly from another goroutine, process or machine.
//
// The order is Open, then ask (which hands the token to people), then Wait.
// Resolve and Fail may come at any time after Open, even before Wait.
type Tokens interface {
	// Open starts accepting an answer for token until deadline. It returns an
	// error if the token is already open.
	Open(ctx context.Context, token string, deadline time.Time) error
	// Wait blocks until token is resolved, fails, is cancelled or reaches its
	// deadline. It returns the results, or a *NoDecisionError, or
	// ErrTokenNotFound, or ctx's error when ctx ends first (the token stays
	// open so another waiter can pick it up).
	Wait(ctx context.Context, token string) (*DeferredToolResults, error)
	// Resolve answers token. It returns ErrTokenNotFound, ErrTokenResolved,
	// ErrTokenExpired, ErrTokenCancelled or ErrTokenFailed if the token is
	// not open.
	Resolve(ctx context.Context, token string, results *DeferredToolResults) error
	// Fail ends the wait without an answer, with reason for the model; the
	// errors are those of Resolve. Fail with ErrTokenCancelled as cause
	// cancels.
	Fail(ctx context.Context, token string, nd *NoDecisionError) error
}

// NewToken returns a fresh resume token: 256 bits from crypto/rand,
// base64url without padding (43 characters, URL- and Slack-safe).
func NewToken() string {
	var b [32]byte
	// crypto/rand.Read never returns an error on supported platforms and
	// crashes the program rather than return predictable bytes.
	_, _ = rand.Read(b[:])
	return base64.RawURLEncoding.EncodeToString(b[:])
}

// MemoryTokens is the in-process Tokens: the run and the answer
// live in one process. Finished tokens are remembered for Retain so late
// answers get a precise error, then forgotten; forgetting costs amortized
// O(1) per token. A token opened without a deadline stays until it is
// resolved or failed.
//
// The clock is authoritative: once Now reaches a token's deadline, Resolve
// and Fail return ErrTokenExpired even if the deadline timer has not fired
// yet. Tests inject Now and AfterFunc to expire tokens without sleeping.
type MemoryTokens struct {
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// AfterFunc runs f after d, unless the returned stop is called first;
	// nil means time.AfterFunc. It must not call f before it returns.
	AfterFunc func(d time.Duration, f func()) (stop func() bool)
	// Retain is how long a finished token is remembered; 0 means 1 hour.
	Retain time.Duration

	mu     sync.Mutex
	tokens map[string]*memToken
	// finished lists tokens in the order they finished, oldest first, so
	// forgetting pops from the front instead of scanning every token.
	finished []string
}

type memToken struct {
	deadline time.Time
	done     chan struct{} // closed once state leaves pending
	state    error         // nil while pending; ErrTokenResolved etc. after
	results  *DeferredToolResults
	nd       *NoDecisionError
	finished time.Time
	stop     func() bool // stops the deadline timer; nil if none
}

// NewMemoryTokens returns an empty MemoryTokens.
func NewMemoryTokens() *MemoryTokens { return &MemoryTokens{} }

func (m *MemoryTokens) now() time.Time {
	if m.Now != nil {
		return m.Now()
	}
	return time.Now()
}

func (m *MemoryTokens) afterFunc(d time.Duration, f func()) func() bool {
	if m.AfterFunc != nil {
		return m.AfterFunc(d, f)
	}
	return time.AfterFunc(d, f).Stop
}

// ErrTokenOpen is returned by Open for a token that is already known.
var ErrTokenOpen = errors.New("resume token already open")

// Open implements Tokens. A deadline already past expires the token
// at once; a zero deadline means none.
func (m *MemoryTokens) Open(_ context.Context, token string, deadline time.Time) error {
	m.mu.Lock()
	now := m.now()
	if m.tokens == nil {
		m.tokens = map[string]*memToken{}
	}
	m.forgetLocked(now)
	if _, ok := m.tokens[token]; ok {
		m.mu.Unlock()
		return fmt.Errorf("open %s: %w", shortToken(token), ErrTokenOpen)
	}
	t := &memToken{deadline: deadline, done: make(chan struct{})}
	m.tokens[token] = t
	if deadline.IsZero() {
		m.mu.Unlock()
		return nil
	}
	if !now.Before(deadline) {
		m.finishLocked(token, t, nil, expired())
		m.mu.Unlock()
		return nil
	}
	m.mu.Unlock()
	// The timer starts outside the lock: a fake AfterFunc may run other
	// timers' callbacks, which take the lock.
	stop := m.afterFunc(deadline.Sub(now), func() { _ = m.Expire(token) })
	m.mu.Lock()
	if t.state == nil {
		t.stop = stop
	} else {
		stop()
	}
	m.mu.Unlock()
	return nil
}

func expired() *NoDecisionError {
	return &NoDecisionError{Reason: ReasonExpired, Cause: ErrTokenExpired}
}

// Expire ends the wait on token as expired if it is still pending; the
// errors are those of Resolve. The deadline timer calls it, and tests with an
// injected clock may call it to expire a token without a timer.
func (m *MemoryTokens) Expire(token string) error {
	return m.finish(token, nil, expired())
}

// Wait implements Tokens.
func (m *MemoryTokens) Wait(ctx context.Context, token string) (*DeferredToolResults, error) {
	m.mu.Lock()
	t, ok := m.tokens[token]
	m.mu.Unlock()
	if !ok {
		return nil, ErrTokenNotFound
	}
	select {
	case <-t.done:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	if t.nd != nil {
		return nil, t.nd
	}
	return t.results, nil
}

// Resolve implements Tokens. Nil results resolve with no answers.
func (m *MemoryTokens) Resolve(_ context.Context, token string, results *DeferredToolResults) error {
	if results == nil {
		results = NewDeferredToolResults()
	}
	return m.finish(token, results, nil)
}

// Fail implements Tokens. A nil nd fails with reason "failed"; a
// cause other than ErrTokenExpired or ErrTokenCancelled counts as
// ErrTokenFailed.
func (m *MemoryTokens) Fail(_ context.Context, token string, nd *NoDecisionError) error {
	out := &NoDecisionError{Reason: "failed", Cause: ErrTokenFailed}
	if nd != nil {
		out.Reason = nd.Reason
		switch {
		case errors.Is(nd.Cause, ErrTokenExpired):
			out.Cause = ErrTokenExpired
		case errors.Is(nd.Cause, ErrTokenCancelled):
			out.Cause = ErrTokenCancelled
		}
	}
	return m.finish(token, nil, out)
}

func (m *MemoryTokens) finish(token string, results *DeferredToolResults, nd *NoDecisionError) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	t, ok := m.tokens[token]
	if !ok {
		return ErrTokenNotFound
	}
	if t.state != nil {
		return t.state
	}
	if !t.deadline.IsZero() && !m.now().Before(t.deadline) && (nd == nil || nd.Cause != ErrTokenExpired) {
		// The deadline passed before this answer; the timer is late.
		m.finishLocked(token, t, nil, expired())
		return ErrTokenExpired
	}
	m.finishLocked(token, t, results, nd)
	return nil
}

func (m *MemoryTokens) finishLocked(token string, t *memToken, results *DeferredToolResults, nd *NoDecisionError) {
	if nd != nil {
		t.nd = nd
		t.state = nd.Cause
	} else {
		t.results = results
		t.state = ErrTokenResolved
	}
	t.finished = m.now()
	if t.stop != nil {
		t.stop()
	}
	close(t.done)
	m.finished = append(m.finished, token)
}

// forgetLocked forgets tokens finished longer than Retain ago.
func (m *MemoryTokens) forgetLocked(now time.Time) {
	retain := m.Retain
	if retain == 0 {
		retain = time.Hour
	}
	cutoff := now.Add(-retain)
	n := 0
	for ; n < len(m.finished); n++ {
		if t := m.tokens[m.finished[n]]; t != nil && !t.finished.Before(cutoff) {
			break
		}
		delete(m.tokens, m.finished[n])
	}
	clear(m.finished[:n])
	m.finished = m.finished[n:]
}

// shortToken returns a prefix of a token, safe to log.
func shortToken(token string) string {
	if len(token) > 6 {
		return token[:6] + "…"
	}
	return token
}
