package fakemodel

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/slackapprove/slackbot/internal/agentcli"
)

// TestGeminiDrivesTheCLI: the real Gemini CLI (0.61.0), pointed at the
// fake with no hook, plays the script: the model calls run_shell_command,
// the command runs (--approval-mode=yolo: no one to ask headless), the
// CLI sends its output back and the run ends on the fake's "Done.". The
// fake serves every request the CLI makes.
func TestGeminiDrivesTheCLI(t *testing.T) {
	t.Parallel()
	bin := agentcli.Path(t, "gemini")
	dir := t.TempDir()
	g := NewGemini(t, GeminiCall("run_shell_command", map[string]any{"command": "echo from-the-fake > out.txt && echo listed", "description": "Write out.txt"}))
	cmd := exec.CommandContext(t.Context(), bin, "-p", "write out.txt", "--approval-mode", "yolo", "-m", "gemini-2.5-flash")
	cmd.Dir = dir
	cmd.Env = append(g.Env(GeminiHome(t, nil)), "PATH="+os.Getenv("PATH"))
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("gemini: %v\n%s", err, out)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "out.txt")); err != nil || string(b) != "from-the-fake\n" {
		t.Errorf("out.txt: %q, %v; want the command to have run", b, err)
	}
	if got := g.FunctionResponses("run_shell_command"); len(got) != 1 || !strings.Contains(string(got[0]), "listed") {
		t.Errorf("the model was sent %s, want the command's output", got)
	}
	if !g.Finished() || !strings.Contains(string(out), "Done.") {
		t.Errorf("the run did not end on the script's end: %s", out)
	}
	if u := g.Unknown(); len(u) > 0 {
		t.Errorf("the CLI made requests the fake does not serve: %v", u)
	}
	for i, req := range g.Requests() {
		if req.Model != "gemini-2.5-flash" {
			t.Errorf("agent turn %d asked model %q, want gemini-2.5-flash (-m)", i+1, req.Model)
		}
	}
	if n := len(g.Requests()); n != 2 {
		t.Errorf("%d agent turns, want 2 (the call, then its output)", n)
	}
}
