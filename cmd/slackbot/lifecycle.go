package main

import (
	"context"
	"net/http"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/slackapprove/slackbot/bot"
)

// lifecycle is every long-running part of one slackbot process, started
// by start under one errgroup and stopped by Shutdown: the HTTP server,
// Socket Mode, and the app's loops (the events subscriber and sweeper, the
// resume-queue and job-queue consumers, the watch on Slack's health, the
// confirmer of held changes and the callback delivery loop).
type lifecycle struct {
	app *app
	// srv is the HTTP server; nil when the caller serves the app's
	// handler itself (tests).
	srv *http.Server
	g   *errgroup.Group
	// stopSocketMode and stopLoops end Socket Mode and the loops;
	// socketModeDone is closed once Socket Mode has returned.
	stopSocketMode, stopLoops context.CancelFunc
	socketModeDone            chan struct{}
}

// start starts a's loops, Socket Mode (sm, when not nil) and the HTTP
// server (serveHTTP serves srv, when not nil; it returns nil once srv
// shut down). The channel it returns is closed when a part failed: the
// HTTP server, or Socket Mode with an error that ends it for good. The
// loops log their failures and do not stop the process.
func start(a *app, srv *http.Server, serveHTTP func() error, sm *bot.SocketMode) (*lifecycle, <-chan struct{}) {
	g, failed := errgroup.WithContext(context.Background())
	l := &lifecycle{app: a, srv: srv, g: g, socketModeDone: make(chan struct{})}
	var loops, socketMode context.Context
	loops, l.stopLoops = context.WithCancel(context.Background())
	socketMode, l.stopSocketMode = context.WithCancel(context.Background())
	for _, loop := range a.loops() {
		g.Go(func() error { loop(loops); return nil })
	}
	if sm == nil {
		close(l.socketModeDone)
	} else {
		g.Go(func() error {
			defer close(l.socketModeDone)
			return sm.Run(socketMode)
		})
	}
	if srv != nil {
		g.Go(serveHTTP)
	}
	return l, failed.Done()
}

// Shutdown stops every part in order, ctx bounding how long working runs
// get to finish: first no more clicks and events are taken (the HTTP
// server, then Socket Mode, which finishes the requests it has in
// flight), then the app winds down (app.shutdown: waits end so their runs
// are handed to other replicas, working runs finish until ctx ends, then
// everything is cancelled and the Slack updates clicks started are waited
// for), then the loops stop, and last the traces are flushed. It returns
// the error of the part that failed, if one did.
func (l *lifecycle) Shutdown(ctx context.Context) error {
	if l.srv != nil {
		if err := l.srv.Shutdown(ctx); err != nil {
			l.app.log.Error("http shutdown", "err", err)
		}
	}
	l.stopSocketMode()
	<-l.socketModeDone
	l.app.shutdown(ctx)
	l.stopLoops()
	err := l.g.Wait()
	if flush := l.app.deps.FlushTraces; flush != nil {
		// Last, so the spans of the shutdown itself are exported too; with
		// a budget of its own, as ctx may be spent.
		fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		if ferr := flush(fctx); ferr != nil {
			l.app.log.Warn("flush traces", "err", ferr)
		}
	}
	return err
}

// loops are the app's background loops, each run until its context ends.
func (a *app) loops() []func(context.Context) {
	loops := []func(context.Context){a.runEvents, a.consumeResumes, a.consumeJobs, a.watchSlack, a.confirmChanges}
	if a.callbacks != nil {
		loops = append(loops, a.deliverCallbacks)
	}
	return loops
}

// runEvents runs the notification subscriber, the heartbeat and the
// sweeper (store.Tokens.Run).
func (a *app) runEvents(ctx context.Context) {
	if err := a.tokens.Run(ctx); err != nil {
		a.log.ErrorContext(ctx, "events loop ended", "err", err)
	}
}

// deliverCallbacks delivers the HTTP API's callbacks.
func (a *app) deliverCallbacks(ctx context.Context) {
	if err := a.callbacks.Run(ctx); err != nil && ctx.Err() == nil {
		a.log.ErrorContext(ctx, "callback delivery loop ended", "err", err)
	}
}

// confirmEvery is how often confirmChanges asks Redis's replicas about
// the changes held unconfirmed.
const confirmEvery = time.Second

// confirmChanges applies the changes held while Redis's replicas did not
// confirm them (REDIS_WAIT_REPLICAS), once they do, and what follows each
// (approval.Service.Confirm). Every replica runs it; each change is
// applied once. With nothing held it costs one read a second.
func (a *app) confirmChanges(ctx context.Context) {
	t := time.NewTicker(confirmEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if err := a.svc.Confirm(ctx); err != nil && ctx.Err() == nil {
				a.log.ErrorContext(ctx, "apply confirmed changes", "err", err)
			}
		}
	}
}
