package storeadapter

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/slackapprove/slackbot/agentrunner"
	"github.com/slackapprove/slackbot/bot"
	"github.com/slackapprove/slackbot/store"
)

// Threads is bot.Threads over the store's thread history and lease.
type Threads struct{ s *store.Store }

// NewThreads returns the bot's Threads over s.
func NewThreads(s *store.Store) Threads { return Threads{s: s} }

func ref(th bot.ThreadRef) store.Thread {
	return store.Thread{Team: th.Team, Channel: th.Channel, TS: th.TS}
}

// History implements bot.Threads.
func (t Threads) History(ctx context.Context, th bot.ThreadRef) ([]agentrunner.Message, error) {
	msgs, err := t.s.LoadThreadHistory(ctx, ref(th))
	if errors.Is(err, store.ErrThreadNotFound) {
		return nil, fmt.Errorf("%w: %w", bot.ErrNoThreadHistory, err)
	}
	return msgs, err
}

// SaveHistory implements bot.Threads.
func (t Threads) SaveHistory(ctx context.Context, th bot.ThreadRef, msgs []agentrunner.Message) error {
	_, err := t.s.SaveThreadHistory(ctx, ref(th), msgs)
	return err
}

// Enter implements bot.Threads; the turn travels through the queue as JSON.
func (t Threads) Enter(ctx context.Context, th bot.ThreadRef, turn bot.Turn, lease time.Duration) (*bot.Turn, error) {
	b, err := json.Marshal(turn)
	if err != nil {
		return nil, fmt.Errorf("enter thread: %w", err)
	}
	next, err := t.s.EnterThread(ctx, ref(th), store.ThreadTurn{RunID: turn.RunID, Payload: b}, lease)
	if errors.Is(err, store.ErrThreadBusy) {
		return nil, fmt.Errorf("%w: %w", bot.ErrThreadBusy, err)
	}
	if err != nil || next == nil {
		return nil, err
	}
	return decodeTurn(next)
}

// Leave implements bot.Threads.
func (t Threads) Leave(ctx context.Context, th bot.ThreadRef, runID string, lease time.Duration) (*bot.Turn, error) {
	next, err := t.s.LeaveThread(ctx, ref(th), runID, lease)
	if err != nil || next == nil {
		return nil, err
	}
	return decodeTurn(next)
}

// Hold implements bot.Threads.
func (t Threads) Hold(ctx context.Context, th bot.ThreadRef, runID string, ttl time.Duration) (bool, error) {
	return t.s.HoldThread(ctx, ref(th), runID, ttl)
}

func decodeTurn(tt *store.ThreadTurn) (*bot.Turn, error) {
	var turn bot.Turn
	if err := json.Unmarshal(tt.Payload, &turn); err != nil {
		return nil, fmt.Errorf("queued turn %s: %w", tt.RunID, err)
	}
	turn.RunID = tt.RunID
	return &turn, nil
}
