package main

import (
	"context"

	"github.com/slackapprove/slackbot/runs"
	"github.com/slackapprove/slackbot/store"
)

// consumeResumes resumes runs whose tokens ended while no live process
// took them, until ctx ends: store's ResumeQueue.Consume hands each job to
// runs.Runs.ResumeQueued, which leaves a young job to the process that
// ended its token (runs.DirectFirst).
func (a *app) consumeResumes(ctx context.Context) {
	// Claims are tied to this process's heartbeat only once it runs.
	select {
	case <-a.tokens.Ready():
	case <-ctx.Done():
		return
	}
	opts := store.ConsumeOptions{Block: a.deps.ResumeBlock, ReclaimIdle: runs.ResumeReclaimIdle, Log: a.log}
	a.queue.Consume(ctx, a.owner, opts, func(ctx context.Context, j store.ResumeJob) {
		a.runs.ResumeQueued(ctx, runs.ResumeJob{ID: j.ID, Token: j.Token, RunID: j.RunID, TraceParent: j.TraceParent})
	})
}
