package fakemodel_test

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/slackapprove/slackbot/internal/agentcli"
	"github.com/slackapprove/slackbot/internal/fakemodel"
)

const hookScript = `#!/bin/sh
n=$(ls $LOGDIR | wc -l)
cat > $LOGDIR/in$n.json
if [ -f $LOGDIR/../decision.json ]; then cat $LOGDIR/../decision.json; else
echo '{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"defer","permissionDecisionReason":"waiting in slack"}}'; fi
`

func TestExperiment(t *testing.T) {
	claude := agentcli.Path(t, "claude")
	a := fakemodel.NewAnthropic(t,
		fakemodel.ToolTurn("toolu_01", "Bash", map[string]any{"command": "echo ran >> count.txt", "description": "Count"}),
		fakemodel.TextTurn("All done."))
	base := t.TempDir()
	logdir := filepath.Join(base, "log")
	os.MkdirAll(logdir, 0o755)
	hook := filepath.Join(base, "hook.sh")
	os.WriteFile(hook, []byte(hookScript), 0o755)
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, ".claude"), 0o755)
	s, _ := json.Marshal(map[string]any{"hooks": map[string]any{"PreToolUse": []any{map[string]any{"matcher": "*", "hooks": []any{map[string]any{"type": "command", "command": hook}}}}}})
	os.WriteFile(filepath.Join(dir, ".claude", "settings.json"), s, 0o644)
	env := append(claudeEnv(t, a), "LOGDIR="+logdir)
	run := func(args ...string) string {
		cmd := exec.Command(claude, args...)
		cmd.Env, cmd.Dir = env, dir
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		t.Logf("claude %v: %v\nstdout: %s\nstderr: %s", args, err, stdout.String(), stderr.String())
		return stdout.String()
	}
	out := run("-p", "count", "--output-format", "json")
	var res struct{ SessionID string `json:"session_id"` }
	json.Unmarshal([]byte(out), &res)
	if d := os.Getenv("EXP_DECISION"); d != "" {
		os.WriteFile(filepath.Join(base, "decision.json"), []byte(d), 0o644)
	}
	run(append([]string{"-p", "--resume", res.SessionID, "--output-format", "json"}, strings.Fields(os.Getenv("EXP_RESUME_ARGS"))...)...)
	run(append([]string{"-p", "--resume", res.SessionID, "--output-format", "json"}, strings.Fields(os.Getenv("EXP_RESUME_ARGS"))...)...)
	ents, _ := os.ReadDir(logdir)
	for _, e := range ents {
		b, _ := os.ReadFile(filepath.Join(logdir, e.Name()))
		t.Logf("%s: %s", e.Name(), b)
	}
	c, _ := os.ReadFile(filepath.Join(dir, "count.txt"))
	t.Logf("count.txt: %q; tool results: %+v; other %v", c, a.ToolResults(), a.Other())
	for i, r := range a.Requests() {
		t.Logf("request %d: %d messages", i, len(r.Messages))
	}
}
