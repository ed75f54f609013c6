package approval

import "time"

// AgentSession is a coding agent's run that stopped at a tool call it
// deferred to this request (Claude Code's PreToolUse "defer"), registered
// by the API client that opened the request so that one of its resumers
// resumes the run once the call is decided. It is the client's
// bookkeeping beside the request, never part of the request's record: see
// docs/ARCHITECTURE.md, "Deferred coding-agent sessions".
type AgentSession struct {
	// ID names the session in /v1; the store derives it from Client,
	// Resumer, Token and CallID, so registering twice finds one session.
	ID string
	// Client is the API key's name that registered it: only that key
	// reads, claims or finishes it.
	Client string
	// Resumer names the resumer (one per machine or CI runner) that
	// resumes it.
	Resumer string
	// Agent is the agent ("claude-code").
	Agent string
	// Token and CallID are the request and its call the agent deferred.
	Token, CallID string
	// SessionID is the agent's own session, to resume; Cwd the directory
	// it ran in; Args the flags to resume it with (checked against an
	// allow-list when registered and again before a resumer runs them).
	SessionID string
	Cwd       string
	Args      []string
	// State is SessionWaiting, SessionClaimed, SessionDone or
	// SessionFailed.
	State string
	// Attempts counts the claims; LeaseUntil ends the current one.
	Attempts   int
	LeaseUntil time.Time
	// Outcome says how the last resume ended (set when done).
	Outcome string
	// Created is when it was registered.
	Created time.Time
}

// States of an AgentSession.
const (
	SessionWaiting = "waiting" // registered, not claimed
	SessionClaimed = "claimed" // a resumer holds it until LeaseUntil
	SessionDone    = "done"    // resumed; Outcome says how that ended
	SessionFailed  = "failed"  // claimed MaxSessionAttempts times, never finished
)

// MaxSessionAttempts bounds the claims of one session: a resumer that
// crashed after its claim leaves the session to be claimed again once the
// lease ends, at most this many times in all.
const MaxSessionAttempts = 3

// Claimable reports whether a resumer may claim s at now: waiting, or
// claimed by a resumer whose lease ended.
func (s *AgentSession) Claimable(now time.Time) bool {
	return s.State == SessionWaiting || (s.State == SessionClaimed && !now.Before(s.LeaseUntil))
}
