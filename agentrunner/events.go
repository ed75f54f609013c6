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

// Errors returned by ExternalEvents. Each is distinct so a caller can tell
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

func (e *NoDecisionError) Error() string { return NoDecisionPrefix + e.Reason }

// Unwrap returns the sentinel behind e.
func (e *NoDecisionError) Unwrap() error { return e.Cause }

// Reasons given when a wait ends without an answer.
const (
	ReasonExpired   = "the request expired"
	ReasonCancelled = "cancelled"
)

// ExternalEvents carries answers to a run that waits on a resume token,
// possibly from another goroutine, process or machine.
//
// The order is Open, then ask (which hands the token to people), then Wait.
// Resolve and Fail may come at any time after Open, even before Wait.
type ExternalEvents interface {
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

// MemoryEvents is the in-process ExternalEvents: the run and the answer
// live in one process. Finished tokens are remembered for Retain so late
// answers get a precise error, then forgotten.
type MemoryEvents struct {
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// Retain is how long a finished token is remembered; 0 means 1 hour.
	Retain time.Duration

	mu     sync.Mutex
	tokens map[string]*memToken
}

type memToken struct {
	deadline time.Time
	done     chan struct{} // closed once state leaves pending
	state    error         // nil while pending; ErrTokenResolved etc. after
	results  *DeferredToolResults
	nd       *NoDecisionError
	finished time.Time
	timer    *time.Timer
}

// NewMemoryEvents returns an empty MemoryEvents.
func NewMemoryEvents() *MemoryEvents { return &MemoryEvents{} }

func (m *MemoryEvents) now() time.Time {
	if m.Now != nil {
		return m.Now()
	}
	return time.Now()
}

// Open implements ExternalEvents.
func (m *MemoryEvents) Open(_ context.Context, token string, deadline time.Time) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.tokens == nil {
		m.tokens = map[string]*memToken{}
	}
	m.gcLocked()
	if _, ok := m.tokens[token]; ok {
		return fmt.Errorf("open %s: token already open", shortToken(token))
	}
	t := &memToken{deadline: deadline, done: make(chan struct{})}
	m.tokens[token] = t
	if !deadline.IsZero() {
		t.timer = time.AfterFunc(deadline.Sub(m.now()), func() { m.expire(token) })
	}
	return nil
}

// Expire ends the wait on token as expired if it is still pending. It is
// called by the deadline timer and lets tests with an injected clock expire
// tokens without sleeping.
func (m *MemoryEvents) Expire(token string) error { return m.expire(token) }

func (m *MemoryEvents) expire(token string) error {
	return m.finish(token, nil, &NoDecisionError{Reason: ReasonExpired, Cause: ErrTokenExpired})
}

// Wait implements ExternalEvents.
func (m *MemoryEvents) Wait(ctx context.Context, token string) (*DeferredToolResults, error) {
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

// Resolve implements ExternalEvents.
func (m *MemoryEvents) Resolve(_ context.Context, token string, results *DeferredToolResults) error {
	if results == nil {
		results = NewDeferredToolResults()
	}
	return m.finish(token, results, nil)
}

// Fail implements ExternalEvents.
func (m *MemoryEvents) Fail(_ context.Context, token string, nd *NoDecisionError) error {
	if nd == nil {
		nd = &NoDecisionError{Reason: "failed", Cause: ErrTokenFailed}
	}
	if nd.Cause == nil {
		nd.Cause = ErrTokenFailed
	}
	return m.finish(token, nil, nd)
}

func (m *MemoryEvents) finish(token string, results *DeferredToolResults, nd *NoDecisionError) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	t, ok := m.tokens[token]
	if !ok {
		return ErrTokenNotFound
	}
	if t.state != nil {
		return t.state
	}
	if nd != nil {
		t.nd = nd
		t.state = nd.Cause
	} else {
		t.results = results
		t.state = ErrTokenResolved
	}
	t.finished = m.now()
	if t.timer != nil {
		t.timer.Stop()
	}
	close(t.done)
	return nil
}

// gcLocked forgets tokens finished longer than Retain ago.
func (m *MemoryEvents) gcLocked() {
	retain := m.Retain
	if retain == 0 {
		retain = time.Hour
	}
	cutoff := m.now().Add(-retain)
	for k, t := range m.tokens {
		if t.state != nil && t.finished.Before(cutoff) {
			delete(m.tokens, k)
		}
	}
}

// shortToken returns a prefix of a token, safe to log.
func shortToken(token string) string {
	if len(token) > 6 {
		return token[:6] + "…"
	}
	return token
}
