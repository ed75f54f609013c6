package main

// A coding agent's card shows the change its tool call makes, built from
// the arguments the hook sends: Bash's command as code with its
// description, Edit's diff, Write's content with the hook's diff against
// the file (when asked for), Codex's patch. "Edit arguments…" edits the
// command or the strings, checked against the tool's built-in schema.

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/slackapprove/slackbot/approval"
	"github.com/slackapprove/slackbot/bot"
	"github.com/slackapprove/slackbot/internal/slackfake"
)

// hookEvent is a Claude Code PreToolUse or Codex PermissionRequest event
// of tool with input; Codex's also names its turn and model, as Codex
// 0.171.0 sends them.
func hookEvent(t *testing.T, event, cwd, tool string, input any) []byte {
	t.Helper()
	ev := map[string]any{
		"session_id": "5e551011-0000-4000-8000-000000000001", "cwd": cwd, "hook_event_name": event,
		"permission_mode": "default", "tool_name": tool, "tool_input": input, "tool_use_id": "toolu_" + strings.ToLower(tool),
		"transcript_path": "/dev/null",
	}
	if event == "PermissionRequest" {
		ev["turn_id"], ev["model"] = "turn-1", "gpt-5-codex"
	}
	b, err := json.Marshal(ev)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// cardTexts are the texts of card's blocks, as people read them.
func cardTexts(t *testing.T, card slackfake.Message) string {
	t.Helper()
	var blocks any
	if err := json.Unmarshal(card.BlocksJSON, &blocks); err != nil {
		t.Fatal(err)
	}
	var out []string
	var walk func(v any)
	walk = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			if s, ok := v["text"].(string); ok {
				out = append(out, s)
			}
			for _, c := range v {
				walk(c)
			}
		case []any:
			for _, c := range v {
				walk(c)
			}
		}
	}
	walk(blocks)
	return strings.Join(out, "\n")
}

func TestAgentCardsShowTheChange(t *testing.T) {
	t.Parallel()
	e := newHookEnv(t)
	vars := e.hookVars(keyBilling)
	cwd := t.TempDir()
	if err := os.WriteFile(filepath.Join(cwd, "deploy.yaml"), []byte("replicas: 3\nimage: shop:1.4\n"), 0o600); err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		name, agent, event, tool string
		input                    any
		env                      map[string]string
		want                     []string // in the card's texts
	}{
		{"Claude Code Bash", "claude-code", "PreToolUse", "Bash",
			map[string]any{"command": "rm -rf build/ && npm run build", "description": "Rebuild the site", "timeout": 120000}, nil,
			[]string{"Claude Code wants to run a command", "*Command*\n```\nrm -rf build/ &amp;&amp; npm run build\n```",
				"The agent's description: “Rebuild the site”", "Other arguments: `{\"timeout\":120000}`"}},
		{"Claude Code Edit", "claude-code", "PreToolUse", "Edit",
			map[string]any{"file_path": "/srv/shop/deploy.yaml", "old_string": "replicas: 3\n", "new_string": "replicas: 30\n"}, nil,
			[]string{"Claude Code wants to edit /srv/shop/deploy.yaml", "```\n--- /srv/shop/deploy.yaml\n+++ /srv/shop/deploy.yaml\n@@ -1 +1 @@\n-replicas: 3\n+replicas: 30\n```"}},
		{"Claude Code Write, diffed on the agent's machine", "claude-code", "PreToolUse", "Write",
			map[string]any{"file_path": "deploy.yaml", "content": "replicas: 3\nimage: shop:1.5\n"}, map[string]string{"SLACKBOT_HOOK_LOCAL_DIFF": "1"},
			[]string{"*Content* `deploy.yaml`\n```\nreplicas: 3\nimage: shop:1.5\n```", "computed on the agent's machine by its hook", "-image: shop:1.4\n+image: shop:1.5"}},
		{"Codex apply_patch", "codex", "PermissionRequest", "apply_patch",
			map[string]any{"command": "*** Begin Patch\n*** Update File: deploy.yaml\n@@\n-replicas: 3\n+replicas: 4\n*** End Patch\n"}, nil,
			[]string{"Codex wants to apply a patch", "*Patch*\n```\n*** Begin Patch\n*** Update File: deploy.yaml"}},
		{"hostile text stays inert", "claude-code", "PreToolUse", "Bash",
			map[string]any{"command": "echo ``` <!channel> <https://evil.example|ok> *bold*", "description": "<!here> `x`"}, nil,
			[]string{"echo `\u200b`\u200b` &lt;!channel&gt; &lt;https://evil.example|ok&gt; *bold*", "The agent's description: “&lt;!here&gt; `x`”"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := len(e.cards())
			env := map[string]string{}
			for k, v := range vars {
				env[k] = v
			}
			for k, v := range tt.env {
				env[k] = v
			}
			done := startHook(t.Context(), hookEvent(t, tt.event, cwd, tt.tool, tt.input), env, tt.agent)
			card := e.waitLiveCard(t, before, tt.tool)
			text := cardTexts(t, card)
			for _, want := range tt.want {
				if !strings.Contains(text, want) {
					t.Errorf("the card does not show %q; it shows:\n%s", want, text)
				}
			}
			if strings.Contains(text, `"command":`) || strings.Contains(text, `"old_string":`) || strings.Contains(text, "<!channel>") || strings.Contains(text, "<!here>") {
				t.Errorf("the card shows the arguments' JSON or a live mention:\n%s", text)
			}
			// The hook names its agent with the member slackbot reads.
			token, callID := e.requestOfCard(t, card)
			r, err := e.app.store.Get(t.Context(), token)
			if err != nil {
				t.Fatal(err)
			}
			if got := approval.CallAgent(r, callID); got != tt.agent {
				t.Errorf("the request names agent %q, want %q", got, tt.agent)
			}
			e.clickCard(t, bob, card, bot.ActionIDDeny)
			waitHook(t, done)
		})
	}
}

// TestAgentCardEditRefused: an edit the tool's schema refuses is answered
// in the form, and nothing is decided: the card stays pending until a
// valid edit approves the call, which the agent then runs.
func TestAgentCardEditRefused(t *testing.T) {
	t.Parallel()
	e := newHookEnv(t)
	input := hookEvent(t, "PreToolUse", "/srv/shop", "Bash", map[string]any{"command": "make deploy", "description": "Deploy"})
	done := startHook(t.Context(), input, e.hookVars(keyBilling), "claude-code")
	card := e.waitLiveCard(t, 0, "make deploy")
	view := e.openEditForm(t, alice, card)
	body := e.submit(alice, view, map[string]map[string]string{bot.BlockIDEditArgs: {"field.command": ""}})
	if !strings.Contains(body, `"response_action":"errors"`) || !strings.Contains(body, "command") {
		t.Fatalf("an empty command: the form answered %s, want an error naming the command", body)
	}
	token, callID := e.requestOfCard(t, card)
	r, err := e.app.store.Get(t.Context(), token)
	if err != nil {
		t.Fatal(err)
	}
	if st := r.Call(callID).Status; st != approval.CallPending {
		t.Fatalf("after a refused edit the call is %s, want pending", st)
	}
	e.answerWithEdit(t, card, map[string]string{"command": "make deploy-staging"})
	out := waitHook(t, done).Stdout
	if !strings.Contains(out, `"permissionDecision":"allow"`) || !strings.Contains(out, `"updatedInput":{"command":"make deploy-staging","description":"Deploy"}`) {
		t.Errorf("the hook printed %s, want allow with the edited command", out)
	}
}
