package approval

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// ClientStore keeps, across replicas, what an API client's requests use
// beside the requests themselves: the client's quota and its idempotency
// keys. Package store implements it (*store.Store); errors other than a
// quota's *RateLimitError mean the store could not be reached.
type ClientStore interface {
	// TakeQuota admits one more request (token, open until expires) for
	// client under q, or refuses with an *RateLimitError.
	TakeQuota(ctx context.Context, client, token string, expires time.Time, q Quota) error
	// ReleaseQuota gives the slot back when the token is not created
	// after all.
	ReleaseQuota(ctx context.Context, client, token string) error
	// KeepIdempotency makes the key live as long as the token's record.
	KeepIdempotency(ctx context.Context, client, key, token string) error
	// ReleaseIdempotency forgets the key if it still stands for token.
	ReleaseIdempotency(ctx context.Context, client, key, token string) error
}

// Opener opens requests and fails those whose opening failed after they
// were recorded; *Service implements it.
type Opener interface {
	Open(ctx context.Context, o Opening) (*Request, error)
	Fail(ctx context.Context, token, reason string) (*Request, error)
}

// OpenForClient opens o for the API client o.Origin.Client, as every door
// of API clients (the HTTP API, the MCP gateway) does: the client's quota
// q is taken last before the request is recorded (o.Admit), when nothing
// else can refuse it, and the idempotency key, when not empty, is made to
// live as long as the record (o.Recorded); o's own Admit and Recorded are
// replaced. The request is accepted: opening goes on for up to a minute
// even if ctx ends, so a retry finds every card posted. When opening
// fails, what it left is undone: the request failed if it was recorded,
// else the quota given back; the idempotency key released. It returns
// Open's error, joined with those of undoing.
func OpenForClient(ctx context.Context, svc Opener, st ClientStore, q Quota, o Opening, idempotencyKey string) error {
	client, token := o.Origin.Client, o.Token
	admitted, recorded := false, false
	o.Admit = func(ctx context.Context, r *Request) error {
		if err := st.TakeQuota(ctx, client, token, r.ExpiresAt, q); err != nil {
			return err
		}
		admitted = true
		return nil
	}
	o.Recorded = func(ctx context.Context, r *Request) error {
		recorded = true
		if idempotencyKey != "" {
			return st.KeepIdempotency(ctx, client, idempotencyKey, token)
		}
		return nil
	}
	octx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
	defer cancel()
	_, err := svc.Open(octx, o)
	if err == nil {
		return nil
	}
	// Clean up on a context of its own: octx may be what ran out.
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	switch {
	case recorded:
		if _, ferr := svc.Fail(cctx, token, "slackbot could not ask for a decision"); ferr != nil && !ended(ferr) {
			err = errors.Join(err, fmt.Errorf("end the token: %w", ferr))
		}
	case admitted:
		if rerr := st.ReleaseQuota(cctx, client, token); rerr != nil {
			err = errors.Join(err, rerr)
		}
	}
	if idempotencyKey != "" {
		if rerr := st.ReleaseIdempotency(cctx, client, idempotencyKey, token); rerr != nil {
			err = errors.Join(err, rerr)
		}
	}
	return err
}

// ended reports whether err is a request's end (it ended meanwhile).
func ended(err error) bool {
	switch ErrorCode(err) {
	case ERESOLVED, EEXPIRED, ECANCELLED, EFAILED:
		return true
	}
	return false
}
