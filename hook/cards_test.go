package hook

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestHookNamesTheAgent checks that every request says which agent's
// tool the call is, so the card shows its change.
func TestHookNamesTheAgent(t *testing.T) {
	for name, a := range hookAgents {
		req := a.request(&hookEvent{ToolName: "Bash", ToolInput: json.RawMessage(`{"command":"ls"}`)}, "c1")
		if got := req.Metadata["c1"][metaAgent]; got != name {
			t.Errorf("%s: metadata %v, want %s = %s", name, req.Metadata, metaAgent, name)
		}
		if _, ok := req.Metadata["c1"][metaLocalDiff]; ok {
			t.Errorf("%s: a local diff for a Bash call", name)
		}
	}
}

// TestHookLocalDiff checks the diff a Write makes to the file on the
// agent's machine: sent only when asked for, against a regular file small
// enough to read (a relative path is the agent's working directory's),
// never for a new file, a directory, a large file or another tool.
func TestHookLocalDiff(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("motd", "hello\nworld\n")
	write("big", strings.Repeat("x\n", maxLocalFile))
	if err := os.Mkdir(filepath.Join(dir, "sub"), 0o700); err != nil {
		t.Fatal(err)
	}
	on := func(string) string { return "1" }
	claude := hookAgents["claude-code"]
	event := func(tool, path, content string) *hookEvent {
		in, _ := json.Marshal(map[string]string{"file_path": path, "content": content})
		return &hookEvent{Cwd: dir, ToolName: tool, ToolInput: in}
	}
	want := "--- motd\n+++ motd\n@@ -1,2 +1,2 @@\n hello\n-world\n+there\n"
	if got := claude.localDiff(event("Write", "motd", "hello\nthere\n"), on); got != want {
		t.Errorf("relative path: got %q, want %q", got, want)
	}
	abs := filepath.Join(dir, "motd")
	if got := claude.localDiff(event("Write", abs, "hello\nthere\n"), on); !strings.Contains(got, "-world\n+there\n") {
		t.Errorf("absolute path: got %q", got)
	}
	for name, ev := range map[string]*hookEvent{
		"a new file":   event("Write", "new.txt", "x"),
		"a directory":  event("Write", "sub", "x"),
		"a large file": event("Write", "big", "x"),
		"no change":    event("Write", "motd", "hello\nworld\n"),
		"another tool": event("Edit", "motd", "x"),
	} {
		if got := claude.localDiff(ev, on); got != "" {
			t.Errorf("%s: got a diff %q, want none", name, got)
		}
	}
	if got := claude.localDiff(event("Write", "motd", "hello\nthere\n"), func(string) string { return "" }); got != "" {
		t.Errorf("without %s: got a diff %q, want none (it shows the file's lines in Slack)", LocalDiffEnv, got)
	}
	ev := event("Write", "motd", "hello\nthere\n")
	ev.localDiff = claude.localDiff(ev, on)
	if got := claude.request(ev, "c1").Metadata["c1"][metaLocalDiff]; got != want {
		t.Errorf("request metadata %v, want the diff", got)
	}
}

// TestHookCardsDocs: the README says how to turn on the local diff and
// which member names the agent, as the code spells them.
func TestHookCardsDocs(t *testing.T) {
	section := readmeSection(t, "## Approvals for MCP clients and coding agents")
	for _, want := range []string{"`" + LocalDiffEnv + "=1`", "`" + metaAgent + "`", "go test ./cmd/slackbot -run TestDevBrowserAgentCards -screenshots",
		"](docs/agent-bash-card.png)", "](docs/agent-edit-card.png)"} {
		if !strings.Contains(section, want) {
			t.Errorf("the README's section does not say %s", want)
		}
	}
}
