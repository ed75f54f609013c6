package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/slackapprove/slackbot/runs"
	"github.com/slackapprove/slackbot/store"
)

// runState is runs.RunStore over the store's saved runs, resume claims
// and resume queue: runs knows nothing of Redis, and a saved run's origin
// is decoded here as store.MarshalOrigin wrote it.
type runState struct {
	s     *store.Store
	queue *store.ResumeQueue
}

var _ runs.RunStore = runState{}

// LoadRun implements runs.RunStore.
func (r runState) LoadRun(ctx context.Context, runID string) (*runs.Saved, error) {
	rs, err := r.s.LoadRun(ctx, runID)
	if errors.Is(err, store.ErrRunNotFound) {
		return nil, fmt.Errorf("%w: %w", runs.ErrRunNotFound, err)
	}
	if err != nil {
		return nil, err
	}
	saved := &runs.Saved{RunID: rs.RunID, Token: rs.Token, Messages: rs.Messages, Pending: rs.Pending}
	saved.Origin, saved.OriginErr = rs.RunOrigin()
	return saved, nil
}

// DeleteRun implements runs.RunStore.
func (r runState) DeleteRun(ctx context.Context, runID string) error {
	return r.s.DeleteRun(ctx, runID)
}

// ClaimDirect implements runs.RunStore.
func (r runState) ClaimDirect(ctx context.Context, token, claimer string) (bool, error) {
	return r.s.ClaimDirect(ctx, token, claimer)
}

// ClaimResume implements runs.RunStore: the claim lives as long as its
// owner's heartbeat (no ttl of its own).
func (r runState) ClaimResume(ctx context.Context, token, claimer string) (bool, error) {
	return r.s.ClaimResume(ctx, token, claimer, 0)
}

// ReleaseResume implements runs.RunStore.
func (r runState) ReleaseResume(ctx context.Context, token, claimer string) error {
	return r.s.ReleaseResume(ctx, token, claimer)
}

// FinishResume implements runs.RunStore.
func (r runState) FinishResume(ctx context.Context, token string) error {
	return r.s.FinishResume(ctx, token)
}

// AckResume implements runs.RunStore.
func (r runState) AckResume(ctx context.Context, id string) error { return r.queue.Ack(ctx, id) }

// runJobs is runs.Jobs over the store's job queue.
type runJobs struct{ q *store.JobQueue }

var _ runs.Jobs = runJobs{}

// Add implements runs.Jobs.
func (j runJobs) Add(ctx context.Context, kind runs.JobKind, token, data string) (string, error) {
	k := store.JobCardUpdate
	if kind == runs.JobAnswer {
		k = store.JobThreadAnswer
	}
	return j.q.Add(ctx, k, token, data)
}

// Ack implements runs.Jobs.
func (j runJobs) Ack(ctx context.Context, id string) error { return j.q.Ack(ctx, id) }
