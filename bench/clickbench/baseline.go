package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/slackapprove/slackbot/bot"
)

// baselineKey is the key the baseline handler reads.
const baselineKey = "bench:baseline"

// serveBaseline is the baseline server, run as a child process of the
// bench (clickbench baseline-serve) so it is a process of its own like
// slackbot: a bare handler that verifies the Slack signature exactly as
// slackbot does (bot.VerifySlack) and does one Redis GET. It reads
// BENCH_REDIS_URL and BENCH_SECRET and prints its address.
func serveBaseline(stdout io.Writer) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	opt, err := redis.ParseURL(os.Getenv("BENCH_REDIS_URL"))
	if err != nil {
		return fmt.Errorf("BENCH_REDIS_URL: %w", err)
	}
	rdb := redis.NewClient(opt)
	defer rdb.Close()
	secret := os.Getenv("BENCH_SECRET")
	if secret == "" {
		return errors.New("BENCH_SECRET is not set")
	}
	get := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := rdb.Get(r.Context(), baselineKey).Err(); err != nil && !errors.Is(err, redis.Nil) {
			http.Error(w, "redis: "+err.Error(), http.StatusInternalServerError)
			return
		}
		w.WriteHeader(http.StatusOK)
	})
	mux := http.NewServeMux()
	mux.Handle("POST /slack/interactivity", bot.VerifySlack(secret, slog.New(slog.DiscardHandler), get))
	return serveUntilDone(ctx, stdout, "baseline", mux)
}

// serveUntilDone serves a baseline's handler, with /healthz added, on a
// free loopback port with slackbot's server settings until ctx ends, and
// prints where it listens as "<name> listening on http://…".
func serveUntilDone(ctx context.Context, stdout io.Writer, name string, mux *http.ServeMux) error {
	mux.Handle("GET /healthz", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	// The same server settings as slackbot's.
	srv := &http.Server{
		Handler:           mux,
		ReadHeaderTimeout: 5 * time.Second,
		ReadTimeout:       30 * time.Second,
		WriteTimeout:      90 * time.Second,
		IdleTimeout:       2 * time.Minute,
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	fmt.Fprintf(stdout, "%s listening on http://%s\n", name, ln.Addr())
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return srv.Shutdown(shutdown)
}
