package approval

import (
	"context"
	"errors"
	"fmt"

	"github.com/slackapprove/slackbot/agentrunner"
)

// UpdateCard brings the card of one call up to date: under the card's
// lease (so concurrent updates from any processes end with the latest
// state on the card) it reads the request afresh and has the Poster render
// it. A card whose message was never recorded (its poster died between
// posting and recording) is recorded once the Poster finds it.
func (s *Service) UpdateCard(ctx context.Context, token, callID string) error {
	return s.updateCard(ctx, token, callID, agentrunner.NewToken(), "", nil)
}

// updateCard updates the card of callID under the lease of holder. held
// is the request as read under that lease when the caller holds it already
// (the decision took it); nil: the lease is taken and the request read
// now, in one step. job, when set, is the durable update of this card the
// store scheduled with the decision: it is dropped with the lease's
// release once the card is up to date, and left for any replica's job
// consumer if the update failed.
func (s *Service) updateCard(ctx context.Context, token, callID, holder, job string, held *Request) error {
	r := held
	if r == nil {
		var err error
		if r, err = s.store.LockCard(ctx, token, callID, holder); err != nil {
			return fmt.Errorf("update card: %w", err)
		}
	}
	err := s.updateCall(ctx, r, callID)
	if err != nil {
		job = "" // left to the job queue
	}
	if rerr := s.store.ReleaseCard(ctx, token, callID, holder, job); rerr != nil {
		s.log.WarnContext(ctx, "release a card's lease", "err", rerr)
	}
	return err
}

func (s *Service) updateCall(ctx context.Context, r *Request, callID string) error {
	c := r.Call(callID)
	if c == nil {
		return fmt.Errorf("update card %s: %w", callID, ErrNotFound)
	}
	return s.update(ctx, r, c)
}

func (s *Service) update(ctx context.Context, r *Request, c *Call) error {
	ref, err := s.poster.Update(ctx, r, c)
	s.homeChanged(ctx, r, c)
	if err != nil {
		return err
	}
	if c.Message.ID == "" && ref.ID != "" {
		if err := s.store.SetMessage(ctx, r.Token, c.ID, ref); err != nil {
			s.log.WarnContext(ctx, "record a located card", "err", err)
		}
	}
	return nil
}

// UpdateCards brings every card of a request up to date, e.g. after an
// API answer decided several calls at once.
func (s *Service) UpdateCards(ctx context.Context, token string) error {
	r, err := s.store.Get(ctx, token)
	if err != nil {
		return fmt.Errorf("update cards: %w", err)
	}
	var errs []error
	for _, c := range r.Calls {
		errs = append(errs, s.UpdateCard(ctx, token, c.ID))
	}
	return errors.Join(errs...)
}

// changeCards makes change, a change of the whole request (an API
// answer, a cancellation, a failure), with the update of its cards
// scheduled durably first: if this process dies after the change, any
// replica's job consumer updates the cards once the job is due. After
// the change the cards are updated at once, after the caller's answer,
// and the job dropped once they are.
func (s *Service) changeCards(ctx context.Context, token string, change func() error) error {
	job := agentrunner.NewToken()
	if err := s.store.ScheduleCards(ctx, token, job); err != nil {
		return fmt.Errorf("schedule the cards' update: %w", err)
	}
	if err := change(); err != nil {
		if rerr := s.store.ReleaseCard(ctx, token, "", "", job); rerr != nil {
			s.log.WarnContext(ctx, "drop a card update job", "err", rerr)
		}
		return err
	}
	s.updateCardsLater(ctx, token, job)
	return nil
}

// updateCardsLater updates every card of token after the caller's
// answer and then drops job, the durable update scheduled for them.
func (s *Service) updateCardsLater(ctx context.Context, token, job string) {
	s.later(ctx, "update cards", func(ctx context.Context) error {
		if err := s.UpdateCards(ctx, token); err != nil {
			return err // the job does it again
		}
		return s.store.ReleaseCard(ctx, token, "", "", job)
	})
}

// Expire brings the cards of a request that ended without a decision
// (expired, cancelled, failed) up to date: no buttons, and why. The store
// ends a request at its deadline atomically and queues this durably
// (its job queue's card.update), so it happens even if the process that
// swept the request dies.
func (s *Service) Expire(ctx context.Context, token string) error {
	return s.UpdateCards(ctx, token)
}

// SetOutcome records what a decided call's tool did and shows it on the
// call's card.
func (s *Service) SetOutcome(ctx context.Context, token, callID string, o Outcome) error {
	if err := s.RecordOutcome(ctx, token, callID, o); err != nil {
		return err
	}
	return s.UpdateCard(ctx, token, callID)
}

// RecordOutcome records what a decided call's tool did, on the call and in
// the audit stream, without showing it: for a caller that has the card
// updated durably later (a run's follow-ups).
func (s *Service) RecordOutcome(ctx context.Context, token, callID string, o Outcome) error {
	return s.store.SetOutcome(ctx, token, callID, o)
}
