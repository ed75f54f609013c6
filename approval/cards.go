package approval

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// cardLease bounds how long one process may hold a card while it updates
// it.
const cardLease = 30 * time.Second

// UpdateCard brings the card of one call up to date: under the card's
// lease (so concurrent updates from any processes end with the latest
// state on the card) it reads the request afresh and has the Poster render
// it. A card whose message was never recorded (its poster died between
// posting and recording) is recorded once the Poster finds it.
func (s *Service) UpdateCard(ctx context.Context, token, callID string) error {
	release, err := s.store.Lock(ctx, "card:"+token+":"+callID, cardLease)
	if err != nil {
		return fmt.Errorf("update card: %w", err)
	}
	defer release()
	r, err := s.store.Get(ctx, token)
	if err != nil {
		return fmt.Errorf("update card: %w", err)
	}
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
	if c.Message.TS == "" && ref.TS != "" {
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
