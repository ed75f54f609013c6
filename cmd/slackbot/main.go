// Command slackbot puts a person in the loop of an AI agent's risky tool
// calls through Slack.
//
//	slackbot serve             run against Slack (configuration from the environment)
//	slackbot dev               run locally: embedded Redis, Slack emulator at /dev
//	slackbot routes check FILE validate a routing file and print its routes
//	slackbot hook AGENT        a coding agent's approval hook (claude-code, codex)
//	slackbot agent claude|resume  run Claude Code with deferred approvals; resume it
//	slackbot version           print the version
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"runtime/debug"
	"syscall"

	"github.com/slackapprove/slackbot/hook"
	"github.com/slackapprove/slackbot/routing"
)

// version is set at build time with -ldflags "-X main.version=…".
var version = ""

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Getenv, os.Stdin, os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "slackbot:", err)
		os.Exit(exitCode(err))
	}
}

// exitError is an error of run that ends the process with its own exit
// status rather than 1.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

// exitCode is the exit status for run's error err: an exitError's code,
// else 1.
func exitCode(err error) int {
	if ee, ok := errors.AsType[*exitError](err); ok {
		return ee.code
	}
	return 1
}

const usage = `usage:
  slackbot serve              run against Slack (configuration from the environment)
  slackbot dev                run locally with an embedded Redis and a Slack emulator at /dev
  slackbot routes check FILE  validate a routing file and print its routes
  slackbot hook claude-code   Claude Code's PreToolUse hook: ask slackbot, print the decision
  slackbot hook codex         Codex's PermissionRequest hook: ask slackbot, print the decision
  slackbot hook gemini        Gemini CLI's BeforeTool hook: ask slackbot, print the decision
  slackbot agent claude -- -p PROMPT [flags]  run Claude Code headless; a deferred call waits in Slack, no process does
  slackbot agent resume       resume the deferred Claude Code sessions whose calls were decided
  slackbot version            print the version`

// run does everything main does, so tests can start the real program:
// args are the command line without the program's name, getenv reads the
// environment (os.Getenv), stdin is what the hook command reads, and
// stdout and stderr are where output and logs go. Nothing below run reads
// the process environment.
func run(ctx context.Context, args []string, getenv func(string) string, stdin io.Reader, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		return errors.New(usage)
	}
	switch args[0] {
	case "serve":
		return serve(ctx, ModeServe, getenv, stdout, stderr)
	case "dev":
		return serve(ctx, ModeDev, getenv, stdout, stderr)
	case "version":
		fmt.Fprintln(stdout, "slackbot", buildVersion())
		return nil
	case "routes":
		if len(args) != 3 || args[1] != "check" {
			return errors.New(usage)
		}
		return routesCheck(args[2], stdout)
	case "hook":
		if err := hook.Run(ctx, args[1:], getenv, stdin, stdout, stderr); err != nil {
			return &exitError{code: hook.ExitBlock, err: err}
		}
		return nil
	case "agent":
		if err := hook.RunAgent(ctx, args[1:], getenv, stdout, stderr); err != nil {
			if ee, ok := errors.AsType[*hook.ExitError](err); ok {
				return &exitError{code: ee.Code, err: err}
			}
			return err
		}
		return nil
	case "-h", "--help", "help":
		fmt.Fprintln(stdout, usage)
		return nil
	default:
		return fmt.Errorf("unknown command %q\n%s", args[0], usage)
	}
}

func buildVersion() string {
	if version != "" {
		return version
	}
	if info, ok := debug.ReadBuildInfo(); ok {
		for _, s := range info.Settings {
			if s.Key == "vcs.revision" && len(s.Value) >= 12 {
				return "dev-" + s.Value[:12]
			}
		}
	}
	return "dev"
}

func routesCheck(path string, stdout io.Writer) error {
	routes, err := routing.LoadRoutes(path)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "%s: %d routes, default timeout %s\n\n", path, len(routes.Routes), routes.DefaultTimeout)
	return routes.Describe(stdout)
}

func newLogger(cfg *Config, w io.Writer) *slog.Logger {
	var level slog.Level
	_ = level.UnmarshalText([]byte(cfg.LogLevel))
	opts := &slog.HandlerOptions{Level: level}
	var h slog.Handler
	if cfg.LogFormat == "text" {
		h = slog.NewTextHandler(w, opts)
	} else {
		h = slog.NewJSONHandler(w, opts)
	}
	return slog.New(requestIDHandler{h})
}

// requestIDHandler adds the request id of the context to every record, so
// one request's log lines can be found together.
type requestIDHandler struct{ slog.Handler }

func (h requestIDHandler) Handle(ctx context.Context, r slog.Record) error {
	if id, ok := ctx.Value(requestIDKey{}).(string); ok {
		r.AddAttrs(slog.String("request_id", id))
	}
	return h.Handler.Handle(ctx, r)
}

func (h requestIDHandler) WithAttrs(a []slog.Attr) slog.Handler {
	return requestIDHandler{h.Handler.WithAttrs(a)}
}

func (h requestIDHandler) WithGroup(name string) slog.Handler {
	return requestIDHandler{h.Handler.WithGroup(name)}
}
