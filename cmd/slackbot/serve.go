package main

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/slackapprove/slackbot/bot"
	"github.com/slackapprove/slackbot/internal/devui"
	"github.com/slackapprove/slackbot/store"
)

// shutdownBudget is how long serve waits for requests in flight after
// SIGTERM; deploy/ gives the process more than this plus its preStop.
const shutdownBudget = 25 * time.Second

// serve runs slackbot until ctx ends (SIGTERM, SIGINT) or a part of it
// fails, then shuts down gracefully (lifecycle.Shutdown): it stops
// accepting requests, finishes those in flight, and leaves waiting runs in
// Redis to be resumed by another replica.
func serve(ctx context.Context, mode Mode, getenv func(string) string, stdout, stderr io.Writer) error {
	cfg, err := loadConfig(getenv, mode)
	if err != nil {
		return err
	}
	if getenv("ADDR") == "" && mode == ModeDev {
		// The emulator signs clicks as any user: keep it off the network
		// unless asked.
		cfg.Addr = "127.0.0.1:8080"
	}
	log := newLogger(cfg, stderr)
	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", cfg.Addr, err)
	}
	defer ln.Close()
	if cfg.RedisURL == "" && mode == ModeServe {
		log.Warn("REDIS_URL is not set: using an EMBEDDED IN-MEMORY Redis. Every pending approval is lost when this process stops, and replicas do not share state. Set REDIS_URL in production.")
	}
	rdb, closeRedis, err := store.Open(ctx, cfg.RedisURL)
	if err != nil {
		return err
	}
	defer closeRedis()

	w, err := wire(ctx, cfg, mode, getenv, log, ln.Addr(), rdb)
	if err != nil {
		return err
	}
	defer w.close()
	a, err := newApp(ctx, w.deps)
	if err != nil {
		return err
	}
	srv := newHTTPServer(a, w.dev, ln.Addr(), log)
	l, failed := start(a, srv, func() error { return serveHTTP(srv, ln, cfg) }, socketMode(cfg, mode, a, log))
	announce(stdout, log, cfg, mode, ln.Addr(), w.deps.TeamID)

	select {
	case <-failed:
	case <-ctx.Done():
		log.Info("shutting down: finishing requests in flight; waiting runs stay in Redis for another replica")
	}
	shutdownCtx, cancel := context.WithTimeout(context.Background(), shutdownBudget)
	defer cancel()
	if err := l.Shutdown(shutdownCtx); err != nil && ctx.Err() == nil {
		return err
	}
	return nil
}

// newHTTPServer is the server of a's handler (behind the dev guard in dev
// mode). Its shutdown also ends the emulator's event streams and the HTTP
// API's long polls.
func newHTTPServer(a *app, dev *devWorkspace, addr net.Addr, log *slog.Logger) *http.Server {
	handler := a.handler()
	if dev != nil {
		handler = devui.Guard(addr, handler)
	}
	srv := &http.Server{
		Handler:           handler,
		ReadHeaderTimeout: 5 * time.Second,
		ReadTimeout:       30 * time.Second,
		WriteTimeout:      90 * time.Second, // long polls of the HTTP API
		IdleTimeout:       2 * time.Minute,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
		TLSConfig:         &tls.Config{MinVersion: tls.VersionTLS12},
	}
	if dev != nil {
		srv.RegisterOnShutdown(dev.close)
	}
	if a.api != nil {
		srv.RegisterOnShutdown(a.api.Close)
		// Calls waiting for a decision on /mcp end at once, their requests
		// left pending for the clients' retries on another replica.
		srv.RegisterOnShutdown(a.gateway.Close)
	}
	return srv
}

// serveHTTP serves srv on ln, over TLS when configured, until srv shuts
// down (then it returns nil).
func serveHTTP(srv *http.Server, ln net.Listener, cfg *Config) error {
	var err error
	if cfg.TLSCertFile != "" {
		err = srv.ServeTLS(ln, cfg.TLSCertFile, cfg.TLSKeyFile)
	} else {
		err = srv.Serve(ln)
	}
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return fmt.Errorf("http server: %w", err)
}

// socketMode is the Socket Mode connection when SLACK_APP_TOKEN is set (in
// serve mode), or nil. Events and clicks then arrive over a websocket and
// go through the same handlers as HTTP; the HTTP server still serves
// health, metrics and the API.
func socketMode(cfg *Config, mode Mode, a *app, log *slog.Logger) *bot.SocketMode {
	if cfg.SlackAppToken == "" || mode != ModeServe {
		return nil
	}
	log.Info("socket mode enabled: events and interactivity arrive over Slack's websocket")
	return &bot.SocketMode{
		Client: bot.NewSocketModeClient(cfg.SlackBotToken, cfg.SlackAppToken, cfg.SlackAPIURL, log),
		Bot:    a.bot, Events: a.events, Log: log,
	}
}

// announce tells the operator where slackbot listens.
func announce(stdout io.Writer, log *slog.Logger, cfg *Config, mode Mode, addr net.Addr, team string) {
	scheme := "http"
	if cfg.TLSCertFile != "" {
		scheme = "https"
	}
	log.Info("slackbot listening", "mode", string(mode), "addr", addr.String(), "version", buildVersion(), "team", team)
	if cfg.PublicURL != "" {
		log.Info("Slack request URLs", "events", cfg.PublicURL+"/slack/events", "interactivity", cfg.PublicURL+"/slack/interactivity")
	}
	fmt.Fprintf(stdout, "slackbot %s listening on %s://%s\n", mode, scheme, addr)
	if mode == ModeDev {
		fmt.Fprintf(stdout, "Slack emulator: %s/dev/\n", devURL(addr))
	}
}

// devURL is the address a browser on this machine can open.
func devURL(addr net.Addr) string {
	host, port, _ := net.SplitHostPort(addr.String())
	if host == "" || host == "::" || host == "0.0.0.0" {
		host = "localhost"
	}
	return "http://" + net.JoinHostPort(host, port)
}
