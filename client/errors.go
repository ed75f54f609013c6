package client

import (
	"errors"
	"fmt"
	"net/http"
	"time"
)

// Codes of *Error: the stable strings slackbot answers with (its
// /v1/openapi.json). Messages may change; codes do not.
const (
	CodeUnauthorized         = "unauthorized"           // 401: no or unknown API key
	CodeNotFound             = "not_found"              // 404: unknown token, or another key's
	CodeMethodNotAllowed     = "method_not_allowed"     // 405
	CodeInvalidRequest       = "invalid_request"        // 400: malformed body or parameter; the message says what
	CodeRouteForbidden       = "route_forbidden"        // 403: a route the key may not use
	CodeSelfApproval         = "self_approval"          // 403: the key decides its own request on a route that does not allow it
	CodeConflict             = "conflict"               // 409: the request ended, the call was decided, the idempotency key is taken
	CodePayloadTooLarge      = "payload_too_large"      // 413: body over 1 MiB
	CodeUnsupportedMediaType = "unsupported_media_type" // 415
	CodeRateLimited          = "rate_limited"           // 429: the key's quota; see RetryAfter
	CodeUnconfirmed          = "unconfirmed"            // 503: Redis's replicas did not confirm; repeat after RetryAfter
	CodeInternal             = "internal"               // 500: slackbot's fault
)

// Error is an error response of slackbot: {"error":{"code","message"}}
// with its HTTP status. Branch on Code, not on Message.
type Error struct {
	Status  int    // the HTTP status
	Code    string // one of the Code constants; empty if the body held none
	Message string // slackbot's explanation, for people
	// RetryAfter is the response's Retry-After, when it has one (429, 503).
	RetryAfter time.Duration
}

func (e *Error) Error() string {
	if e.Code == "" {
		return fmt.Sprintf("slackbot answered %d %s", e.Status, http.StatusText(e.Status))
	}
	return fmt.Sprintf("slackbot answered %d %s: %s", e.Status, e.Code, e.Message)
}

// UnreachableError is a request that got no response: slackbot could not
// be reached, the connection broke, or ctx ended first (Err says which;
// errors.Is(err, context.Canceled) works through it). It never holds the
// URL, which Client.Redacted shows.
type UnreachableError struct{ Err error }

func (e *UnreachableError) Error() string { return e.Err.Error() }
func (e *UnreachableError) Unwrap() error { return e.Err }

// ResponseError is a response the client cannot read as the API
// documents it: too large, not the JSON expected, or not an approval
// request.
type ResponseError struct {
	Status int // the HTTP status it came with
	// Err is the JSON decoding error when the body does not decode;
	// nil when Problem says what is wrong.
	Err     error
	Problem string
}

func (e *ResponseError) Error() string {
	if e.Err != nil {
		return fmt.Sprintf("slackbot answered %d with JSON this client does not understand: %v", e.Status, e.Err)
	}
	return fmt.Sprintf("slackbot answered %d with %s", e.Status, e.Problem)
}

func (e *ResponseError) Unwrap() error { return e.Err }

// IsTransient reports whether err may pass if the same request is made
// again: slackbot was unreachable or answered with a 5xx status. A
// refusal (4xx, rate limits included) or an unreadable answer is not.
// An error after the caller's own ctx ended is also an UnreachableError:
// check ctx first.
func IsTransient(err error) bool {
	var down *UnreachableError
	var e *Error
	return errors.As(err, &down) || (errors.As(err, &e) && e.Status >= 500)
}

// Errors of New, to compare with errors.Is.
var (
	// ErrInvalidURL: the base URL is not an http or https URL with a host.
	ErrInvalidURL = errors.New("want an http:// or https:// base URL such as https://slackbot.example.com")
	// ErrInvalidKey: the API key is empty or holds white space.
	ErrInvalidKey = errors.New("want an API key from slackbot's API_KEYS, without white space")
)
