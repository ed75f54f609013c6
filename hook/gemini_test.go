package hook

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestHookGeminiFailsClosed: slackbot down and input the hook cannot act
// on give Gemini CLI a "deny" with the reason (exit 0, JSON on stdout:
// what Gemini CLI reads as a block), never output it would take as
// "allow".
func TestHookGeminiFailsClosed(t *testing.T) {
	t.Parallel()
	shell := hookInput(t, "gemini/run_shell_command.json")
	down := closedPort(t)
	api, hits := fakeAPI(t, http.StatusCreated, `{"token":"tok","status":"pending"}`)
	for _, tt := range []struct {
		name, golden, url string
		input             []byte
	}{
		{"slackbot down", "gemini-fail-down", "http://" + down, shell},
		{"another event", "gemini-fail-wrong-event", api.URL, bytes.Replace(shell, []byte(`"BeforeTool"`), []byte(`"AfterTool"`), 1)},
		{"a Claude Code event", "gemini-fail-claude-event", api.URL, hookInput(t, "claude-code/bash.json")},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := waitHook(t, startHook(t.Context(), tt.input, map[string]string{"SLACKBOT_URL": tt.url, "SLACKBOT_API_KEY": keyBilling}, "gemini"))
			if r.Err != nil {
				t.Fatalf("hook gemini: %v, want a decision and exit 0", r.Err)
			}
			checkHookGolden(t, tt.golden, r.Stdout, "URL", tt.url, "ADDR", down)
			var out geminiBeforeTool
			if err := json.Unmarshal([]byte(r.Stdout), &out); err != nil || out.Decision != "deny" || out.Reason == "" {
				t.Errorf("got %s (%v), want a deny with a reason", r.Stdout, err)
			}
			if strings.Contains(r.Stdout+r.Stderr, keyBilling) {
				t.Errorf("the hook's output shows the API key: %s %s", r.Stdout, r.Stderr)
			}
		})
	}
	if n := hits.Load(); n != 0 {
		t.Errorf("slackbot got %d requests for input the hook refuses, want none", n)
	}
}

// TestHookGeminiEndsBeforeGeminiKillsIt: without --timeout the hook ends
// its wait, and its request, inside Gemini CLI's default hook timeout
// (60000 ms, DEFAULT_HOOK_TIMEOUT in Gemini CLI 0.61.0), which kills a
// slower hook and runs the call; the other agents keep DefaultTimeout.
func TestHookGeminiEndsBeforeGeminiKillsIt(t *testing.T) {
	t.Parallel()
	const geminiKills = 60 * time.Second
	if worst := hookAgents["gemini"].defaultWait() + max(createGrace, cancelTimeout); worst >= geminiKills {
		t.Errorf("hook gemini may take %s without --timeout; Gemini CLI kills it after %s and runs the call", worst, geminiKills)
	}
	for _, name := range []string{"claude-code", "codex"} {
		if got := hookAgents[name].defaultWait(); got != DefaultTimeout {
			t.Errorf("hook %s waits %s without --timeout, want %s", name, got, DefaultTimeout)
		}
	}
}

// TestGeminiEdit: an approval with edited arguments reaches Gemini CLI as
// the edited input only when it keeps every argument of the model's call.
func TestGeminiEdit(t *testing.T) {
	t.Parallel()
	ev := &hookEvent{ToolInput: json.RawMessage(`{"command":"ls","description":"list","dir_path":"src"}`)}
	approved := func(edited string) hookDecision {
		return hookDecision{allow: true, reason: "Approved through slackbot by U0ALICE, with edited arguments.", edited: json.RawMessage(edited)}
	}
	for _, tt := range []struct {
		name  string
		in    hookDecision
		allow bool
		says  string
	}{
		{"a plain approval", hookDecision{allow: true, reason: "Approved through slackbot."}, true, ""},
		{"a denial", hookDecision{reason: "No."}, false, "No."},
		{"values changed", approved(`{"command":"ls -la","description":"list","dir_path":"src"}`), true, ""},
		{"an argument added", approved(`{"command":"ls","description":"list","dir_path":"src","is_background":false}`), true, ""},
		{"arguments removed", approved(`{"command":"ls"}`), false, "removes description, dir_path"},
		{"not an object", approved(`["ls"]`), false, "could not be read"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got := geminiEdit(ev, tt.in)
			if got.allow != tt.allow || !strings.Contains(got.reason, tt.says) {
				t.Errorf("got allow %v, %q; want allow %v saying %q", got.allow, got.reason, tt.allow, tt.says)
			}
			if got.allow && !bytes.Equal(got.edited, tt.in.edited) {
				t.Errorf("runs %s, want %s", got.edited, tt.in.edited)
			}
		})
	}
}
