// Command releasebuild measures what the release build (the one in
// deploy/Dockerfile) changes against a plain `go build`, on loopback only:
// it builds cmd/slackbot both ways into a temporary directory, prints
// their sizes and ELF sections, starts each N times as `slackbot dev`
// against a redis-server of its own (or the embedded Redis) and times
// exec → the first 200 from GET /healthz, and breaks the unstripped
// binary's symbols down by package and by module (the sizes go tool nm
// -size prints).
//
//	go run ./bench/releasebuild                 # 15 start-ups of each, loopback redis-server
//	go run ./bench/releasebuild -n 30 -redis embedded
//
// The release build's flags are read from deploy/Dockerfile's `go build`
// line, not repeated here, so the figures are those of the image that
// ships. Start-ups alternate between the two binaries, so a noisy
// neighbour slows both alike. It needs the Go toolchain and, unless
// -redis embedded, redis-server on PATH; run it from the repository root.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdout)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "releasebuild:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string, out io.Writer) error {
	fs := flag.NewFlagSet("releasebuild", flag.ContinueOnError)
	n := fs.Int("n", 15, "start-ups of each build")
	redisMode := fs.String("redis", "loopback", "loopback (a redis-server of its own) or embedded (slackbot dev's in-memory Redis)")
	dockerfile := fs.String("dockerfile", "deploy/Dockerfile", "the Dockerfile whose go build is the release build")
	top := fs.Int("top", 15, "packages and modules to list")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *n < 1 {
		return fmt.Errorf("-n must be at least 1")
	}
	if *redisMode != "loopback" && *redisMode != "embedded" {
		return fmt.Errorf("-redis must be loopback or embedded (got %q)", *redisMode)
	}
	release, err := dockerBuild(*dockerfile)
	if err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "releasebuild-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)

	builds := []*build{
		{name: "plain `go build` (baseline)", env: nil, flags: nil},
		{name: "release (deploy/Dockerfile)", env: release.env, flags: release.flags},
	}
	for i, b := range builds {
		b.path = fmt.Sprintf("%s/slackbot-%d", dir, i)
		if err := b.compile(ctx); err != nil {
			return err
		}
	}

	var redisURL string
	if *redisMode == "loopback" {
		srv, err := startRedis(ctx)
		if err != nil {
			return err
		}
		defer srv.Stop()
		redisURL = srv.URL(0)
	}
	for range *n {
		for _, b := range builds {
			s, err := startup(ctx, b.path, redisURL)
			if err != nil {
				return fmt.Errorf("%s: %w", b.name, err)
			}
			b.startups = append(b.startups, s)
		}
	}

	if err := printBuilds(out, builds, *n, *redisMode); err != nil {
		return err
	}
	return printSymbols(out, builds[0].path, *top)
}
