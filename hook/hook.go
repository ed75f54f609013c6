// Package hook is `slackbot hook claude-code|codex|gemini`: a coding agent's hook
// command that asks slackbot, through /v1 (package client), whether the
// agent may run a tool call, waits for people to decide in Slack, and
// prints the decision in the agent's hook output format (agent.go). It
// fails closed: when no decision can be had, for whatever reason, it
// prints a denial.
//
// Once it knows the agent, Run always prints a decision and returns nil
// (the command exits 0), because the agents read the hook's JSON only on
// exit 0 and treat most other exit codes as a "non-blocking error" that
// lets the normal permission flow go on (Claude Code, https://code.claude.com/docs/en/hooks "Other exit codes"; Codex,
// https://developers.openai.com/codex/hooks: a failed PermissionRequest
// hook falls back to Codex's own approval prompt, and a failed PreToolUse
// hook lets the call run, codex.go; Gemini CLI: exit 1 is a warning and
// the call runs, gemini.go). When it has no JSON to give (no agent it
// knows, an event of Codex's it cannot answer, or stdout cannot be
// written) Run returns an error, and the command must exit 2 with the
// reason on stderr: exit 2 is the one status all three agents read as
// "block the call" (Gemini CLI with stderr as the reason), and 1 would
// let it go on.
//
// The package imports only client and agentrunner of slackbot's, so a Go
// program may embed the hook as it is.
package hook

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/slackapprove/slackbot/agentrunner"
	"github.com/slackapprove/slackbot/client"
)

// Limits of the hook.
const (
	// maxHookInput bounds the hook event read from stdin.
	maxHookInput = 1 << 20
	// DefaultTimeout, the wait without --timeout, is below Claude Code's
	// and Codex's default command-hook timeout (600 s), so the hook's own
	// denial arrives before the agent kills it (Gemini CLI's is shorter:
	// gemini.go).
	DefaultTimeout = 9 * time.Minute
	// maxHookTimeout is the longest request slackbot accepts (7 days).
	maxHookTimeout = 7 * 24 * time.Hour
)

// Usage is the hook command's usage.
const Usage = `usage: slackbot hook claude-code|codex|gemini [--timeout 9m] [--defer]

Reads the agent's hook event (Claude Code PreToolUse or PermissionRequest,
Codex PreToolUse or PermissionRequest, Gemini CLI BeforeTool) on stdin, asks
slackbot (SLACKBOT_URL, SLACKBOT_API_KEY) for a decision, waits at most
--timeout, and prints the agent's hook decision JSON`

// ExitBlock is the exit status of a hook command for which Run returned
// an error: the one status Claude Code reads as "block the call".
const ExitBlock = 2

// Run runs `slackbot hook AGENT [flags]`, with args the arguments after
// "hook": it reads the agent's event from stdin, asks slackbot at
// SLACKBOT_URL with the key SLACKBOT_API_KEY (read through getenv), and
// writes the agent's decision JSON to stdout and a denial's reason to
// stderr. It returns an error only when it wrote no decision (an agent it
// does not know, an event the agent has no decision JSON for, or stdout
// that cannot be written); the command should then exit with ExitBlock.
func Run(ctx context.Context, args []string, getenv func(string) string, stdin io.Reader, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		return errors.New(Usage)
	}
	agent, ok := hookAgents[args[0]]
	if !ok {
		return fmt.Errorf("hook: unknown agent %q (want claude-code, codex or gemini)\n%s", args[0], Usage)
	}
	d, ev := decideHook(ctx, agent, args[1:], getenv, stdin)
	out := agent.output(ev, d)
	if out == nil {
		// No JSON this agent would read as a decision for this event:
		// exit 2 with the reason on stderr, which Codex reads as a
		// denial of the call (codex.go).
		return fmt.Errorf("hook: %s", d.reason)
	}
	if !d.allow {
		fmt.Fprintln(stderr, "slackbot hook:", d.reason)
	}
	enc := json.NewEncoder(stdout)
	enc.SetEscapeHTML(false) // the agents show the reason as text
	if err := enc.Encode(out); err != nil {
		return fmt.Errorf("hook: write the decision: %w", err)
	}
	return nil
}

// decideHook is the hook's decision for agent, given the command's flags
// (args), the environment and the event on stdin: a denial for anything
// that keeps it from asking slackbot, else slackbot's answer. It returns
// the event as far as it was read (nil if it was not), so the decision
// is printed in answer to the event the agent sent.
func decideHook(ctx context.Context, agent *hookAgent, args []string, getenv func(string) string, stdin io.Reader) (hookDecision, *hookEvent) {
	fs := flag.NewFlagSet("slackbot hook "+agent.name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	timeout := fs.Duration("timeout", agent.defaultWait(), "how long to wait for a decision")
	deferFlag := fs.Bool("defer", false, "answer Claude Code's defer instead of waiting (claude_defer.go)")
	if err := fs.Parse(args); err != nil {
		return denyf("slackbot hook %s: %v (usage: slackbot hook %s [--timeout 9m])", agent.name, err, agent.name), nil
	}
	if fs.NArg() > 0 {
		return denyf("slackbot hook %s: unexpected argument %q", agent.name, fs.Arg(0)), nil
	}
	if *timeout < time.Second || *timeout > maxHookTimeout {
		return denyf("slackbot hook %s: --timeout %s: want between 1s and %s", agent.name, *timeout, maxHookTimeout), nil
	}
	ev, err := readHookEvent(stdin, agent)
	if err != nil {
		return denyf("slackbot hook %s: %v", agent.name, err), ev
	}
	ev.localDiff = agent.localDiff(ev, getenv)
	api, err := newAPIClient(getenv("SLACKBOT_URL"), getenv("SLACKBOT_API_KEY"))
	if err != nil {
		return denyf("slackbot hook %s is not configured: %v", agent.name, err), ev
	}
	// Claude Code's PermissionRequest has no defer: it is asked and waited
	// for, as without --defer.
	if (*deferFlag || getenv(DeferEnv) == "1") && (agent.name != "claude-code" || !isClaudePermissionRequest(ev)) {
		explicit := false
		fs.Visit(func(f *flag.Flag) { explicit = explicit || f.Name == "timeout" })
		return deferCall(ctx, api, agent, ev, deferOptions{timeout: *timeout, explicit: explicit, wait: *timeout, callback: getenv("SLACKBOT_CALLBACK_URL"),
			resumeToken: getenv(ResumeTokenEnv), resumeCall: getenv(ResumeCallEnv)}, getenv), ev
	}
	d := ask(ctx, api, agent, ev, *timeout)
	if agent.vet != nil {
		d = agent.vet(ev, d)
	}
	return d, ev
}

// hookDecision is what the hook tells the agent.
type hookDecision struct {
	allow  bool
	reason string
	// edited holds the whole input to run instead, when an approver
	// changed the arguments.
	edited json.RawMessage
	// deferred: nobody decided yet, and the agent stops the run until a
	// resume asks again (Claude Code's "defer"; reason says where).
	deferred bool
	// rule is the always-allow rule an approver gave the agent, as the
	// agent offered it (claude_permission.go).
	rule json.RawMessage
}

func denyf(format string, args ...any) hookDecision {
	return hookDecision{reason: fmt.Sprintf(format, args...)}
}

// noDecision is the denial of a call nobody decided, worded as every
// other way in words it.
func noDecision(reason string) hookDecision {
	return hookDecision{reason: agentrunner.NoDecisionPrefix + reason}
}

// readHookEvent reads and checks the hook event on stdin: at most
// maxHookInput bytes, a JSON object of one of the agent's events with a
// tool name and a tool_input object the API accepts
// (agentrunner.CheckArgs: nested no deeper than it allows, read one way
// by every parser). A refused event is returned with the error when it
// was a JSON object, so the refusal answers the event that was sent.
func readHookEvent(stdin io.Reader, agent *hookAgent) (*hookEvent, error) {
	if stdin == nil {
		return nil, errors.New("no hook event on stdin")
	}
	b, err := io.ReadAll(io.LimitReader(stdin, maxHookInput+1))
	if err != nil {
		return nil, fmt.Errorf("read the hook event on stdin: %w", err)
	}
	if len(b) > maxHookInput {
		return nil, fmt.Errorf("the hook event on stdin is larger than %d bytes", maxHookInput)
	}
	var ev hookEvent
	if err := json.Unmarshal(b, &ev); err != nil {
		return nil, fmt.Errorf("the hook event on stdin is not a JSON object: %v", err)
	}
	switch {
	case !slices.Contains(agent.events, ev.HookEventName):
		return &ev, fmt.Errorf("hook_event_name %q: this hook handles %s events of %s", ev.HookEventName, strings.Join(agent.events, " and "), agent.product)
	case ev.ToolName == "":
		return &ev, errors.New("the hook event has no tool_name")
	case !isJSONObject(ev.ToolInput):
		return &ev, errors.New("the hook event's tool_input is not a JSON object")
	}
	if err := agentrunner.CheckArgs(ev.ToolInput); err != nil {
		return &ev, fmt.Errorf("tool_input: %w", err)
	}
	return &ev, nil
}

func isJSONObject(b json.RawMessage) bool {
	s := strings.TrimSpace(string(b))
	return strings.HasPrefix(s, "{")
}

// ask opens one approval for the event's tool call and waits for its end,
// at most timeout: then, or when ctx ends (the agent interrupts the
// hook), the request is cancelled, so the card says nobody needs to
// decide any more.
func ask(ctx context.Context, api *client.Client, agent *hookAgent, ev *hookEvent, timeout time.Duration) hookDecision {
	wctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	callID := ev.ToolUseID
	if callID == "" {
		callID = "hook_" + agentrunner.NewToken()
	}
	// The create outlives an interruption by createGrace: slackbot posts
	// the card before it answers, and only its answer tells which request
	// to cancel.
	cctx, cancelCreate := context.WithCancel(context.WithoutCancel(wctx))
	defer cancelCreate()
	stop := context.AfterFunc(wctx, func() { time.AfterFunc(createGrace, cancelCreate) })
	defer stop()
	st, err := create(cctx, api, agent.request(ev, callID))
	if err != nil {
		if wctx.Err() != nil {
			return ended(ctx, timeout)
		}
		return unreachable(api, err)
	}
	if wctx.Err() != nil {
		cancelQuietly(api, st.Token)
		return ended(ctx, timeout)
	}
	return await(ctx, wctx, api, agent, ev, st, callID, timeout)
}

// await waits within wctx (ask's, bounded by timeout; ctx is the hook's)
// for the end of the request st of the event's call callID and answers
// it: when the wait ends first, or slackbot stops answering, the request
// is cancelled and the call denied.
func await(ctx, wctx context.Context, api *client.Client, agent *hookAgent, ev *hookEvent, st *client.Approval, callID string, timeout time.Duration) hookDecision {
	token, failures := st.Token, 0
	for st.Pending() {
		next, err := wait(wctx, api, token)
		switch {
		case err == nil:
			st, failures = next, 0
			continue
		case wctx.Err() != nil:
			cancelQuietly(api, token)
			return ended(ctx, timeout)
		case client.IsTransient(err) && failures < maxPollFailures:
			// A long wait outlives blips of the network or a replica
			// restarting; the request waits in Redis meanwhile.
			failures++
			select {
			case <-wctx.Done():
			case <-time.After(time.Duration(failures) * time.Second):
			}
			continue
		}
		cancelQuietly(api, token)
		return unreachable(api, err)
	}
	d := agent.decision(ev, st, callID)
	if agent.offersRules != nil && agent.offersRules(ev) {
		d = withRule(d, st, callID, ev)
	}
	return d
}

const (
	// maxPollFailures bounds the failed long polls in a row that the
	// wait tolerates before it denies.
	maxPollFailures = 3
	// createGrace is how long the create may go on after the wait ended.
	createGrace = 5 * time.Second
)

// ended is the denial when the wait ends before a decision: interrupted
// (ctx) or out of time.
func ended(ctx context.Context, timeout time.Duration) hookDecision {
	if ctx.Err() != nil {
		return noDecision("the hook was interrupted before anyone decided")
	}
	return noDecision(fmt.Sprintf("nobody decided within %s (slackbot hook --timeout)", timeout))
}
