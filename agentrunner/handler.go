package agentrunner

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// RunContext describes the run to deferred-call handlers and to ask.
type RunContext struct {
	// RunID identifies the run across resumes.
	RunID string
	// Messages is the history so far: it ends with the model response that
	// made the pending calls and the returns of calls already executed. A
	// handler that persists a run for durable resume saves these.
	Messages []Message
	// Deps is whatever the caller passed in RunInput.Deps.
	Deps any
	// Decided holds what the earlier handlers of this round decided: it is
	// applied once every handler had its turn, so it is not in Messages
	// yet. Never nil inside Run.
	Decided *DeferredToolResults
	// Runner is the runner executing the run; use it for PendingCalls.
	Runner *Runner
}

// DeferredHandler decides some or all of the pending calls of a run without
// ending it. Handlers run in order, each seeing only what the previous ones
// left. Returning nil or empty results leaves every call to the next handler.
// Results must name only pending calls; an error ends the run.
type DeferredHandler interface {
	HandleDeferred(ctx context.Context, rc *RunContext, requests DeferredToolRequests) (*DeferredToolResults, error)
}

// HandlerFunc adapts a function to DeferredHandler.
type HandlerFunc func(ctx context.Context, rc *RunContext, requests DeferredToolRequests) (*DeferredToolResults, error)

// HandleDeferred calls f.
func (f HandlerFunc) HandleDeferred(ctx context.Context, rc *RunContext, requests DeferredToolRequests) (*DeferredToolResults, error) {
	return f(ctx, rc, requests)
}

// AskFunc hands pending calls and their resume token to people or systems.
// It returns results to answer in place, or nil results to make the run wait
// until the token is resolved, failed, cancelled or expires.
type AskFunc func(ctx context.Context, rc *RunContext, requests DeferredToolRequests, token string) (*DeferredToolResults, error)

// AskHandler is the RequestInput-style handler: innermost in a chain, it
// opens a resume token, calls Ask, and waits on Tokens for the answer.
// When the wait ends without an answer every pending approval is denied and
// every pending call fails with NoDecisionPrefix + reason, and the run goes
// on so the model can tell the user. When ctx ends first (shutdown), the run
// fails with ctx's error and nothing is denied: the token stays open so the
// answer can resume the run elsewhere (see RunContext.Messages).
//
// An answer, given in place or through Tokens, passes through its JSON form,
// so both look the same to the run. Calls an answer leaves out stay
// undecided: the run ends pending, or fails with ErrUndecided when it does
// not allow pending output.
type AskHandler struct {
	Ask    AskFunc
	Tokens Tokens
	// Asker, when set, replaces Ask and every write on Tokens: it records
	// and ends the ask, and the run waits on Waiter (see Asker).
	Asker  Asker
	Waiter TokenWaiter
	// Timeout bounds each wait; 0 means one hour. Deadline, when set,
	// overrides it per request (e.g. from a routing table).
	Timeout  time.Duration
	Deadline func(rc *RunContext, requests DeferredToolRequests) time.Time
	// NewToken makes resume tokens; nil means NewToken.
	NewToken func() string
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// Suspend, when set, makes a run whose calls Ask handed out (nil
	// results) return at once instead of waiting on Tokens: Run ends with
	// StatusSuspended, the token and the calls (see Suspend), and whoever
	// gets the answer resumes the run from its history, in this process or
	// any other. A run whose earlier handlers decided calls in the same
	// round waits as without Suspend, since those decisions are not in its
	// history yet. Without Suspend the run waits in place (RequestInput
	// semantics).
	Suspend bool
}

// HandleDeferred implements DeferredHandler. Calls whose arguments
// CheckArgs refuses (nested too deeply, or readable two ways) are never
// asked about: they are refused in place (approvals denied, other calls
// failed) with a message saying why.
func (h *AskHandler) HandleDeferred(ctx context.Context, rc *RunContext, requests DeferredToolRequests) (*DeferredToolResults, error) {
	refused, rest := refuseUnreadable(requests)
	if refused == nil {
		return h.ask(ctx, rc, requests)
	}
	if rest.Empty() {
		return roundTrip(refused)
	}
	answer, err := h.ask(ctx, rc, rest)
	if err != nil {
		return nil, err
	}
	answer.Merge(refused)
	return answer, nil
}

// ask opens a token, hands requests to Ask and waits for the answer.
func (h *AskHandler) ask(ctx context.Context, rc *RunContext, requests DeferredToolRequests) (*DeferredToolResults, error) {
	newToken := h.NewToken
	if newToken == nil {
		newToken = NewToken
	}
	now := time.Now
	if h.Now != nil {
		now = h.Now
	}
	var deadline time.Time
	if h.Deadline != nil {
		deadline = h.Deadline(rc, requests)
	}
	if deadline.IsZero() {
		timeout := h.Timeout
		if timeout == 0 {
			timeout = time.Hour
		}
		deadline = now().Add(timeout)
	}
	token := newToken()
	suspend := h.suspends(rc)
	if h.Asker != nil {
		return h.askThrough(ctx, rc, requests, token, deadline, suspend)
	}
	if err := h.Tokens.Open(ctx, token, deadline); err != nil {
		return nil, fmt.Errorf("ask: %w", err)
	}
	answer, err := h.Ask(ctx, rc, requests, token)
	if err != nil {
		if ctx.Err() == nil {
			// The token was handed out, or may have been: end it so a late
			// click gets a clear error instead of resolving a run that moved
			// on. On shutdown (ctx done) it stays open for a durable resume.
			_ = h.Tokens.Fail(context.WithoutCancel(ctx), token, &NoDecisionError{Reason: "asking failed", Cause: ErrTokenFailed})
		}
		return nil, fmt.Errorf("ask: %w", err)
	}
	if answer == nil {
		if suspend {
			return nil, Suspend(rc, requests, token, deadline)
		}
		answer, err = h.Tokens.Wait(ctx, token)
		var nd *NoDecisionError
		if errors.As(err, &nd) {
			return NoDecision(requests, nd.Reason), nil
		}
		if err != nil {
			// ctx ended (shutdown) or the token is gone: the run stops
			// with the error and denies nothing, so it can be resumed
			// elsewhere when the answer arrives.
			return nil, fmt.Errorf("wait: %w", err)
		}
	} else {
		// Close the token so a late answer gets ErrTokenResolved.
		_ = h.Tokens.Resolve(context.WithoutCancel(ctx), token, answer)
	}
	// An answer passes through its JSON form so an answer given in place and
	// one that crossed a process boundary look the same to the run.
	return roundTrip(answer)
}

func roundTrip(r *DeferredToolResults) (*DeferredToolResults, error) {
	b, err := json.Marshal(r)
	if err != nil {
		return nil, fmt.Errorf("encode answer: %w", err)
	}
	out := &DeferredToolResults{}
	if err := json.Unmarshal(b, out); err != nil {
		return nil, fmt.Errorf("decode answer: %w", err)
	}
	return out, nil
}

// NoDecision answers every pending call as having received no decision:
// approvals are denied and calls fail, each with NoDecisionPrefix + reason.
func NoDecision(requests DeferredToolRequests, reason string) *DeferredToolResults {
	msg := NoDecisionPrefix + reason
	res := NewDeferredToolResults()
	for _, c := range requests.Approvals {
		res.Approvals[c.ToolCallID] = Deny(msg)
	}
	for _, c := range requests.Calls {
		res.Calls[c.ToolCallID] = Fail(msg)
	}
	return res
}
