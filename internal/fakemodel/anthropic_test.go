package fakemodel_test

import (
	"bytes"
	"encoding/json"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/slackapprove/slackbot/internal/agentcli"
	"github.com/slackapprove/slackbot/internal/fakemodel"
)

// claudeEnv is the environment of a claude run against a: a fresh HOME
// and no traffic but the model's.
func claudeEnv(t *testing.T, a *fakemodel.Anthropic) []string {
	home := t.TempDir()
	return []string{
		"HOME=" + home, "PATH=/usr/bin:/bin",
		"CLAUDE_CONFIG_DIR=" + filepath.Join(home, ".claude"),
		"ANTHROPIC_BASE_URL=" + a.URL, "ANTHROPIC_API_KEY=sk-ant-test",
		"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1", "DISABLE_AUTOUPDATER=1",
		"DISABLE_TELEMETRY=1", "DISABLE_ERROR_REPORTING=1",
	}
}

// TestAnthropicClaude: the real Claude Code reads the fake's stream: a
// tool call it runs and sends back as a tool_result, then the text that
// ends its turn.
func TestAnthropicClaude(t *testing.T) {
	t.Parallel()
	claude := agentcli.Path(t, "claude")
	a := fakemodel.NewAnthropic(t,
		fakemodel.ToolTurn("toolu_01", "Bash", map[string]any{"command": "echo fake-model-ran", "description": "Say hello"}),
		fakemodel.TextTurn("All done."))
	cmd := exec.CommandContext(t.Context(), claude, "-p", "say hello", "--output-format", "json",
		"--allowedTools", "Bash(echo:*)")
	cmd.Env = claudeEnv(t, a)
	cmd.Dir = t.TempDir()
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("claude: %v\nstdout: %s\nstderr: %s", err, stdout.String(), stderr.String())
	}
	var out struct {
		Result string `json:"result"`
	}
	if err := json.Unmarshal(stdout.Bytes(), &out); err != nil || out.Result != "All done." {
		t.Errorf("claude printed %s (%v), want the result %q", stdout.String(), err, "All done.")
	}
	res, ok := a.ToolResults()["toolu_01"]
	if !ok || res.IsError || !strings.Contains(res.ResultText(), "fake-model-ran") {
		t.Errorf("tool_result of toolu_01: %+v (found %v), want the command's output", res, ok)
	}
	t.Logf("other calls: %v; tools offered: %v", a.Other(), a.ToolNames())
}
