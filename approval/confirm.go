package approval

import (
	"context"
	"strings"
)

// Confirmed is a change (a decision, an API answer, a cancellation, a
// failure) that the store held while Redis's replicas did not confirm it
// (EUNCONFIRMED), and applied once they did.
type Confirmed struct {
	// Decision is the decision on one call it was (Store.Decide): its
	// CallID, By, Action and Grant, and in CardJob the update of the call's
	// card the store scheduled with it (and whose lease it took, if
	// Decided.CardLeased). For a change of the whole request CallID is
	// empty and CardJob names the update of every card it scheduled.
	Decision Decision
	// Decided is what applying it did; Request is the request after it.
	Decided *Decided
}

// Confirmer applies the changes the store holds unconfirmed once Redis's
// replicas confirm them. Package store implements it.
type Confirmer interface {
	// Confirm asks the replicas to confirm the changes held unconfirmed
	// and applies those they confirmed; it returns what it applied, and
	// nothing while the replicas still do not confirm.
	Confirm(ctx context.Context) ([]Confirmed, error)
}

// Confirm applies the changes held while Redis's replicas did not confirm
// them (REDIS_WAIT_REPLICAS), once they do, and does what follows each as
// if it had been confirmed at once: a resolved request's run resumes, a
// grant is saved, the cards are updated. Until then nothing acted on them.
// Every process may call it periodically: each change is applied once.
// Without a Confirmer it does nothing.
func (s *Service) Confirm(ctx context.Context) error {
	if s.confirmer == nil {
		return nil
	}
	done, err := s.confirmer.Confirm(ctx)
	for _, c := range done {
		r, d := c.Decided.Request, c.Decision
		s.log.InfoContext(ctx, "an unconfirmed change was confirmed and applied", "call", d.CallID, "by", d.By, "state", r.State)
		if d.CallID == "" {
			if r.State != StatePending {
				s.resumeRun(ctx, r)
			}
			s.updateCardsLater(ctx, r.Token, d.CardJob)
			continue
		}
		s.afterDecide(ctx, r, c.Decided.Call, personOf(d.By), d, c.Decided)
	}
	return err
}

// personOf is who decided, for what follows a decision: the person by,
// unless a policy, a grant or slackbot decided.
func personOf(by string) Decider {
	if by == BySlackbot || strings.HasPrefix(by, ByPolicyPrefix) || strings.HasPrefix(by, ByGrantPrefix) {
		return Decider{}
	}
	return Decider{User: by}
}
