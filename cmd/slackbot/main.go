// Command slackbot puts a person in the loop of an AI agent's risky tool
// calls through Slack. Subcommands: serve, dev, version, routes check FILE.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "slackbot:", err)
		os.Exit(1)
	}
}

// run does everything main does, so tests can start the real program.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	_ = ctx
	_ = stdout
	_ = stderr
	if len(args) == 0 {
		return fmt.Errorf("usage: slackbot serve|dev|version|routes check FILE")
	}
	return fmt.Errorf("unknown command %q", args[0])
}
