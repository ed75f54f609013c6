package approval

import (
	"context"
	"time"

	"github.com/slackapprove/slackbot/agentrunner"
)

// TokenStore is the waiting side of requests that RunTokens hands out
// from; package store's Tokens implements it with one subscription per
// process.
type TokenStore interface {
	// Open, Resolve and Fail are agentrunner.Tokens'.
	Open(ctx context.Context, token string, deadline time.Time) error
	Resolve(ctx context.Context, token string, results *agentrunner.DeferredToolResults) error
	Fail(ctx context.Context, token string, nd *agentrunner.NoDecisionError) error
	// OpenSuspended and Forget are agentrunner.TokenSuspender's: a run
	// that hibernates holds no waiter.
	OpenSuspended(ctx context.Context, token string, deadline time.Time) error
	Forget(token string)
	// WaitEnded blocks until token's request ends, claims the resumption
	// of its run for this process and returns the ended request. Its
	// errors are agentrunner.Tokens.Wait's, and ctx's when ctx ends first.
	WaitEnded(ctx context.Context, token string) (*Request, error)
}

// RunTokens is the agentrunner.Tokens (and TokenSuspender, so that a run
// hibernates) of runs that ask through approval: a run woken in place by
// the end of its request receives the results handed out here
// (Request.Results), with the receipts Signer signs, as every other door
// hands them out.
type RunTokens struct {
	TokenStore
	Signer Signer
}

var (
	_ agentrunner.Tokens         = RunTokens{}
	_ agentrunner.TokenSuspender = RunTokens{}
)

// Wait implements agentrunner.Tokens: the results of token's request once
// it ends, or a *agentrunner.NoDecisionError if it expired, was cancelled
// or failed.
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
