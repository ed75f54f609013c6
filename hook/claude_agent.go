package hook

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"

	"github.com/slackapprove/slackbot/client"
)

// This file is `slackbot agent claude -- -p PROMPT [flags]`: it runs
// Claude Code headless with the hook deferring (DeferEnv), and when the
// run stops at a deferred call it registers the session with the call's
// request (/v1/agent-sessions) for a resumer, says where the card is and
// exits: no process waits for the decision. See docs/ARCHITECTURE.md,
// "Deferred coding-agent sessions".

// AgentUsage is the agent command's usage.
const AgentUsage = `usage:
  slackbot agent claude [--resumer NAME] [--claude PATH] -- -p PROMPT [flags]
  slackbot agent resume [--resumer NAME] [--claude PATH] [--root DIR] [--once] [--lease 15m]

flags are the ones a session may be resumed with: --model, --fallback-model,
--permission-mode, --allowedTools, --disallowedTools, --max-turns,
--append-system-prompt, --effort, each with its value`

// maxClaudeOutput bounds what the agent commands read of claude's stdout.
const maxClaudeOutput = 16 << 20

// ExitError is the error of an agent command whose Claude Code run ended
// with a non-zero exit status: the command should exit with Code.
type ExitError struct {
	Code int
	Err  error
}

func (e *ExitError) Error() string { return e.Err.Error() }
func (e *ExitError) Unwrap() error { return e.Err }

// RunAgent runs `slackbot agent claude|resume ...`, with args the
// arguments after "agent", getenv reading SLACKBOT_URL, SLACKBOT_API_KEY,
// SLACKBOT_RESUMER and SLACKBOT_CLAUDE. The Claude Code runs it starts
// inherit the process's environment, as a shell's children do, with
// DeferEnv set.
func RunAgent(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		return errors.New(AgentUsage)
	}
	switch args[0] {
	case "claude":
		return runClaude(ctx, args[1:], getenv, stdout, stderr)
	case "resume":
		return runResumer(ctx, args[1:], getenv, stdout, stderr)
	}
	return fmt.Errorf("agent: unknown command %q\n%s", args[0], AgentUsage)
}

// agentFlags are the flags both agent commands take.
type agentFlags struct {
	resumer, claude string
}

func (f *agentFlags) register(fs *flag.FlagSet, getenv func(string) string) {
	host, _ := os.Hostname()
	resumer := getenv("SLACKBOT_RESUMER")
	if resumer == "" {
		resumer = host
	}
	claude := getenv("SLACKBOT_CLAUDE")
	if claude == "" {
		claude = "claude"
	}
	fs.StringVar(&f.resumer, "resumer", resumer, "the resumer that resumes deferred sessions (SLACKBOT_RESUMER, else the host name)")
	fs.StringVar(&f.claude, "claude", claude, "the claude program (SLACKBOT_CLAUDE, else claude on PATH)")
}

// claudeResult is what `claude -p --output-format json` prints, as far
// as the agent commands read it (Claude Code 2.1.332).
type claudeResult struct {
	Type            string `json:"type"`
	Subtype         string `json:"subtype"`
	IsError         bool   `json:"is_error"`
	Result          string `json:"result"`
	SessionID       string `json:"session_id"`
	StopReason      string `json:"stop_reason"`
	TerminalReason  string `json:"terminal_reason"`
	DeferredToolUse *struct {
		ID   string `json:"id"`
		Name string `json:"name"`
	} `json:"deferred_tool_use"`
}

// deferred reports whether the run stopped at a deferred call.
func (r *claudeResult) deferred() bool {
	return r.StopReason == "tool_deferred" && r.DeferredToolUse != nil && r.DeferredToolUse.ID != ""
}

// runClaude is `slackbot agent claude`.
func runClaude(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("slackbot agent claude", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	var f agentFlags
	f.register(fs, getenv)
	if err := fs.Parse(args); err != nil {
		return fmt.Errorf("agent claude: %w\n%s", err, AgentUsage)
	}
	rest := fs.Args()
	if len(rest) < 2 || rest[0] != "-p" {
		return fmt.Errorf("agent claude: want -- -p PROMPT [flags] after its own flags\n%s", AgentUsage)
	}
	prompt, flags := rest[1], rest[2:]
	if err := client.CheckResumeArgs(flags); err != nil {
		return fmt.Errorf("agent claude: %w (the run must be resumable with the same flags)", err)
	}
	if err := client.CheckResumer(f.resumer); err != nil {
		return fmt.Errorf("agent claude: --resumer: %w", err)
	}
	api, err := newAPIClient(getenv("SLACKBOT_URL"), getenv("SLACKBOT_API_KEY"))
	if err != nil {
		return fmt.Errorf("agent claude: %w", err)
	}
	cwd, err := os.Getwd()
	if err != nil {
		return fmt.Errorf("agent claude: %w", err)
	}
	res, out, err := runClaudeOnce(ctx, f.claude, cwd, append([]string{"-p", prompt}, flags...), nil, stderr)
	_, _ = stdout.Write(out)
	if err != nil || !res.deferred() {
		return err
	}
	s, err := register(ctx, api, res, cwd, flags, f.resumer)
	if err != nil {
		return fmt.Errorf("agent claude: Claude Code deferred %s (%s) but the session could not be registered, so no resumer will resume it: %w; resume it by hand with: claude -p --resume %s",
			res.DeferredToolUse.Name, res.DeferredToolUse.ID, err, res.SessionID)
	}
	fmt.Fprintf(stderr, "slackbot: Claude Code deferred %s until someone decides on its card in Slack (request %s); resumer %q resumes session %s in %s once they do.\n",
		res.DeferredToolUse.Name, s.Token, s.Resumer, s.SessionID, s.Cwd)
	return nil
}

// runClaudeOnce runs claude with args and --output-format json in dir,
// the hook deferring (once per run: a directory of its own, RunDirEnv),
// env added to its environment, and reads its result. It returns claude's stdout
// as printed, and an *ExitError when claude failed.
func runClaudeOnce(ctx context.Context, claude, dir string, args, env []string, stderr io.Writer) (*claudeResult, []byte, error) {
	run, err := newRunDir()
	if err != nil {
		return nil, nil, fmt.Errorf("agent claude: the run's directory: %w", err)
	}
	defer os.RemoveAll(run)
	cmd := exec.CommandContext(ctx, claude, append(args, "--output-format", "json")...)
	cmd.Dir = dir
	cmd.Env = append(append(cmd.Environ(), DeferEnv+"=1", runDirVar(run)), env...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &limitedWriter{w: &out, n: maxClaudeOutput}, stderr
	err = cmd.Run()
	var res claudeResult
	if jerr := json.Unmarshal(out.Bytes(), &res); jerr != nil && err == nil {
		err = fmt.Errorf("claude printed no result JSON: %w", jerr)
	}
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		return &res, out.Bytes(), &ExitError{Code: exit.ExitCode(), Err: fmt.Errorf("claude exited with status %d", exit.ExitCode())}
	}
	if err != nil {
		return &res, out.Bytes(), fmt.Errorf("run claude: %w", err)
	}
	return &res, out.Bytes(), nil
}

// register registers the deferred session of res with its request.
func register(ctx context.Context, api *client.Client, res *claudeResult, cwd string, flags []string, resumer string) (*client.Session, error) {
	ctx, cancel := context.WithTimeout(ctx, createTimeout)
	defer cancel()
	return api.RegisterSession(ctx, client.SessionRegistration{
		Agent: "claude-code", IdempotencyKey: deferKey(res.SessionID, res.DeferredToolUse.ID),
		CallID: res.DeferredToolUse.ID, SessionID: res.SessionID, Cwd: cwd, Args: flags, Resumer: resumer,
	})
}

// limitedWriter keeps at most n bytes and drops the rest.
type limitedWriter struct {
	w io.Writer
	n int
}

func (l *limitedWriter) Write(p []byte) (int, error) {
	if l.n <= 0 {
		return len(p), nil
	}
	k := min(len(p), l.n)
	l.n -= k
	if _, err := l.w.Write(p[:k]); err != nil {
		return 0, err
	}
	return len(p), nil
}

// shortLine is s on one line, at most n bytes.
func shortLine(s string, n int) string {
	return shorten(strings.Join(strings.Fields(s), " "), n)
}
