package main

import (
	"context"
	"errors"
	"net/http"
	"sync/atomic"
	"testing"
	"time"
)

// A part that fails (here the HTTP server) ends the lifecycle: start's
// channel closes, and Shutdown stops everything — the HTTP server first —
// and returns the part's error once every loop has returned.
func TestLifecycleStopsEverythingWhenAPartFails(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{})
	d := e.app.deps
	d.Owner = "replica-failing"
	a, err := newApp(t.Context(), d)
	if err != nil {
		t.Fatal(err)
	}
	broken := errors.New("http server: accept: too many open files")
	release := make(chan struct{})
	srv := &http.Server{}
	var httpStopped atomic.Bool
	srv.RegisterOnShutdown(func() { httpStopped.Store(true) })
	l, failed := start(a, srv, func() error { <-release; return broken }, nil)
	select {
	case <-a.tokens.Ready():
	case <-time.After(10 * time.Second):
		t.Fatal("the events loop never got ready")
	}
	select {
	case <-failed:
		t.Fatal("failed closed before any part failed")
	default:
	}
	close(release)
	select {
	case <-failed:
	case <-time.After(10 * time.Second):
		t.Fatal("failed did not close when the HTTP server failed")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- l.Shutdown(ctx) }()
	select {
	case err := <-done:
		if !errors.Is(err, broken) {
			t.Errorf("Shutdown: got %v, want the HTTP server's error", err)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("Shutdown did not return: a loop is still running")
	}
	if !httpStopped.Load() {
		t.Error("Shutdown did not shut the HTTP server down")
	}
}
