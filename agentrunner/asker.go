package agentrunner

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Asker is what an AskHandler asks when another component owns the
// record of an ask (slackbot's approval.Service): it records the pending
// calls under a token and hands them out, and it alone ends the token
// early, when the ask failed. The handler then writes nothing of the ask
// itself: it waits on its Waiter, or suspends the run.
type Asker interface {
	// Ask records a.Requests under a.Token until a.Deadline and hands them
	// to people or systems. The answer comes later: to the Waiter, or to
	// whoever resumes the suspended run.
	Ask(ctx context.Context, rc *RunContext, a Asking) error
	// Fail ends token, whose Ask failed after it may have recorded it,
	// without an answer (nd says why), so that a late answer is refused
	// and whoever was shown the calls learns that they ended.
	Fail(ctx context.Context, token string, nd *NoDecisionError) error
}

// Asking is one ask an AskHandler hands to its Asker.
type Asking struct {
	Token    string
	Requests DeferredToolRequests
	Deadline time.Time
	// Recorded, when set, must be called once the ask is recorded and
	// before anyone is shown its calls: the handler registers there, for
	// a run that waits in place, that this process waits on the token.
	Recorded func(ctx context.Context) error
}

// TokenWaiter is what an AskHandler with an Asker waits on (slackbot's
// approval.RunTokens).
type TokenWaiter interface {
	// Wait blocks until token ends and returns its results, or a
	// *NoDecisionError if it ended without them; see Tokens.Wait.
	Wait(ctx context.Context, token string) (*DeferredToolResults, error)
}

// TokenWatcher is what a TokenWaiter shared by processes implements, so
// that a run is resumed at most once: by the process that waits on it in
// place, or by one that resumes it from its saved state, never both.
type TokenWatcher interface {
	// Watch registers this process as the one that waits on token in
	// place; called before anyone is shown the token's calls.
	Watch(ctx context.Context, token string) error
	// Keep claims the run of token for this process: its ask failed and
	// the run ends here with the error, so nobody else resumes it.
	Keep(ctx context.Context, token string) error
}

// askThrough is ask with an Asker: the ask of requests under token, due at
// deadline, is recorded and ended by the Asker only.
func (h *AskHandler) askThrough(ctx context.Context, rc *RunContext, requests DeferredToolRequests, token string, deadline time.Time, suspend bool) (*DeferredToolResults, error) {
	a := Asking{Token: token, Requests: requests, Deadline: deadline}
	watcher, _ := h.Waiter.(TokenWatcher)
	if watcher != nil && !suspend {
		a.Recorded = func(ctx context.Context) error { return watcher.Watch(ctx, token) }
	}
	if err := h.Asker.Ask(ctx, rc, a); err != nil {
		if ctx.Err() == nil {
			// The token was handed out, or may have been: the run ends here
			// with the error, and the token ends so that a late click gets
			// a clear error. On shutdown (ctx done) it stays open for a
			// durable resume.
			cctx := context.WithoutCancel(ctx)
			if watcher != nil {
				_ = watcher.Keep(cctx, token)
			}
			_ = h.Asker.Fail(cctx, token, &NoDecisionError{Reason: "asking failed", Cause: ErrTokenFailed})
		}
		return nil, fmt.Errorf("ask: %w", err)
	}
	if suspend {
		return nil, Suspend(rc, requests, token, deadline)
	}
	answer, err := h.Waiter.Wait(ctx, token)
	var nd *NoDecisionError
	if errors.As(err, &nd) {
		return NoDecision(requests, nd.Reason), nil
	}
	if err != nil {
		// ctx ended (shutdown) or the token is gone: the run stops with
		// the error and denies nothing, so it can be resumed elsewhere.
		return nil, fmt.Errorf("wait: %w", err)
	}
	return roundTrip(answer)
}
