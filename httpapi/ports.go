package httpapi

import (
	"context"
	"time"

	"github.com/slackapprove/slackbot/agentrunner"
	"github.com/slackapprove/slackbot/approval"
)

// Approvals is the approval pipeline the API serves; *approval.Service
// implements it. Its errors are approval's *Error codes, each mapped to a
// status in errors.go.
type Approvals interface {
	// Open routes the calls, applies the routes' policies, records the
	// request and posts its cards (see approval.Service.Open): ENOROUTE
	// or EFORBIDDEN, with nothing recorded, when the request may not go
	// where it would; the Admit and Recorded hooks' errors.
	Open(ctx context.Context, o approval.Opening) (*approval.Request, error)
	// Get returns the request of token, or ENOTFOUND.
	Get(ctx context.Context, token string) (*approval.Request, error)
	// Answer records an API client's answers atomically (see
	// approval.Service.Answer and Decide): ENOTFOUND for another client's request,
	// the request's end (EEXPIRED, ECANCELLED, ERESOLVED, EFAILED),
	// EINVALID for answers that name no pending call under its kind or
	// edited arguments that are not an object or not the tool's, EPOLICY
	// for edited arguments the route's policy refuses, ECONFLICT for calls
	// already decided.
	Answer(ctx context.Context, token string, by approval.Decider, res *agentrunner.DeferredToolResults) (*approval.Decided, error)
	// Cancel ends the client's pending request: ENOTFOUND for another
	// client's, the request's end if it ended.
	Cancel(ctx context.Context, token string, by approval.Decider) (*approval.Request, error)
	// ReportOutcome records, once, what became of an approved call as the
	// request's own client reports it, and shows it on the call's card
	// (see approval.Service.ReportOutcome): ENOTFOUND for another
	// client's request, EINVALID for an unknown call or an outcome it
	// cannot take, ECONFLICT for a call not approved or an outcome
	// reported differently before.
	ReportOutcome(ctx context.Context, token string, by approval.Decider, callID string, o approval.Outcome) (*approval.Request, error)
	// Fail ends a request whose opening failed after it was recorded:
	// ENOTFOUND, or the request's end if it ended meanwhile.
	Fail(ctx context.Context, token, reason string) (*approval.Request, error)
}

// Store is what the API keeps beside the requests; *store.Store
// implements it.
type Store interface {
	Owners
	IdempotencyKeys
	Quotas
	Sessions
}

// Owners tells who owns a request without loading it.
type Owners interface {
	// Owner returns the API client that owns token, reading only that
	// field, so that another client's token, however large its record,
	// costs what an unknown one does. It returns approval.ErrNotFound if
	// the token is unknown, gone, or owned by no API client (a run started
	// in Slack).
	Owner(ctx context.Context, token string) (string, error)
}

// IdempotencyKeys keeps what each client's idempotency keys stand for.
// Keys are scoped per client. Errors mean the store could not be reached.
type IdempotencyKeys interface {
	// ClaimIdempotency makes client's key stand for token, created by the
	// request with fingerprint, for ttl; if the key is taken it changes
	// nothing and returns what the key stands for, with first false.
	ClaimIdempotency(ctx context.Context, client, key, token, fingerprint string, ttl time.Duration) (got approval.Idempotency, first bool, err error)
	// KeepIdempotency makes the key live as long as the token's record.
	KeepIdempotency(ctx context.Context, client, key, token string) error
	// ReleaseIdempotency forgets the key if it still stands for token, so
	// a request that created nothing can be retried with it.
	ReleaseIdempotency(ctx context.Context, client, key, token string) error
}

// Quotas counts each client's requests, across replicas.
type Quotas interface {
	// TakeQuota admits one more request (token, open until expires) for
	// client under q, or refuses with an *approval.RateLimitError (with
	// its RetryAfter); other errors mean the store could not be reached.
	TakeQuota(ctx context.Context, client, token string, expires time.Time, q approval.Quota) error
	// ReleaseQuota gives the slot back when the token is not created
	// after all.
	ReleaseQuota(ctx context.Context, client, token string) error
}

// Waiter blocks until a request ends; *store.Tokens implements it with
// one shared subscription per process, so long polls hold no Redis
// connection.
type Waiter interface {
	// Await returns the request once it ended, approval.ErrNotFound if it
	// is unknown, or ctx's error.
	Await(ctx context.Context, token string) (*approval.Request, error)
}
