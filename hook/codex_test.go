package hook

// Codex's PreToolUse hook (what `codex exec` fires): every decision comes
// back in the one shape Codex 0.171.0 acts on — a denial always with a
// reason, an approval always with updatedInput — and anything the hook
// cannot answer in that shape exits 2 with the reason on stderr, which
// Codex also reads as a denial. cmd/slackbot's agents_codex_test.go runs
// the real codex exec with it.

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

// codexResolved is a long poll's answer that resolved the call callID
// with result (a wire result: true, or a denial object).
func codexResolved(callID, result string) [2]string {
	return [2]string{"200", `{"token":"tok","status":"resolved","results":{"approvals":{"` + callID + `":` + result +
		`},"answered_by":{"` + callID + `":"U0ALICE"}}}`}
}

func TestHookCodexPreToolUse(t *testing.T) {
	t.Parallel()
	const bashCall, patchCall = "call_9Ykq2Rr0c1Vb8Tn4Xw6Pz3Ls", "call_4Hd8Lm2Qs7Wn1Rb5Tc9Vx0Ke"
	edit := func(args string) string {
		return `{"kind":"tool-approved","override_args":` + args + `}`
	}
	for _, tt := range []struct {
		name, input, golden string
		poll                [2]string
	}{
		{"approved: the event's input, as updatedInput", "exec_bash", "codex-exec-bash-allow", codexResolved(bashCall, "true")},
		{"approved with an edited command", "exec_bash", "codex-exec-bash-allow-edited",
			codexResolved(bashCall, edit(`{"command":"rm -rf build/dist && npm run build"}`))},
		{"an edit Codex cannot run is denied", "exec_bash", "codex-exec-bash-edit-refused",
			codexResolved(bashCall, edit(`{"cmd":"rm -rf build/dist"}`))},
		{"denied with a reason", "exec_bash", "codex-exec-bash-deny",
			codexResolved(bashCall, `{"kind":"tool-denied","message":"Not during the freeze."}`)},
		{"denied with no reason still gives one", "exec_bash", "codex-exec-bash-deny-default",
			codexResolved(bashCall, `{"kind":"tool-denied","message":""}`)},
		{"a patch approved", "exec_apply_patch", "codex-exec-patch-allow", codexResolved(patchCall, "true")},
		{"expired", "exec_bash", "codex-exec-bash-expired", [2]string{"200", `{"token":"tok","status":"expired"}`}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			api, _ := scriptedAPI(t, tt.poll)
			r := waitHook(t, startHook(t.Context(), hookInput(t, "codex/"+tt.input+".json"),
				map[string]string{"SLACKBOT_URL": api.URL, "SLACKBOT_API_KEY": keyBilling}, "codex"))
			checkHookGolden(t, tt.golden, r.Stdout)
			checkCodexPreToolUse(t, r.Stdout)
		})
	}
	t.Run("slackbot down", func(t *testing.T) {
		t.Parallel()
		down := closedPort(t)
		r := waitHook(t, startHook(t.Context(), hookInput(t, "codex/exec_bash.json"),
			map[string]string{"SLACKBOT_URL": "http://" + down, "SLACKBOT_API_KEY": keyBilling}, "codex"))
		checkHookGolden(t, "codex-exec-fail-down", r.Stdout, "ADDR", down)
		checkCodexPreToolUse(t, r.Stdout)
	})
}

// checkCodexPreToolUse: out is a PreToolUse decision Codex acts on, not
// one it counts as a failed hook and lets the call run past: a "deny"
// with a non-empty reason, or an "allow" with updatedInput holding a
// string command.
func checkCodexPreToolUse(t *testing.T, out string) {
	t.Helper()
	var got struct {
		HookSpecificOutput struct {
			HookEventName, PermissionDecision, PermissionDecisionReason string
			UpdatedInput                                                *struct{ Command *string }
		}
	}
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	h := got.HookSpecificOutput
	ok := h.HookEventName == "PreToolUse" && map[string]bool{
		"deny":  strings.TrimSpace(h.PermissionDecisionReason) != "" && h.UpdatedInput == nil,
		"allow": h.UpdatedInput != nil && h.UpdatedInput.Command != nil,
	}[h.PermissionDecision]
	if !ok {
		t.Errorf("Codex would not act on %s", out)
	}
}

// TestHookCodexUnanswerable: stdin that is no Codex event the hook
// answers gets no JSON (which Codex might count as a failed hook and run
// the call) but an error, for exit status 2 with the reason on stderr:
// a denial for Codex, whichever event it sent.
func TestHookCodexUnanswerable(t *testing.T) {
	t.Parallel()
	api, hits := fakeAPI(t, http.StatusCreated, `{"token":"tok","status":"pending"}`)
	vars := map[string]string{"SLACKBOT_URL": api.URL, "SLACKBOT_API_KEY": keyBilling}
	bash := hookInput(t, "codex/exec_bash.json")
	for _, tt := range []struct {
		name  string
		input []byte
		want  string
	}{
		{"stdin not JSON", []byte("rm -rf build/\n"), "not a JSON object"},
		{"another event", bytes.Replace(bash, []byte(`"PreToolUse"`), []byte(`"PostToolUse"`), 1), `hook_event_name "PostToolUse": this hook handles PreToolUse and PermissionRequest events of Codex`},
		{"no event", []byte(`{"tool_name":"Bash","tool_input":{"command":"ls"}}`), `hook_event_name ""`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := <-startHook(t.Context(), tt.input, vars, "codex")
			if r.Err == nil || r.Stdout != "" || !strings.Contains(r.Err.Error(), tt.want) {
				t.Errorf("got %v, stdout %q; want an error saying %q and no output", r.Err, r.Stdout, tt.want)
			}
		})
	}
	// A refused event Codex sent is answered in its shape.
	r := waitHook(t, startHook(t.Context(), []byte(`{"hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":"ls"}`), vars, "codex"))
	checkCodexPreToolUse(t, r.Stdout)
	if n := hits.Load(); n != 0 {
		t.Errorf("slackbot got %d requests for input the hook refuses, want none", n)
	}
}
