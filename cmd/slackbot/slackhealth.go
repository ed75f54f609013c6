package main

import (
	"context"
	"sync"
	"time"
)

// slackCheckEvery is how often watchSlack asks Slack's auth.test.
const slackCheckEvery = 30 * time.Second

// slackHealth remembers the outcome of the last auth.test, so that only a
// change is logged.
type slackHealth struct {
	mu    sync.Mutex
	known bool // a check has finished
	ok    bool
}

// set records the outcome of a check and reports whether it differs from
// the previous one (the first check always does).
func (h *slackHealth) set(ok bool) (changed bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	changed = !h.known || h.ok != ok
	h.known, h.ok = true, ok
	return changed
}

// watchSlack checks Slack's auth.test every slackCheckEvery until ctx
// ends. Its outcome goes to the slackbot_slack_up gauge and, when it
// changes, to the log; never to readiness (see ready).
func (a *app) watchSlack(ctx context.Context) {
	t := time.NewTicker(slackCheckEvery)
	defer t.Stop()
	for {
		a.checkSlack(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// checkSlack asks auth.test once, bounded by 10s, and records the outcome.
func (a *app) checkSlack(ctx context.Context) {
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	_, err := a.deps.Slack.AuthTestContext(cctx)
	cancel()
	if ctx.Err() != nil {
		return // shutting down: the outcome says nothing about Slack
	}
	ok := err == nil
	a.metrics.authTested(err)
	a.metrics.slackUp.Set(map[bool]float64{true: 1, false: 0}[ok])
	if !a.slackOK.set(ok) {
		return
	}
	if ok {
		a.log.InfoContext(ctx, "slack auth.test succeeds")
	} else {
		a.log.ErrorContext(ctx, "slack auth.test fails: cards cannot be posted or updated until Slack is back; readiness is unaffected", "err", err)
	}
}
