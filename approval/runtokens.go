package approval

import (
	"context"

	"github.com/slackapprove/slackbot/agentrunner"
)

// TokenStore is the waiting side of requests that RunTokens hands out
// from; package store's Tokens implements it with one subscription per
// process. It writes no request.
type TokenStore interface {
	// Watch and Keep are agentrunner.TokenWatcher's: Watch registers this
	// process as the waiter of a run that waits in place, Keep claims the
	// run of an ask that failed.
	Watch(ctx context.Context, token string) error
	Keep(ctx context.Context, token string) error
	// WaitEnded blocks until token's request ends, claims the resumption
	// of its run for this process and returns the ended request. Its
	// errors are agentrunner.TokenWaiter.Wait's, and ctx's when ctx ends
	// first.
	WaitEnded(ctx context.Context, token string) (*Request, error)
}

// RunTokens is the agentrunner.TokenWaiter (and TokenWatcher, so that a
// run is resumed at most once) of runs that ask through the Service: a run
// woken in place by the end of its request receives the results handed
// out here (Request.Results), with the receipts Signer signs, as every
// other door hands them out.
type RunTokens struct {
	TokenStore
	Signer Signer
}

var (
	_ agentrunner.TokenWaiter  = RunTokens{}
	_ agentrunner.TokenWatcher = RunTokens{}
)

// Wait implements agentrunner.TokenWaiter: the results of token's request
// once it ends, or a *agentrunner.NoDecisionError if it expired, was
// cancelled or failed.
func (t RunTokens) Wait(ctx context.Context, token string) (*agentrunner.DeferredToolResults, error) {
	r, err := t.WaitEnded(ctx, token)
	if err != nil {
		return nil, err
	}
	if nd := r.NoDecision(); nd != nil {
		return nil, nd
	}
	return r.Results(t.Signer), nil
}
