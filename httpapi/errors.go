package httpapi

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net/http"
	"strconv"
	"time"

	"github.com/slackapprove/slackbot/agentrunner"
	"github.com/slackapprove/slackbot/approval"
)

// Error codes: stable strings clients may branch on, each with one HTTP
// status. Messages may change; codes do not.
const (
	CodeUnauthorized         = "unauthorized"           // 401: no or unknown bearer key
	CodeNotFound             = "not_found"              // 404: unknown token, another client's token, unknown path
	CodeMethodNotAllowed     = "method_not_allowed"     // 405
	CodeInvalidRequest       = "invalid_request"        // 400: malformed body or parameter; the message says what
	CodeRouteForbidden       = "route_forbidden"        // 403: unknown route, or one the key may not use
	CodeSelfApproval         = "self_approval"          // 403: the key approves or denies an approval it asked for, on a route without allow_self_approval
	CodeStepUpRequired       = "step_up_required"       // 403: the approval needs a person's step-up (a passkey): no API key approves it
	CodeConflict             = "conflict"               // 409: the token ended, the call was decided, the idempotency key is taken
	CodePayloadTooLarge      = "payload_too_large"      // 413: body over 1 MiB
	CodeUnsupportedMediaType = "unsupported_media_type" // 415: body not application/json
	CodeRateLimited          = "rate_limited"           // 429: the key's quota (API_MAX_OPEN, API_RATE); see Retry-After
	CodeUnconfirmed          = "unconfirmed"            // 503: REDIS_WAIT_REPLICAS replicas did not confirm the write; repeat it after Retry-After
	CodeInternal             = "internal"               // 500: slackbot's fault; details are in its log only
)

// Error is an error the API reports as is: its status, code and message
// are the response.
type Error struct {
	Status  int
	Code    string
	Message string
	// RetryAfter, when set, is sent as the Retry-After header (seconds).
	RetryAfter time.Duration
}

func (e *Error) Error() string { return fmt.Sprintf("%d %s: %s", e.Status, e.Code, e.Message) }

func invalid(format string, args ...any) *Error {
	return &Error{Status: http.StatusBadRequest, Code: CodeInvalidRequest, Message: fmt.Sprintf(format, args...)}
}

func conflict(format string, args ...any) *Error {
	return &Error{Status: http.StatusConflict, Code: CodeConflict, Message: fmt.Sprintf(format, args...)}
}

var (
	errUnauthorized = &Error{Status: http.StatusUnauthorized, Code: CodeUnauthorized,
		Message: "a valid bearer key is required: Authorization: Bearer <key from API_KEYS>"}
	errNotFound = &Error{Status: http.StatusNotFound, Code: CodeNotFound,
		Message: "no approval request with this token"}
)

func rateLimited(l *approval.RateLimitError) *Error {
	msg := "this key creates requests faster than API_RATE allows; retry after the Retry-After seconds"
	if l.Limit == approval.LimitMaxOpen {
		msg = "this key has as many requests open as API_MAX_OPEN allows; retry when some are decided, cancelled or expired"
	}
	return &Error{Status: http.StatusTooManyRequests, Code: CodeRateLimited, Message: msg, RetryAfter: l.RetryAfter}
}

// errorBody is the JSON of every error response.
type errorBody struct {
	Error errorDetail `json:"error"`
}

type errorDetail struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// errorTable maps approval's errors to what the client sees, first match
// first: by cause where one code covers two answers (ErrNotPending shares
// ENOTFOUND but is a call decided meanwhile; ErrRouteNotForTool is an
// EFORBIDDEN that asks for another route), then by code. A row with a
// status and no resp answers with the error's own Message, which approval
// writes for the client (what was malformed, which calls were decided).
// An unknown route answers as a forbidden one, so a restricted key
// cannot probe route names.
var errorTable = []struct {
	cause  error  // an error to match with errors.Is, or
	code   string // an approval error code
	resp   *Error
	status int // with api: the response carries the error's own Message
	api    string
}{
	{cause: agentrunner.ErrNotPending, resp: errDecidedMeanwhile},
	{cause: approval.ErrRouteNotForTool, resp: &Error{Status: http.StatusForbidden, Code: CodeRouteForbidden,
		Message: "the route the request names does not match the tool of every call (its when.tools); name no route, or one that matches"}},
	{code: approval.ENOTFOUND, resp: errNotFound},
	{code: approval.EDECIDED, resp: errDecidedMeanwhile},
	{code: approval.ERESOLVED, resp: conflict("the approval request was already resolved")},
	{code: approval.EEXPIRED, resp: conflict("the approval request expired")},
	{code: approval.ECANCELLED, resp: conflict("the approval request was cancelled")},
	{code: approval.EFAILED, resp: conflict("the approval request ended: slackbot could not ask for it")},
	{code: approval.ENOROUTE, resp: errRouteForbidden},
	{code: approval.EFORBIDDEN, resp: errRouteForbidden},
	{code: approval.ESELFAPPROVAL, status: http.StatusForbidden, api: CodeSelfApproval},
	{code: approval.ESTEPUP, status: http.StatusForbidden, api: CodeStepUpRequired},
	{code: approval.EINVALID, status: http.StatusBadRequest, api: CodeInvalidRequest},
	{code: approval.EPOLICY, status: http.StatusBadRequest, api: CodeInvalidRequest},
	{code: approval.ECONFLICT, status: http.StatusConflict, api: CodeConflict},
	{code: approval.EUNCONFIRMED, resp: errUnconfirmed},
	{code: approval.ERECORDING, resp: errRecording},
}

var (
	errDecidedMeanwhile = conflict("a call was decided meanwhile; read the request and answer what is still pending")
	errRouteForbidden   = &Error{Status: http.StatusForbidden, Code: CodeRouteForbidden,
		Message: "this key may not send calls to the route the request names or its calls match"}
	// The change is held on the Redis primary, with no effect, until enough
	// replicas confirm it: the client repeats the request (with its
	// idempotency key for a create), which applies it once they do or
	// says what became of it.
	errUnconfirmed = &Error{Status: http.StatusServiceUnavailable, Code: CodeUnconfirmed, RetryAfter: time.Second,
		Message: "Redis's replicas did not confirm the change in time, so it is not in effect: slackbot applies it once they do, unless a Redis failover loses it first. Repeat the same request to learn which"}
	// Another change of the request is held so: nothing changed.
	errRecording = &Error{Status: http.StatusServiceUnavailable, Code: CodeUnconfirmed, RetryAfter: time.Second,
		Message: "another change of this approval request waits for Redis's replicas to confirm it; nothing changed. Try again after Retry-After"}
	errInternal = &Error{Status: http.StatusInternalServerError, Code: CodeInternal,
		Message: "slackbot failed to handle the request; try again later"}
)

// toError maps any error to what the client sees. This is the one place
// where errors become statuses; anything it does not know is internal.
func toError(err error) *Error {
	var e *Error
	var tooLarge *http.MaxBytesError
	var limited *approval.RateLimitError
	switch {
	case errors.As(err, &e):
		return e
	case errors.As(err, &tooLarge):
		return &Error{Status: http.StatusRequestEntityTooLarge, Code: CodePayloadTooLarge,
			Message: fmt.Sprintf("the body is larger than %d bytes", tooLarge.Limit)}
	case errors.As(err, &limited):
		return rateLimited(limited)
	}
	code := approval.ErrorCode(err)
	for _, m := range errorTable {
		if (m.cause != nil && errors.Is(err, m.cause)) || (m.cause == nil && m.code == code) {
			if m.resp != nil {
				return m.resp
			}
			return &Error{Status: m.status, Code: m.api, Message: approval.ErrorMessage(err)}
		}
	}
	return errInternal
}

// writeError writes err as an error response, logging it once if it is
// internal.
func writeError(w http.ResponseWriter, r *http.Request, log *slog.Logger, err error) {
	e := toError(err)
	if e.Status >= 500 {
		log.ErrorContext(r.Context(), "API request failed", "method", r.Method, "path", routeOf(r), "err", err)
	}
	if e.Status == http.StatusUnauthorized {
		w.Header().Set("WWW-Authenticate", `Bearer realm="slackbot"`)
	}
	if e.RetryAfter > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(int(math.Ceil(e.RetryAfter.Seconds()))))
	}
	writeJSON(w, e.Status, errorBody{Error: errorDetail{Code: e.Code, Message: e.Message}})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		status = http.StatusInternalServerError
		b = []byte(`{"error":{"code":"internal","message":"slackbot failed to encode the response"}}`)
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_, _ = w.Write(append(b, '\n'))
}

// routeOf names the request's route for logs, without the token.
func routeOf(r *http.Request) string {
	if r.Pattern != "" {
		return r.Pattern
	}
	return r.URL.Path
}
