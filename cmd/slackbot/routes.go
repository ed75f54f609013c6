package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"log/slog"
	"net/http"
	"time"

	"github.com/slackapprove/slackbot/bot"
	"github.com/slackapprove/slackbot/httpapi"
)

// handler is slackbot's HTTP API, readable in one place.
func (a *app) handler() http.Handler {
	mux := http.NewServeMux()
	// Without a signing secret (Socket Mode only) nothing could be verified:
	// the Slack endpoints are not served at all.
	if secret := a.deps.SigningSecret; secret != "" {
		mux.Handle("POST /slack/interactivity", a.metrics.timed("interactivity",
			bot.VerifySlack(secret, a.log, a.bot.HandleInteraction())))
		mux.Handle("POST /slack/events", a.metrics.timed("events",
			bot.VerifySlack(secret, a.log, a.events.HandleEvents())))
	}
	if a.api != nil {
		// Timed apart from Slack's requests: a long poll or an MCP call
		// waits minutes for a person (metrics.go, apiBuckets).
		mux.Handle("/v1/", a.metrics.timedAPI(doorV1, httpapi.OperationOf, a.api))
		// MCP streamable HTTP: POST, GET and DELETE (the gateway is
		// stateless, so GET and DELETE answer 405).
		mux.Handle("/mcp", a.metrics.timedAPI(doorMCP, mcpOperation, a.gateway))
	}
	if a.stepup != nil {
		// Step-up and passkey pages, for people's browsers; the handler
		// answers only on PUBLIC_URL's host (stepup.Handler.ServeHTTP).
		mux.Handle("/step-up/", a.stepup)
		mux.Handle("/passkeys/", a.stepup)
	}
	// Tools verify receipts with these keys; a rotation shows within 5 min.
	mux.Handle("GET /.well-known/jwks.json", a.receipts.keys.Handler(300))
	mux.Handle("GET /healthz", handleHealthz())
	mux.Handle("GET /readyz", a.handleReadyz())
	mux.Handle("GET /metrics", a.metrics.handler())
	for pattern, h := range a.deps.Extra {
		mux.Handle(pattern, h)
	}
	h := withRequestID(a.log, mux)
	if a.deps.Tracer != nil {
		h = traceHandler(a.deps.Tracer, h)
	}
	return h
}

func handleHealthz() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
	})
}

func (a *app) handleReadyz() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), 3*time.Second)
		defer cancel()
		if err := a.ready(ctx); err != nil {
			a.log.WarnContext(ctx, "not ready", "err", err)
			writeJSON(w, http.StatusServiceUnavailable, map[string]string{"status": "unavailable", "error": err.Error()})
			return
		}
		writeJSON(w, http.StatusOK, map[string]string{"status": "ready"})
	})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

type requestIDKey struct{}

// withRequestID gives every request an id (the caller's X-Request-Id when
// it looks sane), returns it in the response, and logs the request's
// method, path, status and duration with it. Bodies, headers and query
// strings are never logged: they can carry secrets.
func withRequestID(log *slog.Logger, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := r.Header.Get("X-Request-Id")
		if len(id) == 0 || len(id) > 64 {
			var b [8]byte
			_, _ = rand.Read(b[:])
			id = hex.EncodeToString(b[:])
		}
		w.Header().Set("X-Request-Id", id)
		ctx := context.WithValue(r.Context(), requestIDKey{}, id)
		start := time.Now()
		sw := &statusWriter{ResponseWriter: w, status: http.StatusOK}
		r = r.WithContext(ctx)
		next.ServeHTTP(sw, r) // the mux records the route's pattern in r
		level := slog.LevelDebug
		if sw.status >= 400 {
			level = slog.LevelInfo
		}
		// The route's pattern, not the path: paths of the HTTP API carry
		// resume tokens, which must not reach the logs.
		path := r.Pattern
		if path == "" {
			path = "unmatched"
		}
		// Traced, the request's span is named by the pattern too.
		nameSpan(ctx, path)
		if !log.Enabled(ctx, level) {
			return // build no attributes for a line nobody reads (every click's)
		}
		log.Log(ctx, level, "http request", "method", r.Method, "route", path,
			"status", sw.status, "duration_ms", float64(time.Since(start).Microseconds())/1000)
	})
}
