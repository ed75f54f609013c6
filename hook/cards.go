package hook

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/pmezard/go-difflib/difflib"
)

// What the hook tells slackbot so that the card shows the change, not the
// JSON: which agent's tool the call is (the card's change and the edit
// form's fields are slackbot's, by agent and tool name), and, when asked
// to, a Write's diff against the file as it is on this machine, which
// slackbot cannot read.

// The metadata members of a call (approval.MetaAgent and
// approval.MetaLocalDiff: the hook speaks /v1 only, so it names them
// itself; cmd/slackbot's tests check that they agree).
const (
	metaAgent     = "slackbot_agent"
	metaLocalDiff = "slackbot_local_diff"
)

// LocalDiffEnv, set to 1, has the hook read the file a Write replaces and
// send its diff against the new content with the request: the card shows
// it, marked as computed on the agent's machine. Off by default: the diff
// shows the file's current lines (a .env's secrets, say) in Slack, which
// the call's own arguments do not.
const LocalDiffEnv = "SLACKBOT_HOOK_LOCAL_DIFF"

// Bounds of a local diff: the file read, the lines matched (difflib's
// matcher is quadratic at worst), and the diff sent (well inside /v1's
// body limit).
const (
	maxLocalFile      = 256 << 10
	maxLocalDiffLines = 2000
	maxLocalDiff      = 64 << 10
)

// writeTools are the agents' tools that write a whole file, {file_path,
// content}: Claude Code's Write, Gemini CLI's write_file.
var writeTools = map[string]string{"claude-code": "Write", "gemini": "write_file"}

// metadata is the call's request metadata: the agent, and the local diff
// when there is one.
func (a *hookAgent) metadata(ev *hookEvent, callID string) map[string]map[string]any {
	md := map[string]any{metaAgent: a.name}
	if ev.localDiff != "" {
		md[metaLocalDiff] = ev.localDiff
	}
	return map[string]map[string]any{callID: md}
}

// localDiff is the diff a Write of ev makes to the file on this machine,
// or "" when getenv does not ask for it, the call is not a Write, or the
// file cannot be read as a regular file of at most maxLocalFile bytes (a
// new file has no diff: the card shows its content). A relative path is
// the agent's working directory's.
func (a *hookAgent) localDiff(ev *hookEvent, getenv func(string) string) string {
	if getenv(LocalDiffEnv) != "1" || writeTools[a.name] != ev.ToolName {
		return ""
	}
	var in struct {
		Path    string `json:"file_path"`
		Content string `json:"content"`
	}
	if json.Unmarshal(ev.ToolInput, &in) != nil || in.Path == "" {
		return ""
	}
	path := in.Path
	if !filepath.IsAbs(path) {
		path = filepath.Join(ev.Cwd, path)
	}
	old, ok := readSmallFile(path)
	if !ok {
		return ""
	}
	a1, b1 := splitLines(old), splitLines(in.Content)
	if old == in.Content || len(a1) > maxLocalDiffLines || len(b1) > maxLocalDiffLines {
		return ""
	}
	diff, err := difflib.GetUnifiedDiffString(difflib.UnifiedDiff{A: a1, B: b1, FromFile: in.Path, ToFile: in.Path, Context: 3})
	if err != nil || diff == "" {
		return ""
	}
	if len(diff) > maxLocalDiff {
		cut := strings.LastIndexByte(diff[:maxLocalDiff], '\n') + 1
		diff = diff[:cut] + fmt.Sprintf("# … the diff goes on for %d more bytes\n", len(diff)-cut)
	}
	return diff
}

// readSmallFile reads path if it is a regular file (after symbolic links,
// as the agent's write follows them) of at most maxLocalFile bytes.
func readSmallFile(path string) (string, bool) {
	f, err := os.Open(path)
	if err != nil {
		return "", false
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil || !st.Mode().IsRegular() || st.Size() > maxLocalFile {
		return "", false
	}
	b, err := io.ReadAll(io.LimitReader(f, maxLocalFile+1))
	if err != nil || len(b) > maxLocalFile {
		return "", false
	}
	return string(b), true
}

// splitLines splits s into lines that each end with "\n" (the last one
// is given one), none for "" (difflib.SplitLines would add an empty line).
func splitLines(s string) []string {
	if s == "" {
		return nil
	}
	lines := strings.SplitAfter(s, "\n")
	if lines[len(lines)-1] == "" {
		return lines[:len(lines)-1]
	}
	lines[len(lines)-1] += "\n"
	return lines
}
