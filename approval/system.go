package approval

import (
	"context"
	"fmt"
	"strings"
)

// Decisions made without a person (a route's policy, a grant, no route, a
// card that could not be posted) and the ends a request reaches without
// one (an opening or an ask that failed, a cancellation, the deadline)
// all go through this file, so that each does what a person's decision
// does once recorded: the store audits it in the same step, the metric
// counts it, its card is brought up to date, and the run resumes if it
// ended the request (docs/ARCHITECTURE.md, "Ways in").

// decideBySystem records d, made without a person, on call d.CallID of r,
// and then does what follows a person's decision (afterDecide): the
// metric, and the run's resumption if d resolved r. Such a decision comes
// before any card showed the call (at opening, or because posting it
// failed), so there is no card to update; the ends of a whole request,
// which cards may show, go through endBySystem. Its errors are the store's
// Decide's.
func (s *Service) decideBySystem(ctx context.Context, r *Request, d Decision) (*Decided, error) {
	c := r.Call(d.CallID)
	if c == nil {
		return nil, fmt.Errorf("decide %s: %w", d.CallID, ErrNotFound)
	}
	res, err := s.store.Decide(ctx, r.Token, d)
	if err != nil {
		return res, err
	}
	s.afterDecide(ctx, r, c, Decider{}, d, res)
	return res, nil
}

// endBySystem makes end, a change that ends the whole request of token
// without a decision (Fail, Cancel), and then does what follows every
// end: the cards are updated (scheduled durably first, changeCards), the
// calls it ended are counted, and the run resumes.
func (s *Service) endBySystem(ctx context.Context, token string, end func() (*Request, error)) (*Request, error) {
	var after *Request
	if err := s.changeCards(ctx, token, func() (err error) {
		after, err = end()
		return err
	}); err != nil {
		return nil, err
	}
	s.ended(ctx, after)
	return after, nil
}

// ended counts the calls that r's end left without a decision and resumes
// r's run.
func (s *Service) ended(ctx context.Context, r *Request) {
	for i, c := range r.Calls {
		if c.DecidedBy == "" && c.Status != CallPending {
			s.countDecision(r, &r.Calls[i])
		}
	}
	s.resumeRun(ctx, r)
}

// Sweep expires every request past its deadline (the store's sweep, which
// every replica runs: each request expires once across them) and does
// for each what follows every end: its calls are counted and its run
// resumes here, with the timeout denial. Their cards are updated through
// the job the store queued with the expiry, in the same step (Expire), so
// they say so even if this process dies now. It returns the requests it
// expired.
func (s *Service) Sweep(ctx context.Context) ([]*Request, error) {
	expired, err := s.store.Sweep(ctx)
	for _, r := range expired {
		s.ended(ctx, r)
	}
	if err != nil {
		return expired, fmt.Errorf("expire requests: %w", err)
	}
	return expired, nil
}

// Policy returns the deferred-call handler that applies the routes'
// policies to a run's calls before they are asked (Policy), with every
// decision it makes audited and counted as a decision the store records
// is. signer, when not nil, signs the receipts of the calls it approves.
func (s *Service) Policy(signer Signer) *Policy {
	return &Policy{Routes: s.routes, Now: s.now, Log: s.log, Signer: signer, Record: s.recordPolicy}
}

// recordPolicy audits and counts a decision a policy made on a run's call:
// such a call is never part of a request (the run goes on with it at
// once), so nothing else records it.
func (s *Service) recordPolicy(ctx context.Context, d PolicyDecision) {
	if err := s.store.AuditPolicy(ctx, d); err != nil {
		s.log.ErrorContext(ctx, "audit a policy decision", "err", err, "call", d.Call.ToolCallID)
	}
	// Made at once, on a call no request holds: counted, not timed.
	s.metrics.Decision(strings.TrimPrefix(d.By, ByPolicyPrefix), d.Decision, -1)
}
