package store

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/slackapprove/slackbot/agentrunner"
	"github.com/slackapprove/slackbot/approval"
)

// RunState is what another process needs to resume a run that waits for a
// decision when the process that started it is gone.
type RunState struct {
	RunID string `json:"run_id"`
	// Token is the resume token the run waits on.
	Token string `json:"token"`
	// Messages is the history up to the pending calls
	// (agentrunner.RunContext.Messages).
	Messages []agentrunner.Message            `json:"messages"`
	Pending  agentrunner.DeferredToolRequests `json:"pending"`
	// Origin is the bot's own data about the run (requester, channel,
	// thread, ...), stored as given.
	Origin json.RawMessage `json:"origin,omitempty"`
	// ExpiresAt is the token's deadline: the state is kept until then
	// plus the store's Grace. Zero keeps it for Grace.
	ExpiresAt time.Time `json:"expires_at,omitzero"`
	SavedAt   time.Time `json:"saved_at"`
}

// SaveRun stores the state of a run that waits for a decision, replacing
// any earlier state of the run; a large state is stored compressed (see
// runstate_encode.go). Save it before the token can be resolved
// (before posting the messages), so the resume queue can always find it.
// It returns approval.ErrInvalid without a run id.
func (s *Store) SaveRun(ctx context.Context, rs RunState) error {
	if rs.RunID == "" {
		return fmt.Errorf("save run: %w: no run id", approval.ErrInvalid)
	}
	now := s.now()
	rs.SavedAt = now
	ttl := s.opts.Grace
	if !rs.ExpiresAt.IsZero() {
		ttl = max(rs.ExpiresAt.Sub(now), 0) + s.opts.Grace
	}
	b, err := encodeRunState(&rs)
	if err != nil {
		return fmt.Errorf("save run %s: %w", rs.RunID, err)
	}
	if err := s.rdb.Set(ctx, s.runKey(rs.RunID), b, ttl).Err(); err != nil {
		return fmt.Errorf("save run %s: %w", rs.RunID, err)
	}
	return nil
}

// LoadRun returns the saved state of a run, or ErrRunNotFound.
func (s *Store) LoadRun(ctx context.Context, runID string) (*RunState, error) {
	b, err := s.rdb.Get(ctx, s.runKey(runID)).Bytes()
	if isRedisNil(err) {
		return nil, fmt.Errorf("load run %s: %w", runID, ErrRunNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("load run %s: %w", runID, err)
	}
	rs, err := decodeRunState(b)
	if err != nil {
		return nil, fmt.Errorf("load run %s: %w", runID, err)
	}
	return rs, nil
}

// DeleteRun removes the saved state of a run; deleting a missing state is
// not an error.
func (s *Store) DeleteRun(ctx context.Context, runID string) error {
	if err := s.rdb.Del(ctx, s.runKey(runID)).Err(); err != nil {
		return fmt.Errorf("delete run %s: %w", runID, err)
	}
	return nil
}
