package main

// The real Claude Code (internal/agentcli) against a fake Anthropic API
// (internal/fakemodel) and the whole app: its PreToolUse hook is the
// built slackbot binary, people decide on the cards in the fake Slack
// with signed clicks, and the model sees what happened in the
// tool_result Claude Code sends back.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/slackapprove/slackbot/agentrunner"
	"github.com/slackapprove/slackbot/approval"
	"github.com/slackapprove/slackbot/bot"
	"github.com/slackapprove/slackbot/internal/agentcli"
	"github.com/slackapprove/slackbot/internal/fakemodel"
	"github.com/slackapprove/slackbot/internal/slackfake"
	"github.com/slackapprove/slackbot/internal/slacktest"
)

// claudeRun is one project Claude Code works in, wired to a fake model
// and to e's slackbot through its PreToolUse hook.
type claudeRun struct {
	claude string
	bin    string // the slackbot binary
	dir    string // the project, claude's working directory
	env    []string
}

// newClaudeRun prepares a project whose settings run `slackbot hook
// claude-code hookArgs...` as the PreToolUse hook of every tool, with a
// fresh HOME and config dir, the model at model, and no traffic but the
// model's (CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC and the variables
// that switch off the updater, telemetry and error reports).
func newClaudeRun(t *testing.T, e *env, model *fakemodel.Anthropic, hookArgs ...string) *claudeRun {
	t.Helper()
	claude := agentcli.Path(t, "claude")
	bin := slackbotBinary(t)
	home, dir := t.TempDir(), t.TempDir()
	command := strings.Join(append([]string{bin, "hook", "claude-code"}, hookArgs...), " ")
	settings := map[string]any{"hooks": map[string]any{"PreToolUse": []any{map[string]any{
		"matcher": "*", "hooks": []any{map[string]any{"type": "command", "command": command, "timeout": 600}},
	}}}}
	b, err := json.Marshal(settings)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(dir, ".claude"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, ".claude", "settings.json"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	return &claudeRun{claude: claude, bin: bin, dir: dir, env: []string{
		"HOME=" + home, "PATH=" + os.Getenv("PATH"),
		"CLAUDE_CONFIG_DIR=" + filepath.Join(home, ".claude"),
		"ANTHROPIC_BASE_URL=" + model.URL, "ANTHROPIC_API_KEY=sk-ant-fake",
		"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1", "DISABLE_AUTOUPDATER=1",
		"DISABLE_TELEMETRY=1", "DISABLE_ERROR_REPORTING=1", "DISABLE_BUG_COMMAND=1",
		"SLACKBOT_URL=" + e.srv.URL, "SLACKBOT_API_KEY=" + keyBilling,
	}}
}

// claudeResult is what `claude -p --output-format json` printed.
type claudeResult struct {
	Result          string `json:"result"`
	SessionID       string `json:"session_id"`
	StopReason      string `json:"stop_reason"`
	IsError         bool   `json:"is_error"`
	DeferredToolUse *struct {
		ID    string          `json:"id"`
		Name  string          `json:"name"`
		Input json.RawMessage `json:"input"`
	} `json:"deferred_tool_use"`
}

// start runs claude with args in the project in the background.
func (c *claudeRun) start(t *testing.T, args ...string) <-chan claudeOutcome {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), c.claude, append(args, "--output-format", "json")...)
	// The agent's hook commands inherit its output: once it is killed,
	// a hook still waiting must not keep Wait from returning.
	cmd.WaitDelay = 5 * time.Second
	cmd.Env, cmd.Dir = c.env, c.dir
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatalf("start claude: %v", err)
	}
	done := make(chan claudeOutcome, 1)
	go func() {
		err := cmd.Wait()
		o := claudeOutcome{err: err, stdout: stdout.String(), stderr: stderr.String()}
		o.jsonErr = json.Unmarshal(stdout.Bytes(), &o.res)
		done <- o
	}()
	return done
}

type claudeOutcome struct {
	res            claudeResult
	err, jsonErr   error
	stdout, stderr string
}

// wait waits for a claude run to end and returns what it printed.
func (c *claudeRun) wait(t *testing.T, done <-chan claudeOutcome) claudeResult {
	t.Helper()
	o := <-done
	if o.err != nil || o.jsonErr != nil {
		t.Fatalf("claude: %v (output: %v)\nstdout: %s\nstderr: %s", o.err, o.jsonErr, o.stdout, o.stderr)
	}
	return o.res
}

// waitClaudeCard waits for a live card showing every one of shows, posted
// while the claude run done is blocked in its hook; a run that ends first
// fails the test with what claude printed. Claude Code starting on a
// loaded machine takes a while: the wait is bounded generously.
func (e *env) waitClaudeCard(t *testing.T, before int, done <-chan claudeOutcome, shows ...string) slackfake.Message {
	t.Helper()
	var card slackfake.Message
	waitUntil(t, 3*time.Minute, "a card showing "+strings.Join(shows, ", "), func() bool {
		select {
		case o := <-done:
			t.Fatalf("claude ended before its card was posted: %v\nstdout: %s\nstderr: %s", o.err, o.stdout, o.stderr)
		default:
		}
		cards := e.cards()
		for _, m := range cards[min(before, len(cards)):] {
			if _, live := slacktest.Button(m, bot.ActionIDApprove); live && showsAll(m, shows) {
				card = m
				return true
			}
		}
		return false
	})
	return card
}

// TestClaudeCodeHookApproved: the real Claude Code asks to run a Bash
// command, its PreToolUse hook puts a card in Slack, alice approves with
// a signed click, the command runs (its file exists) and the model gets
// its output back as a successful tool_result.
func TestClaudeCodeHookApproved(t *testing.T) {
	t.Parallel()
	e := newHookEnv(t)
	model := fakemodel.NewAnthropic(t,
		fakemodel.ToolTurn("toolu_approved", "Bash", map[string]any{
			"command": "echo approved-by-alice > out.txt && cat out.txt", "description": "Write the marker file"}),
		fakemodel.TextTurn("Wrote out.txt."))
	c := newClaudeRun(t, e, model)
	before := len(e.cards())
	done := c.start(t, "-p", "write the marker file")
	card := e.waitClaudeCard(t, before, done, "Bash", "echo approved-by-alice", "Claude Code (")
	e.clickCard(t, alice, card, bot.ActionIDApprove)
	res := c.wait(t, done)
	if res.Result != "Wrote out.txt." {
		t.Errorf("claude's result %q, want %q", res.Result, "Wrote out.txt.")
	}
	got, err := os.ReadFile(filepath.Join(c.dir, "out.txt"))
	if err != nil || string(got) != "approved-by-alice\n" {
		t.Errorf("out.txt: %q, %v; want the approved command to have written it", got, err)
	}
	tr, ok := model.ToolResults()["toolu_approved"]
	if !ok || tr.IsError || !strings.Contains(tr.ResultText(), "approved-by-alice") {
		t.Errorf("the model's tool_result: %+v (sent: %v), want the command's output", tr, ok)
	}
}

// agent runs `slackbot agent args...` (the built binary) in the project,
// with the project's environment, and returns what it printed and its
// exit status.
func (c *claudeRun) agent(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	stdout, stderr, code = c.runAgent(t.Context(), args...)
	if code == -1 {
		t.Fatalf("slackbot agent %v: %s", args, stderr)
	}
	return stdout, stderr, code
}

// runAgent runs `slackbot agent args...` as agent does, from any
// goroutine: a command that could not run has exit status -1.
func (c *claudeRun) runAgent(ctx context.Context, args ...string) (stdout, stderr string, code int) {
	cmd := exec.CommandContext(ctx, c.bin, append([]string{"agent"}, args...)...)
	// The agent's hook commands inherit its output: once it is killed,
	// a hook still waiting must not keep Wait from returning.
	cmd.WaitDelay = 5 * time.Second
	cmd.Env, cmd.Dir = c.env, c.dir
	var out, errs bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errs
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		code = exit.ExitCode()
	case err != nil:
		code = -1
		errs.WriteString(err.Error())
	}
	return out.String(), errs.String(), code
}

// runDeferred runs the prompt under `slackbot agent claude` for resumer,
// which must end with Claude Code's deferral registered, and returns
// claude's result and the request's token, as the command reported it.
func (c *claudeRun) runDeferred(t *testing.T, resumer, prompt string) (claudeResult, string) {
	t.Helper()
	stdout, stderr, code := c.agent(t, "claude", "--resumer", resumer, "--claude", c.claude, "--", "-p", prompt, "--max-turns", "5")
	var res claudeResult
	if err := json.Unmarshal([]byte(stdout), &res); code != 0 || err != nil {
		t.Fatalf("slackbot agent claude: exit %d (%v)\nstdout: %s\nstderr: %s", code, err, stdout, stderr)
	}
	if res.StopReason != "tool_deferred" || res.DeferredToolUse == nil || !strings.Contains(stderr, "resumes session "+res.SessionID) {
		t.Fatalf("slackbot agent claude: want a deferred call registered for a resumer\nstdout: %s\nstderr: %s", stdout, stderr)
	}
	_, after, _ := strings.Cut(stderr, "(request ")
	token, _, _ := strings.Cut(after, ")")
	return res, token
}

// resume runs one pass of resumer (`slackbot agent resume --once`) and
// returns the lines it printed, one per session it resumed or reported.
func (c *claudeRun) resume(t *testing.T, resumer string) []string {
	t.Helper()
	stdout, stderr, code := c.agent(t, "resume", "--once", "--resumer", resumer, "--claude", c.claude, "--root", c.dir)
	if code != 0 {
		t.Fatalf("slackbot agent resume: exit %d\nstdout: %s\nstderr: %s", code, stdout, stderr)
	}
	return strings.FieldsFunc(stdout, func(r rune) bool { return r == '\n' })
}

// waitEnded waits until the request of card ended (the decision is
// recorded), so a resumer's pass finds it ready.
func (e *env) waitEnded(t *testing.T, token string) {
	t.Helper()
	waitUntil(t, 30*time.Second, "the request "+token+" to end", func() bool {
		rec, err := e.app.store.Get(t.Context(), token)
		return err == nil && rec.State != approval.StatePending
	})
}

// count is how many lines a file holds: how often a command that appends
// one ran.
func count(t *testing.T, path string) int {
	t.Helper()
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return 0
	}
	if err != nil {
		t.Fatal(err)
	}
	return strings.Count(string(b), "\n")
}

// TestClaudeCodeDefer: `slackbot agent claude` runs Claude Code with its
// hook deferring, so the run exits at the call that needs a person and
// no process waits; a resumer resumes it once the card is decided, and
// the model sees the outcome in its tool_result.
func TestClaudeCodeDefer(t *testing.T) {
	t.Parallel()
	e := newHookEnv(t)

	t.Run("approved: resumed once, the tool ran once", func(t *testing.T) {
		t.Parallel()
		model := fakemodel.NewAnthropic(t,
			fakemodel.ToolTurn("toolu_defer_ok", "Bash", map[string]any{"command": "echo ran >> count.txt", "description": "Count a run"}),
			fakemodel.TextTurn("Counted."))
		c := newClaudeRun(t, e, model)
		before := len(e.cards())
		res, _ := c.runDeferred(t, "laptop", "count a run")
		if res.DeferredToolUse.ID != "toolu_defer_ok" || count(t, filepath.Join(c.dir, "count.txt")) != 0 {
			t.Fatalf("deferred %+v; the command ran %d times before anyone decided", res.DeferredToolUse, count(t, filepath.Join(c.dir, "count.txt")))
		}
		card := e.waitLiveCard(t, before, "Bash", "Count a run")
		if lines := c.resume(t, "laptop"); len(lines) != 0 {
			t.Errorf("a resumer before the decision: %q, want nothing to do", lines)
		}
		token, _ := e.requestOfCard(t, card)
		e.clickCard(t, alice, card, bot.ActionIDApprove)
		e.waitEnded(t, token)
		lines := c.resume(t, "laptop")
		if len(lines) != 1 || !strings.Contains(lines[0], "resumed; the run ended (end_turn): Counted.") {
			t.Errorf("the resumer printed %q, want the session resumed to its end", lines)
		}
		if lines := c.resume(t, "laptop"); len(lines) != 0 {
			t.Errorf("a second resumer: %q, want nothing to do", lines)
		}
		if n := count(t, filepath.Join(c.dir, "count.txt")); n != 1 {
			t.Errorf("the command ran %d times, want exactly once", n)
		}
		tr, ok := model.ToolResults()["toolu_defer_ok"]
		if !ok || tr.IsError {
			t.Errorf("the model's tool_result: %+v (sent: %v), want the command's success", tr, ok)
		}
	})

	t.Run("denied with a reason the model sees", func(t *testing.T) {
		t.Parallel()
		model := fakemodel.NewAnthropic(t,
			fakemodel.ToolTurn("toolu_defer_no", "Bash", map[string]any{"command": "echo ran >> denied.txt", "description": "Try a denied run"}),
			fakemodel.TextTurn("Understood."))
		c := newClaudeRun(t, e, model)
		before := len(e.cards())
		c.runDeferred(t, "laptop", "try a denied run")
		card := e.waitLiveCard(t, before, "Bash", "Try a denied run")
		token, _ := e.requestOfCard(t, card)
		e.denyWithReason(t, bob, card, "Not on a Friday.")
		e.waitEnded(t, token)
		if lines := c.resume(t, "laptop"); len(lines) != 1 || !strings.Contains(lines[0], "resumed") {
			t.Errorf("the resumer printed %q, want the session resumed", lines)
		}
		if n := count(t, filepath.Join(c.dir, "denied.txt")); n != 0 {
			t.Errorf("the denied command ran %d times", n)
		}
		tr, ok := model.ToolResults()["toolu_defer_no"]
		if !ok || !tr.IsError || !strings.Contains(tr.ResultText(), "Not on a Friday.") {
			t.Errorf("the model's tool_result: %q (error %v, sent %v), want the denial with bob's reason", tr.ResultText(), tr.IsError, ok)
		}
	})

	t.Run("two calls in one reply: one deferred, the other waited for, neither lost", func(t *testing.T) {
		t.Parallel()
		// Claude Code 2.1.332 would defer both calls of such a reply and
		// resume only the last, the first gone unanswered. The fake
		// streams the reply as a model does (the first call's hook fires
		// before the second call arrives).
		model := fakemodel.NewAnthropic(t,
			fakemodel.Turn{Pause: 2 * time.Second, ToolUses: []fakemodel.ToolUse{
				{ID: "toolu_pair_1", Name: "Bash", Input: map[string]any{"command": "echo one >> pair.txt", "description": "First of a pair"}},
				{ID: "toolu_pair_2", Name: "Bash", Input: map[string]any{"command": "echo two >> pair.txt", "description": "Second of a pair"}},
			}},
			fakemodel.TextTurn("Both ran."))
		c := newClaudeRun(t, e, model)
		before := len(e.cards())
		ran := make(chan []string, 1)
		go func() {
			stdout, stderr, code := c.runAgent(t.Context(), "claude", "--resumer", "pair", "--claude", c.claude, "--", "-p", "run the pair", "--max-turns", "5")
			ran <- []string{stdout, stderr, fmt.Sprint(code)}
		}()
		waitUntil(t, 3*time.Minute, "the pair's two cards", func() bool {
			select {
			case out := <-ran:
				t.Fatalf("slackbot agent claude ended before the second card: exit %s\nstdout: %s\nstderr: %s", out[2], out[0], out[1])
			default:
			}
			return len(e.cards()) >= before+2
		})
		second := e.waitLiveCard(t, before, "Bash", "Second of a pair")
		first := e.waitLiveCard(t, before, "Bash", "First of a pair")
		e.clickCard(t, alice, second, bot.ActionIDApprove)
		var out []string
		select {
		case out = <-ran:
		case <-time.After(3 * time.Minute):
			t.Fatal("slackbot agent claude did not end once the waited-for call was approved")
		}
		var res claudeResult
		if err := json.Unmarshal([]byte(out[0]), &res); err != nil || out[2] != "0" || res.StopReason != "tool_deferred" || res.DeferredToolUse == nil || res.DeferredToolUse.ID != "toolu_pair_1" {
			t.Fatalf("slackbot agent claude: exit %s, want the first call deferred\nstdout: %s\nstderr: %s", out[2], out[0], out[1])
		}
		if got, _ := os.ReadFile(filepath.Join(c.dir, "pair.txt")); string(got) != "two\n" {
			t.Errorf("pair.txt before the resume: %q, want only the approved second call's line", got)
		}
		token, _ := e.requestOfCard(t, first)
		e.clickCard(t, alice, first, bot.ActionIDApprove)
		e.waitEnded(t, token)
		if lines := c.resume(t, "pair"); len(lines) != 1 || !strings.Contains(lines[0], "resumed; the run ended (end_turn): Both ran.") {
			t.Errorf("the resumer printed %q, want the session resumed to its end", lines)
		}
		if got, err := os.ReadFile(filepath.Join(c.dir, "pair.txt")); err != nil || string(got) != "two\none\n" {
			t.Errorf("pair.txt: %q, %v; want each approved command run once", got, err)
		}
		for _, id := range []string{"toolu_pair_1", "toolu_pair_2"} {
			if tr, ok := model.ToolResults()[id]; !ok || tr.IsError {
				t.Errorf("the model's tool_result for %s: %+v (sent %v), want the command's success", id, tr, ok)
			}
		}
	})

	t.Run("expired: the model is told nobody decided", func(t *testing.T) {
		t.Parallel()
		model := fakemodel.NewAnthropic(t,
			fakemodel.ToolTurn("toolu_defer_late", "Bash", map[string]any{"command": "echo ran >> late.txt", "description": "Wait too long"}),
			fakemodel.TextTurn("Nobody answered."))
		c := newClaudeRun(t, e, model, "--timeout", "1s")
		// The request lasts a second: its token comes from the command's
		// report, as its card may have expired before a test sees it.
		_, token := c.runDeferred(t, "laptop", "wait too long")
		e.waitEnded(t, token)
		if lines := c.resume(t, "laptop"); len(lines) != 1 || !strings.Contains(lines[0], "request "+token+" expired") {
			t.Errorf("the resumer printed %q, want the expired session resumed", lines)
		}
		if n := count(t, filepath.Join(c.dir, "late.txt")); n != 0 {
			t.Errorf("the expired command ran %d times", n)
		}
		tr, ok := model.ToolResults()["toolu_defer_late"]
		if !ok || !tr.IsError || !strings.Contains(tr.ResultText(), agentrunner.NoDecisionPrefix) {
			t.Errorf("the model's tool_result: %q (error %v, sent %v), want the timeout's denial", tr.ResultText(), tr.IsError, ok)
		}
	})
}
