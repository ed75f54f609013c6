package approval_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/slackapprove/slackbot/approval"
	"github.com/slackapprove/slackbot/routing"
)

func mustJSON(t *testing.T, v any) json.RawMessage {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestBuildChange checks the change each agent tool's arguments show:
// the command with its description, a diff of old → new, the content, the
// patch; every other argument in Rest; and no change for arguments the
// tool does not take (they show as JSON).
func TestBuildChange(t *testing.T) {
	tests := []struct {
		name, agent, tool, args string
		md                      map[string]any
		want                    *approval.Change
	}{
		{"Claude Code Bash", approval.AgentClaudeCode, "Bash",
			`{"command":"rm -rf build/ && npm run build","description":"Rebuild from scratch","timeout":60000,"dangerouslyDisableSandbox":true}`, nil,
			&approval.Change{Agent: "claude-code", Kind: approval.ChangeCommand, Text: "rm -rf build/ && npm run build", Description: "Rebuild from scratch",
				Rest: json.RawMessage(`{"dangerouslyDisableSandbox":true,"timeout":60000}`)}},
		{"Claude Code Edit", approval.AgentClaudeCode, "Edit",
			`{"file_path":"/src/app.go","old_string":"a\nb\nc\n","new_string":"a\nB\nc\n"}`, nil,
			&approval.Change{Agent: "claude-code", Kind: approval.ChangeDiff, Path: "/src/app.go",
				Text: "--- /src/app.go\n+++ /src/app.go\n@@ -1,3 +1,3 @@\n a\n-b\n+B\n c\n"}},
		{"Edit of every occurrence, no final line break", approval.AgentClaudeCode, "Edit",
			`{"file_path":"f","old_string":"x","new_string":"y","replace_all":true}`, nil,
			&approval.Change{Agent: "claude-code", Kind: approval.ChangeDiff, Path: "f",
				Text: "--- f (every occurrence)\n+++ f\n@@ -1 +1 @@\n-x\n+y\n"}},
		{"an Edit that deletes", approval.AgentClaudeCode, "Edit",
			`{"file_path":"f","old_string":"gone\n","new_string":""}`, nil,
			&approval.Change{Agent: "claude-code", Kind: approval.ChangeDiff, Path: "f", Text: "--- f\n+++ f\n@@ -1 +0,0 @@\n-gone\n"}},
		{"an Edit that changes nothing", approval.AgentClaudeCode, "Edit",
			`{"file_path":"f","old_string":"same","new_string":"same"}`, nil,
			&approval.Change{Agent: "claude-code", Kind: approval.ChangeDiff, Path: "f", Text: "--- f\n+++ f\n# no change: the old and the new text are the same\n"}},
		{"MultiEdit", approval.AgentClaudeCode, "MultiEdit",
			`{"file_path":"f","edits":[{"old_string":"1","new_string":"2"},{"old_string":"3","new_string":"4","replace_all":true}]}`, nil,
			&approval.Change{Agent: "claude-code", Kind: approval.ChangeDiff, Path: "f",
				Text: "--- f (edit 1 of 2)\n+++ f\n@@ -1 +1 @@\n-1\n+2\n--- f (edit 2 of 2, every occurrence)\n+++ f\n@@ -1 +1 @@\n-3\n+4\n"}},
		{"Write with the hook's diff", approval.AgentClaudeCode, "Write",
			`{"file_path":"/etc/motd","content":"hello\n"}`, map[string]any{approval.MetaLocalDiff: "--- /etc/motd\n+++ /etc/motd\n-hi\n+hello\n"},
			&approval.Change{Agent: "claude-code", Kind: approval.ChangeContent, Path: "/etc/motd", Text: "hello\n",
				LocalDiff: "--- /etc/motd\n+++ /etc/motd\n-hi\n+hello\n"}},
		{"Codex Bash", approval.AgentCodex, "Bash", `{"command":"git push --force-with-lease origin release"}`, nil,
			&approval.Change{Agent: "codex", Kind: approval.ChangeCommand, Text: "git push --force-with-lease origin release"}},
		{"Codex apply_patch", approval.AgentCodex, "apply_patch",
			`{"command":"*** Begin Patch\n*** Update File: a.txt\n@@\n-old\n+new\n*** End Patch\n"}`, nil,
			&approval.Change{Agent: "codex", Kind: approval.ChangePatch, Text: "*** Begin Patch\n*** Update File: a.txt\n@@\n-old\n+new\n*** End Patch\n"}},
		{"Gemini CLI run_shell_command", approval.AgentGemini, "run_shell_command", `{"command":"make test","description":"Run the tests","dir_path":"/w"}`, nil,
			&approval.Change{Agent: "gemini", Kind: approval.ChangeCommand, Text: "make test", Description: "Run the tests", Rest: json.RawMessage(`{"dir_path":"/w"}`)}},
		{"Gemini CLI replace", approval.AgentGemini, "replace", `{"file_path":"f","instruction":"fix","old_string":"a","new_string":"b","allow_multiple":true}`, nil,
			&approval.Change{Agent: "gemini", Kind: approval.ChangeDiff, Path: "f", Text: "--- f (every occurrence)\n+++ f\n@@ -1 +1 @@\n-a\n+b\n",
				Rest: json.RawMessage(`{"instruction":"fix"}`)}},
		{"Gemini CLI write_file", approval.AgentGemini, "write_file", `{"file_path":"f","content":"x"}`, nil,
			&approval.Change{Agent: "gemini", Kind: approval.ChangeContent, Path: "f", Text: "x"}},
		// What the model calls (Codex's shell with an argv) is not what its
		// hook sends: shown as JSON, not guessed at.
		{"a command that is not a string", approval.AgentCodex, "Bash", `{"command":["rm","-rf","/"]}`, nil, nil},
		{"a description that is not a string", approval.AgentClaudeCode, "Bash", `{"command":"ls","description":{"x":1}}`, nil, nil},
		{"replace_all that is not a boolean", approval.AgentClaudeCode, "Edit", `{"file_path":"f","old_string":"a","new_string":"b","replace_all":"yes"}`, nil, nil},
		{"an edit without its new string", approval.AgentClaudeCode, "MultiEdit", `{"file_path":"f","edits":[{"old_string":"a"}]}`, nil, nil},
		{"not an object", approval.AgentClaudeCode, "Bash", `"ls"`, nil, nil},
		{"a tool it does not know", approval.AgentClaudeCode, "WebFetch", `{"url":"https://x"}`, nil, nil},
		{"an agent it does not know", "cursor", "Bash", `{"command":"ls"}`, nil, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := approval.BuildChange(tt.agent, tt.tool, json.RawMessage(tt.args), tt.md)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("BuildChange (-want +got):\n%s", diff)
			}
		})
	}
}

// TestBuildChangeBounded checks that hostile sizes are cut, said to be
// cut, and cost their length: a 1 MiB command, an Edit of 20,000 lines
// each way (not matched line by line), and 1,000 edits.
func TestBuildChangeBounded(t *testing.T) {
	huge := strings.Repeat("echo hi; ", 1<<17) // 1.1 MiB on one line
	ch := approval.BuildChange(approval.AgentClaudeCode, "Bash", mustJSON(t, map[string]string{"command": huge}), nil)
	if ch == nil || !ch.Cut || len(ch.Text) > approval.MaxChangeText || !strings.HasPrefix(huge, ch.Text) {
		t.Fatalf("huge command: cut %v, %d bytes; want a cut prefix of at most %d", ch != nil && ch.Cut, len(ch.Text), approval.MaxChangeText)
	}

	var old, repl strings.Builder
	for i := range 20000 {
		fmt.Fprintf(&old, "line %d\n", i)
		fmt.Fprintf(&repl, "line %d changed\n", i)
	}
	start := time.Now()
	ch = approval.BuildChange(approval.AgentClaudeCode, "Edit", mustJSON(t, map[string]string{"file_path": "f", "old_string": old.String(), "new_string": repl.String()}), nil)
	if ch == nil || !strings.HasPrefix(ch.Text, "--- f\n+++ f\n@@ -1,20000 +1,20000 @@\n-line 0\n-line 1\n") {
		t.Fatalf("a long edit starts %q, want every old line removed, then every new line added", ch.Text[:min(len(ch.Text), 80)])
	}
	if d := time.Since(start); d > 10*time.Second { // a bound on a runaway, not a timing assertion
		t.Errorf("a 20,000-line edit took %v", d)
	}

	edits := make([]map[string]string, 1000)
	for i := range edits {
		edits[i] = map[string]string{"old_string": fmt.Sprint(i), "new_string": fmt.Sprint(i + 1)}
	}
	ch = approval.BuildChange(approval.AgentClaudeCode, "MultiEdit", mustJSON(t, map[string]any{"file_path": "f", "edits": edits}), nil)
	if ch == nil || !strings.Contains(ch.Text, "edit 100 of 1000") || strings.Contains(ch.Text, "edit 101 of") || !strings.Contains(ch.Text, "and 900 more edits, not shown here") {
		t.Errorf("1,000 edits: want the first 100 and a line saying 900 more; got %d bytes", len(ch.Text))
	}
}

// agentRequest is a pending request of one call of an agent's tool, with
// the agent named in its metadata.
func agentRequest(agent, tool, args string) (*approval.Request, *approval.Call) {
	r, c := viewRequest(approval.Origin{Client: "laptop", Name: "Claude Code (/home/dev/shop)"}, "fs", tool, args)
	r.Requests.Metadata = map[string]map[string]any{"c1": {approval.MetaAgent: agent}}
	return r, c
}

// TestViewOfAnAgentsToolCall checks that a hook's call carries its change
// and leads with it, and is editable through the built-in schema; an
// approval_prompt of Claude Code's gets the same change.
func TestViewOfAnAgentsToolCall(t *testing.T) {
	r, c := agentRequest(approval.AgentClaudeCode, "Bash", `{"command":"ls -la","description":"List"}`)
	got := newViewer(t, viewCreated).View(r, c)
	if got.Change == nil || got.Change.Text != "ls -la" || got.Confirmation != "Claude Code wants to run a command" || !got.AllowEdit {
		t.Errorf("change, confirmation, edit = %+v, %q, %v; want the command, the lead, editable", got.Change, got.Confirmation, got.AllowEdit)
	}
	r, c = viewRequest(approval.Origin{Client: "laptop"}, "fs", "Edit", `{"file_path":"f","old_string":"a","new_string":"b"}`)
	r.Requests.Metadata = map[string]map[string]any{"c1": {approval.MetaPermissionPrompt: "Claude Code"}}
	got = newViewer(t, viewCreated).View(r, c)
	if got.Change == nil || got.Change.Kind != approval.ChangeDiff || got.Confirmation != "Claude Code wants to edit f" {
		t.Errorf("permission prompt: change, confirmation = %+v, %q", got.Change, got.Confirmation)
	}
	// Approved with an edit: the view has the change that runs too.
	r, c = agentRequest(approval.AgentCodex, "Bash", `{"command":"git push"}`)
	c.Status, c.OverrideArgs = approval.CallApproved, json.RawMessage(`{"command":"git push --dry-run"}`)
	if got := newViewer(t, viewCreated).View(r, c); got.EditedChange == nil || got.EditedChange.Text != "git push --dry-run" || got.Change.Text != "git push" {
		t.Errorf("an edited call: change %+v, edited %+v", got.Change, got.EditedChange)
	}
	// Without the agent's name, a tool called Bash is any API tool.
	r, c = viewRequest(approval.Origin{Client: "laptop"}, "fs", "Bash", `{"command":"ls"}`)
	if got := newViewer(t, viewCreated).View(r, c); got.Change != nil || got.AllowEdit {
		t.Errorf("an API call of a tool named Bash: change %+v, edit %v; want neither", got.Change, got.AllowEdit)
	}
}

// TestEditedArgs checks the fields a person edits and the arguments the
// edit makes: only the named string members change, the rest are kept as
// they came and where they came, trailing white space a form trimmed is
// no change, and a field the arguments do not have is refused.
func TestEditedArgs(t *testing.T) {
	args := json.RawMessage(`{"command":"rm -rf build/\n","timeout":60000.0,"description":"<b>x</b>"}`)
	fields := approval.EditFields(approval.AgentClaudeCode, "Bash", args)
	if want := []approval.EditField{{Key: "command", Label: "Command", Value: "rm -rf build/\n", Multiline: true}}; !cmp.Equal(fields, want) {
		t.Errorf("EditFields = %+v, want %+v", fields, want)
	}
	got, err := approval.EditedArgs(args, map[string]string{"command": "rm -rf build/tmp"})
	if want := `{"command":"rm -rf build/tmp","timeout":60000.0,"description":"<b>x</b>"}`; err != nil || string(got) != want {
		t.Errorf("EditedArgs = %s, %v; want %s", got, err, want)
	}
	got, err = approval.EditedArgs(args, map[string]string{"command": "rm -rf build/"})
	if err != nil || !strings.Contains(string(got), `"rm -rf build/\n"`) {
		t.Errorf("a trimmed, unchanged field = %s, %v; want the command as it was", got, err)
	}
	for _, key := range []string{"timeout", "nothing", "edits.0.old_string", "edits.x.y.z", "edits.01.old_string"} {
		if _, err := approval.EditedArgs(args, map[string]string{key: "1"}); approval.ErrorCode(err) != approval.EINVALID {
			t.Errorf("EditedArgs of %q: %v, want EINVALID", key, err)
		}
	}
	multi := json.RawMessage(`{"file_path":"f","edits":[{"old_string":"a","new_string":"b"},{"old_string":"c","new_string":"d"}]}`)
	keys := []string{}
	for _, f := range approval.EditFields(approval.AgentClaudeCode, "MultiEdit", multi) {
		keys = append(keys, f.Key)
	}
	if want := []string{"file_path", "edits.0.old_string", "edits.0.new_string", "edits.1.old_string", "edits.1.new_string"}; !cmp.Equal(keys, want) {
		t.Errorf("MultiEdit fields = %v, want %v", keys, want)
	}
	got, err = approval.EditedArgs(multi, map[string]string{"edits.1.new_string": "D"})
	if want := `{"file_path":"f","edits":[{"old_string":"a","new_string":"b"},{"old_string":"c","new_string":"D"}]}`; err != nil || string(got) != want {
		t.Errorf("EditedArgs of an edit = %s, %v; want %s", got, err, want)
	}
	if _, err := approval.EditedArgs(json.RawMessage(`{"command":"a","command":"b"}`), map[string]string{"command": "c"}); approval.ErrorCode(err) != approval.EINVALID {
		t.Errorf("arguments read two ways: %v, want EINVALID", err)
	}
}

// TestCheckEditOfAnAgentsTool checks that an edit of an agent's tool is
// checked against its built-in schema: refused when it does not fit,
// whatever schema the client sent, accepted when it does.
func TestCheckEditOfAnAgentsTool(t *testing.T) {
	routes, err := routing.ParseRoutes([]byte(viewRoutes), "routes.yaml")
	if err != nil {
		t.Fatal(err)
	}
	svc := approval.New(approval.Config{Routes: routes, Tools: newEditTools(t)})
	tests := []struct {
		name, agent, tool, args, edit string
		want                          string // the reason contains this; "" means accepted
	}{
		{"a command", approval.AgentClaudeCode, "Bash", `{"command":"ls"}`, `{"command":"ls -la"}`, ""},
		{"an empty command", approval.AgentClaudeCode, "Bash", `{"command":"ls"}`, `{"command":""}`, "command"},
		{"a command that is not text", approval.AgentClaudeCode, "Bash", `{"command":"ls"}`, `{"command":["ls"]}`, "command"},
		{"no command", approval.AgentCodex, "Bash", `{"command":"ls"}`, `{"description":"ls"}`, "command"},
		{"a patch", approval.AgentCodex, "apply_patch", `{"command":"*** Begin Patch\n*** End Patch"}`, `{"command":"*** Begin Patch\n*** Delete File: a\n*** End Patch\n"}`, ""},
		{"not a patch", approval.AgentCodex, "apply_patch", `{"command":"*** Begin Patch\n*** End Patch"}`, `{"command":"rm -rf /"}`, "command"},
		{"an Edit without its file", approval.AgentClaudeCode, "Edit", `{"file_path":"f","old_string":"a","new_string":"b"}`, `{"file_path":"","old_string":"a","new_string":"b"}`, "file_path"},
		{"a MultiEdit with no edits", approval.AgentClaudeCode, "MultiEdit", `{"file_path":"f","edits":[{"old_string":"a","new_string":"b"}]}`, `{"file_path":"f","edits":[]}`, "edits"},
		{"Gemini CLI's delay that is not whole", approval.AgentGemini, "run_shell_command", `{"command":"ls"}`, `{"command":"ls","delay_ms":1.5}`, "delay_ms"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, c := agentRequest(tt.agent, tt.tool, tt.args)
			// A client's looser schema does not replace the built-in one.
			r.Requests.Metadata["c1"][approval.ArgsSchemaKey] = map[string]any{"type": "object"}
			_, err := svc.CheckEdit(t.Context(), r, c, json.RawMessage(tt.edit))
			if tt.want == "" {
				if err != nil {
					t.Fatalf("got %v, want accepted", err)
				}
				return
			}
			if approval.ErrorCode(err) != approval.EINVALID || !strings.Contains(approval.ErrorMessage(err), tt.want) {
				t.Errorf("got %v, want EINVALID naming %q", err, tt.want)
			}
		})
	}
}

// TestAgentSchemasCompile compiles every built-in schema.
func TestAgentSchemasCompile(t *testing.T) {
	for agent, tools := range map[string][]string{
		approval.AgentClaudeCode: {"Bash", "Edit", "MultiEdit", "Write"},
		approval.AgentCodex:      {"Bash", "apply_patch"},
		approval.AgentGemini:     {"run_shell_command", "replace", "write_file"},
	} {
		for _, tool := range tools {
			if approval.AgentSchema(agent, tool) == nil {
				t.Errorf("%s %s: no schema", agent, tool)
			}
		}
	}
	if approval.AgentSchema(approval.AgentClaudeCode, "Read") != nil {
		t.Error("Read has a schema, want none: it has no change to edit")
	}
}
