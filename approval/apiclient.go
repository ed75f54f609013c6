package approval

import (
	"fmt"
	"time"
)

// This file holds what an API client's requests carry besides their calls:
// quotas, idempotency keys and callbacks. Package store keeps them; package
// httpapi serves them. They are here so that both speak the same types and
// neither imports the other.

// Quota bounds what one API client may open. Zero fields do not limit.
type Quota struct {
	// MaxOpen bounds the client's requests that are open at once.
	MaxOpen int
	// Rate bounds the requests the client creates per second, with bursts
	// of twice as many (a token bucket of 2×Rate refilled at Rate).
	Rate float64
}

// Limits of a Quota, as RateLimitError.Limit names them.
const (
	LimitMaxOpen = "max_open"
	LimitRate    = "rate"
)

// RateLimitError is a quota's refusal: which limit, and when a retry may
// succeed. Its ErrorCode is ERATELIMITED.
type RateLimitError struct {
	// Limit is LimitMaxOpen or LimitRate.
	Limit string
	// RetryAfter is how long to wait before trying again: exact for the
	// rate, a hint for open requests (they end when people decide).
	RetryAfter time.Duration
}

// Error says which limit refused.
func (e *RateLimitError) Error() string {
	return fmt.Sprintf("rate limited (%s); retry after %s", e.Limit, e.RetryAfter)
}

// Unwrap makes every *RateLimitError an ErrRateLimit: its ErrorCode is
// ERATELIMITED, and errors.As still finds it (and its RetryAfter) in a
// chain.
func (e *RateLimitError) Unwrap() error { return ErrRateLimit }

// Idempotency is what an API client's idempotency key stands for: the
// token the first request with the key created.
type Idempotency struct {
	Token string
	// Fingerprint identifies the first request (a digest of its body), so
	// a different request reusing the key can be told apart from a retry.
	Fingerprint string
}

// CallbackJob is one attempt to tell a request's callback URL how the
// request ended.
type CallbackJob struct {
	// ID is the job's queue entry id, for acknowledging and retrying it.
	ID    string
	Token string
	// State is how the request ended.
	State State
	// Attempt counts the attempts of this delivery, from 1.
	Attempt int
	// TraceParent is the W3C trace context of what ended the token, on
	// the first attempt; "" without tracing (and on retries).
	TraceParent string
}

// Outcomes of a callback attempt.
const (
	CallbackDelivered = "delivered" // the receiver answered 2xx
	CallbackRetrying  = "retrying"  // it failed; another attempt is scheduled
	CallbackAbandoned = "abandoned" // it failed and no attempt is left
)

// CallbackAttempt is one attempt to deliver a request's callback, for the
// audit stream.
type CallbackAttempt struct {
	Token string
	// Client is the API client the callback is for.
	Client  string
	Attempt int
	// Outcome is CallbackDelivered, CallbackRetrying or CallbackAbandoned.
	Outcome string
	// Status is the receiver's HTTP status; 0 when there was no response.
	Status int
	// Error says why the attempt failed; never the receiver's body.
	Error string
}
