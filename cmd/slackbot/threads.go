package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/slackapprove/slackbot/agentrunner"
	"github.com/slackapprove/slackbot/runs"
	"github.com/slackapprove/slackbot/store"
)

// threads is runs.Threads over the store's thread history and lease: runs
// knows nothing of Redis, and a queued turn travels through the store as
// JSON (its origin under the keys the previous version wrote).
type threads struct{ s *store.Store }

func threadOf(th runs.ThreadRef) store.Thread {
	return store.Thread{Team: th.Team, Channel: th.Channel, TS: th.TS}
}

// History implements runs.Threads.
func (t threads) History(ctx context.Context, th runs.ThreadRef) ([]agentrunner.Message, error) {
	msgs, err := t.s.Threads().History(ctx, threadOf(th))
	if errors.Is(err, store.ErrThreadNotFound) {
		return nil, fmt.Errorf("%w: %w", runs.ErrNoThreadHistory, err)
	}
	return msgs, err
}

// SaveHistory implements runs.Threads.
func (t threads) SaveHistory(ctx context.Context, th runs.ThreadRef, msgs []agentrunner.Message) error {
	_, err := t.s.Threads().SaveHistory(ctx, threadOf(th), msgs)
	return err
}

// Enter implements runs.Threads.
func (t threads) Enter(ctx context.Context, th runs.ThreadRef, turn runs.Turn, lease time.Duration) (*runs.Turn, error) {
	b, err := encodeTurn(turn)
	if err != nil {
		return nil, fmt.Errorf("enter thread: %w", err)
	}
	next, err := t.s.Threads().Enter(ctx, threadOf(th), store.ThreadTurn{RunID: turn.RunID, Payload: b}, lease)
	if errors.Is(err, store.ErrThreadBusy) {
		return nil, fmt.Errorf("%w: %w", runs.ErrThreadBusy, err)
	}
	if err != nil || next == nil {
		return nil, err
	}
	return decodeTurn(next)
}

// Leave implements runs.Threads.
func (t threads) Leave(ctx context.Context, th runs.ThreadRef, runID string, lease time.Duration) (*runs.Turn, error) {
	next, err := t.s.Threads().Leave(ctx, threadOf(th), runID, lease)
	if err != nil || next == nil {
		return nil, err
	}
	return decodeTurn(next)
}

// Hold implements runs.Threads.
func (t threads) Hold(ctx context.Context, th runs.ThreadRef, runID string, ttl time.Duration) (bool, error) {
	return t.s.Threads().Hold(ctx, threadOf(th), runID, ttl)
}

// queuedTurn is a turn as the thread queue keeps it: its origin encoded
// as store.MarshalOrigin does (the outer Origin shadows the Turn's).
type queuedTurn struct {
	runs.Turn
	Origin json.RawMessage `json:"origin"`
}

func encodeTurn(turn runs.Turn) ([]byte, error) {
	o, err := store.MarshalOrigin(turn.Origin)
	if err != nil {
		return nil, err
	}
	return json.Marshal(queuedTurn{Turn: turn, Origin: o})
}

func decodeTurn(tt *store.ThreadTurn) (*runs.Turn, error) {
	var q queuedTurn
	if err := json.Unmarshal(tt.Payload, &q); err != nil {
		return nil, fmt.Errorf("queued turn %s: %w", tt.RunID, err)
	}
	turn := q.Turn
	o, err := store.UnmarshalOrigin(q.Origin)
	if err != nil {
		return nil, fmt.Errorf("queued turn %s: %w", tt.RunID, err)
	}
	turn.Origin, turn.RunID = o, tt.RunID
	return &turn, nil
}
