package main

// The real Claude Code (internal/agentcli) against a fake Anthropic API
// (internal/fakemodel) and the whole app: its PreToolUse hook is the
// built slackbot binary, people decide on the cards in the fake Slack
// with signed clicks, and the model sees what happened in the
// tool_result Claude Code sends back.

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/slackapprove/slackbot/bot"
	"github.com/slackapprove/slackbot/internal/agentcli"
	"github.com/slackapprove/slackbot/internal/fakemodel"
)

// claudeRun is one project Claude Code works in, wired to a fake model
// and to e's slackbot through its PreToolUse hook.
type claudeRun struct {
	claude string
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
	return &claudeRun{claude: claude, dir: dir, env: []string{
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
	card := e.waitLiveCard(t, before, "Bash", "echo approved-by-alice", "Claude Code (")
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
