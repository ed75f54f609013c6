package approval

import (
	"errors"
	"fmt"

	"github.com/slackapprove/slackbot/agentrunner"
)

// Error codes: the one vocabulary of what can go wrong with an approval.
// Package httpapi maps each to an HTTP status, package bot to the sentence
// a person reads, and metrics use the code as their label; nothing ever
// branches on an error's English text.
const (
	// ENOTFOUND: the token is unknown or its record is gone, or the call
	// is not one of the request's.
	ENOTFOUND = "not_found"
	// EEXPIRED: the request's deadline passed.
	EEXPIRED = "expired"
	// ECANCELLED: the request was cancelled.
	ECANCELLED = "cancelled"
	// ERESOLVED: the request was already resolved.
	ERESOLVED = "resolved"
	// EFAILED: the request was ended by a failure (asking failed).
	EFAILED = "failed"
	// EDECIDED: the call already has a different decision.
	EDECIDED = "decided"
	// ETOOLATE: the decision reached the store after its NotAfter, or the
	// time to acknowledge a click ran out; nothing was recorded.
	ETOOLATE = "too_late"
	// EINVALID: the input is malformed; nothing changed.
	EINVALID = "invalid"
	// ECONFLICT: the token exists already, or an idempotency key was
	// reused for a different request.
	ECONFLICT = "conflict"
	// ERATELIMITED: a quota or rate limit refused the request.
	ERATELIMITED = "rate_limited"
	// EFORBIDDEN: the caller may not do this (an API client and a route it
	// may not use, another client's request).
	EFORBIDDEN = "forbidden"
	// ENOTAPPROVER: the person is not among the route's approvers.
	ENOTAPPROVER = "not_approver"
	// ESELFAPPROVAL: the person asked for the call and the route does not
	// allow them to approve it.
	ESELFAPPROVAL = "self_approval"
	// EWRONGMESSAGE: the click came from a message that is not the call's
	// card.
	EWRONGMESSAGE = "wrong_message"
	// EWRONGTEAM: the click came from another Slack workspace.
	EWRONGTEAM = "wrong_team"
	// ENOROUTE: the call's route does not exist (any more), or a request
	// named a route the routing file does not have.
	ENOROUTE = "no_route"
	// EPOLICY: a route's policy refuses the call as decided (an edit that
	// auto_deny matches).
	EPOLICY = "policy"
	// EUNAVAILABLE: a dependency (Redis, Slack) did not answer in time;
	// trying again later may work.
	EUNAVAILABLE = "unavailable"
	// EUNCONFIRMED: fewer of Redis's replicas than REDIS_WAIT_REPLICAS
	// confirmed the change in time. It is held on the Redis primary with
	// no effect (the request reads as before, nothing acts on it) and
	// applied once the replicas confirm it, by whoever repeats it or in
	// the background (Service.Confirm); a failover to a replica that never
	// had it loses it, and the request is as it was. Repeating the same
	// change is safe.
	EUNCONFIRMED = "unconfirmed"
	// ERECORDING: another change of the request is held until Redis's
	// replicas confirm it (EUNCONFIRMED); nothing changed, and trying again
	// in a moment tells what became of it.
	ERECORDING = "recording"
	// EINTERNAL: anything else; logged where it happens.
	EINTERNAL = "internal"
)

// Error is an error of the approval domain: a Code from the list above and
// a Message meant for the person or client at the other end. Err, when
// set, is the underlying cause, for logs and for errors.Is.
type Error struct {
	Code    string
	Message string
	Err     error
}

// Error implements error.
func (e *Error) Error() string {
	switch {
	case e.Message != "":
		return e.Message
	case e.Err != nil:
		return e.Code + ": " + e.Err.Error()
	}
	return e.Code
}

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Err }

// Is makes errors.Is(err, ErrExpired) (or any *Error) match every error of
// the same code, except that a target with a cause matches only errors
// with no cause or the same one: ErrNotPending and ErrNotFound share their
// code but not their cause, so errors.Is tells them apart.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	if !ok || t.Code != e.Code {
		return false
	}
	return t.Err == nil || e.Err == nil || errors.Is(e.Err, t.Err)
}

// Errorf returns an *Error with code and a formatted message; a %w verb
// sets Err (whose text is then part of the message).
func Errorf(code, format string, args ...any) *Error {
	err := fmt.Errorf(format, args...)
	return &Error{Code: code, Message: err.Error(), Err: errors.Unwrap(err)}
}

// Sentinels, one per code that callers test for with errors.Is. Each wraps
// agentrunner's error for the same condition where there is one, so a
// waiter's errors.Is(err, agentrunner.ErrTokenExpired) holds too.
var (
	ErrNotFound   = &Error{Code: ENOTFOUND, Message: "approval request not found", Err: agentrunner.ErrTokenNotFound}
	ErrExpired    = &Error{Code: EEXPIRED, Message: "approval request expired", Err: agentrunner.ErrTokenExpired}
	ErrCancelled  = &Error{Code: ECANCELLED, Message: "approval request cancelled", Err: agentrunner.ErrTokenCancelled}
	ErrResolved   = &Error{Code: ERESOLVED, Message: "approval request already resolved", Err: agentrunner.ErrTokenResolved}
	ErrFailed     = &Error{Code: EFAILED, Message: "approval request failed", Err: agentrunner.ErrTokenFailed}
	ErrDecided    = &Error{Code: EDECIDED, Message: "tool call already decided"}
	ErrTooLate    = &Error{Code: ETOOLATE, Message: "decision arrived too late to be recorded"}
	ErrInvalid    = &Error{Code: EINVALID, Message: "invalid request"}
	ErrConflict   = &Error{Code: ECONFLICT, Message: "conflict"}
	ErrForbidden  = &Error{Code: EFORBIDDEN, Message: "forbidden"}
	ErrNoRoute    = &Error{Code: ENOROUTE, Message: "no such route"}
	ErrRateLimit  = &Error{Code: ERATELIMITED, Message: "rate limited"}
	ErrNotPending = &Error{Code: ENOTFOUND, Message: "tool call is not pending under this token", Err: agentrunner.ErrNotPending}
)

// ErrUnconfirmed: a change too few replicas confirmed (EUNCONFIRMED).
var ErrUnconfirmed = &Error{Code: EUNCONFIRMED, Message: "Redis's replicas have not confirmed the change yet, so it is not in effect: it takes effect once they do, unless a Redis failover loses it first. Repeat the same change to learn which"}

// ErrRecording: another change of the request waits for Redis's replicas
// (ERECORDING).
var ErrRecording = &Error{Code: ERECORDING, Message: "another change of this request waits for Redis's replicas to confirm it; nothing changed. Try again in a moment"}

// ErrRouteNotForTool is the cause of Open's EFORBIDDEN when the route a
// request names does not match one of its calls' tools, so a door can
// tell the client to name another route (or none) rather than that its
// key may not use the route.
var ErrRouteNotForTool = errors.New("the named route does not match the call's tool (its when.tools)")

// ErrorCode returns the code of err: an *Error's Code anywhere in its
// chain (or the code of agentrunner's token error it wraps), EINTERNAL
// for anything else, and "" for nil.
func ErrorCode(err error) string {
	var e *Error
	switch {
	case err == nil:
		return ""
	case errors.As(err, &e):
		return e.Code
	case errors.Is(err, agentrunner.ErrTokenNotFound):
		return ENOTFOUND
	case errors.Is(err, agentrunner.ErrTokenExpired):
		return EEXPIRED
	case errors.Is(err, agentrunner.ErrTokenCancelled):
		return ECANCELLED
	case errors.Is(err, agentrunner.ErrTokenResolved):
		return ERESOLVED
	case errors.Is(err, agentrunner.ErrTokenFailed):
		return EFAILED
	}
	return EINTERNAL
}

// ErrorMessage returns the message of err meant for the other end: an
// *Error's Message, or a generic sentence that reveals nothing of an
// internal error (which is logged where it happens).
func ErrorMessage(err error) string {
	var e *Error
	switch {
	case err == nil:
		return ""
	case errors.As(err, &e) && e.Message != "":
		return e.Message
	}
	return "internal error"
}
