package hook

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// withIDs is the Claude Code hook input file name with its tool_use_id
// and prompt_id set (none when empty).
func withIDs(t *testing.T, name, toolUseID, promptID string) []byte {
	t.Helper()
	var ev map[string]any
	if err := json.Unmarshal(hookInput(t, name), &ev); err != nil {
		t.Fatal(err)
	}
	ev["tool_use_id"] = toolUseID
	if promptID != "" {
		ev["prompt_id"] = promptID
	}
	b, err := json.Marshal(ev)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// deferAPI is a server in slackbot's place that answers every create with
// answer and records the bodies it was sent.
func deferAPI(t *testing.T, answer string) (url string, bodies func() []map[string]any) {
	t.Helper()
	var mu sync.Mutex
	var got []map[string]any
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		var m map[string]any
		_ = json.Unmarshal(b, &m)
		if m == nil {
			m = map[string]any{}
		}
		m["_request"] = r.Method + " " + r.URL.Path
		mu.Lock()
		got = append(got, m)
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		_, _ = io.WriteString(w, answer)
	}))
	t.Cleanup(srv.Close)
	return srv.URL, func() []map[string]any {
		mu.Lock()
		defer mu.Unlock()
		return append([]map[string]any(nil), got...)
	}
}

// TestHookDefer: with --defer (or SLACKBOT_HOOK_DEFER=1) the hook opens
// the call's request under an idempotency key made of session_id and
// tool_use_id and answers Claude Code's "defer" while it is pending; the
// resumed run's firing sends the same create and gets what was decided in
// Claude Code's shape: allow, allow with updatedInput, deny with the
// reason, the timeout's denial. Output shapes as Claude Code 2.1.332's
// PreToolUse hook schema reads them.
func TestHookDefer(t *testing.T) {
	t.Parallel()
	const call = `"calls":[{"tool_call_id":"toolu_01HcWq7sYh3cVbY5Zp3kK2Xa","tool_name":"Bash","kind":"approval","state":"decided"}]`
	for _, tt := range []struct {
		name, answer string
		env          bool // SLACKBOT_HOOK_DEFER=1 instead of --defer
		want         string
	}{
		{"pending: defer", `{"token":"tok_pending","status":"pending","expires_at":"2026-12-02T06:00:00Z"}`, false,
			`{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"defer","permissionDecisionReason":"Waiting for a decision in Slack (slackbot request tok_pending, until 2026-12-02T06:00:00Z); the run resumes once someone decides."}}`},
		{"pending, told by the environment", `{"token":"tok_pending","status":"pending","expires_at":"2026-12-02T06:00:00Z"}`, true,
			`{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"defer","permissionDecisionReason":"Waiting for a decision in Slack (slackbot request tok_pending, until 2026-12-02T06:00:00Z); the run resumes once someone decides."}}`},
		{"approved on resume", `{"token":"tok","status":"resolved",` + call + `,"results":{"calls":{},"approvals":{"toolu_01HcWq7sYh3cVbY5Zp3kK2Xa":true},"metadata":{},"answered_by":{"toolu_01HcWq7sYh3cVbY5Zp3kK2Xa":"U0ALICE"}}}`, false,
			`{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"allow","permissionDecisionReason":"Approved through slackbot by U0ALICE."}}`},
		{"approved with edited input on resume", `{"token":"tok","status":"resolved",` + call + `,"results":{"calls":{},"approvals":{"toolu_01HcWq7sYh3cVbY5Zp3kK2Xa":{"kind":"tool-approved","override_args":{"command":"npm run build"}}},"metadata":{},"answered_by":{"toolu_01HcWq7sYh3cVbY5Zp3kK2Xa":"U0ALICE"}}}`, false,
			`{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"allow","permissionDecisionReason":"Approved through slackbot by U0ALICE, with edited arguments.","updatedInput":{"command":"npm run build"}}}`},
		{"denied on resume", `{"token":"tok","status":"resolved",` + call + `,"results":{"calls":{},"approvals":{"toolu_01HcWq7sYh3cVbY5Zp3kK2Xa":{"kind":"tool-denied","message":"Not on a Friday."}},"metadata":{},"answered_by":{"toolu_01HcWq7sYh3cVbY5Zp3kK2Xa":"U0BOB"}}}`, false,
			`{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"deny","permissionDecisionReason":"Not on a Friday."}}`},
		{"expired on resume", `{"token":"tok","status":"expired",` + call + `}`, false,
			`{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"deny","permissionDecisionReason":"No decision on this tool call arrived: the request expired"}}`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			url, bodies := deferAPI(t, tt.answer)
			vars := map[string]string{"SLACKBOT_URL": url, "SLACKBOT_API_KEY": keyBilling}
			args := []string{"claude-code", "--defer"}
			if tt.env {
				vars[DeferEnv], args = "1", []string{"claude-code"}
			}
			vars[RunDirEnv] = t.TempDir()
			r := waitHook(t, startHook(t.Context(), hookInput(t, "claude-code/bash.json"), vars, args...))
			if got := strings.TrimSpace(r.Stdout); got != tt.want {
				t.Errorf("printed\n%s\nwant\n%s", got, tt.want)
			}
			sent := bodies()
			if len(sent) != 1 || sent[0]["idempotency_key"] != "claude-code/8f3b2c1a-5d4e-4f6a-9b7c-2e1d0a9f8c7b/toolu_01HcWq7sYh3cVbY5Zp3kK2Xa" {
				t.Errorf("sent %v, want one create under the session's and call's idempotency key", sent)
			}
		})
	}
}

// TestHookDeferRefused: defer needs Claude Code and the ids that find the
// request again; without them the hook denies (fails closed) and asks
// slackbot nothing.
func TestHookDeferRefused(t *testing.T) {
	t.Parallel()
	url, bodies := deferAPI(t, `{"token":"tok","status":"pending"}`)
	vars := map[string]string{"SLACKBOT_URL": url, "SLACKBOT_API_KEY": keyBilling}
	noID := strings.Replace(string(hookInput(t, "claude-code/bash.json")), `"tool_use_id": "toolu_01HcWq7sYh3cVbY5Zp3kK2Xa"`, `"tool_use_id": ""`, 1)
	for _, tt := range []struct {
		name, agent string
		input       []byte
		want        string
	}{
		{"Codex", "codex", hookInput(t, "codex/bash.json"), "--defer is Claude Code's"},
		{"no tool_use_id", "claude-code", []byte(noID), "has no session_id or tool_use_id"},
	} {
		r := waitHook(t, startHook(t.Context(), tt.input, vars, tt.agent, "--defer"))
		if !strings.Contains(r.Stdout, `"deny"`) || !strings.Contains(r.Stdout, tt.want) {
			t.Errorf("%s: printed %s, want a denial saying %q", tt.name, r.Stdout, tt.want)
		}
	}
	if n := len(bodies()); n != 0 {
		t.Errorf("slackbot was asked %d times, want none", n)
	}
}

// TestDeferKey: the key fits the API's 200 characters whatever the ids.
func TestDeferKey(t *testing.T) {
	t.Parallel()
	if k := deferKey(strings.Repeat("s", 300), "toolu_1"); len(k) > 200 || k != deferKey(strings.Repeat("s", 300), "toolu_1") {
		t.Errorf("deferKey of long ids: %q (%d)", k, len(k))
	}
}

// TestHookDeferResumed: in the run `slackbot agent resume` resumes, the
// firing for the deferred call reads the request by the token the
// resumer passes (a GET, not a create that might differ from the first),
// and answers its decision.
func TestHookDeferResumed(t *testing.T) {
	t.Parallel()
	url, bodies := deferAPI(t, `{"token":"tok_r","status":"resolved","calls":[{"tool_call_id":"toolu_01HcWq7sYh3cVbY5Zp3kK2Xa","tool_name":"Bash"}],`+
		`"results":{"calls":{},"approvals":{"toolu_01HcWq7sYh3cVbY5Zp3kK2Xa":true},"metadata":{},"answered_by":{"toolu_01HcWq7sYh3cVbY5Zp3kK2Xa":"U0ALICE"}}}`)
	vars := map[string]string{"SLACKBOT_URL": url, "SLACKBOT_API_KEY": keyBilling, DeferEnv: "1",
		ResumeTokenEnv: "tok_r", ResumeCallEnv: "toolu_01HcWq7sYh3cVbY5Zp3kK2Xa"}
	r := waitHook(t, startHook(t.Context(), hookInput(t, "claude-code/bash.json"), vars, "claude-code"))
	if !strings.Contains(r.Stdout, `"permissionDecision":"allow"`) {
		t.Errorf("printed %s, want the approval", r.Stdout)
	}
	if sent := bodies(); len(sent) != 1 || sent[0]["_request"] != "GET /v1/approvals/tok_r" {
		t.Errorf("sent %v, want one GET of the resumed request", sent)
	}
}

// TestHookDeferSiblings: a run defers one call. Claude Code 2.1.332
// would defer every call of a reply and keep only the last on resume, the
// others gone unanswered; so a call whose run already deferred another
// is waited for, as without --defer (here nobody decides within
// --timeout: the hook cancels its request and denies). The run is told
// by the directory slackbot agent gives it, else by Claude Code's
// prompt_id; with neither the hook cannot tell, and waits.
func TestHookDeferSiblings(t *testing.T) {
	t.Parallel()
	const pending = `{"token":"tok_pending","status":"pending","expires_at":"2026-12-02T06:00:00Z"}`
	const deferred = `"permissionDecision":"defer"`
	fire := func(t *testing.T, vars map[string]string, call, prompt string) (out string, sent []string) {
		t.Helper()
		url, bodies := deferAPI(t, pending)
		vars["SLACKBOT_URL"], vars["SLACKBOT_API_KEY"], vars[DeferEnv] = url, keyBilling, "1"
		r := waitHook(t, startHook(t.Context(), withIDs(t, "claude-code/bash.json", call, prompt), vars, "claude-code", "--timeout", "1s"))
		for _, b := range bodies() {
			sent = append(sent, fmt.Sprint(b["_request"]))
		}
		return r.Stdout, sent
	}
	waited := func(t *testing.T, out string, sent []string) {
		t.Helper()
		if !strings.Contains(out, `"permissionDecision":"deny"`) || !strings.Contains(out, "nobody decided within 1s") {
			t.Errorf("printed %s, want the wait's denial, not a defer", out)
		}
		if len(sent) < 2 || sent[0] != "POST /v1/approvals" || sent[len(sent)-1] != "DELETE /v1/approvals/tok_pending" {
			t.Errorf("sent %q, want the create and, once the wait ended, the cancel", sent)
		}
	}
	for _, tt := range []struct {
		name string
		vars func(t *testing.T) map[string]string
	}{
		{"the run's directory", func(t *testing.T) map[string]string { return map[string]string{RunDirEnv: t.TempDir()} }},
		{"prompt_id", func(t *testing.T) map[string]string { return map[string]string{"XDG_CACHE_HOME": t.TempDir()} }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			vars := tt.vars(t)
			if out, _ := fire(t, vars, "toolu_first", "prompt_1"); !strings.Contains(out, deferred) {
				t.Fatalf("the run's first pending call: printed %s, want a defer", out)
			}
			out, sent := fire(t, vars, "toolu_sibling", "prompt_1")
			waited(t, out, sent)
			if out, _ := fire(t, vars, "toolu_first", "prompt_1"); !strings.Contains(out, deferred) {
				t.Errorf("the deferred call again: printed %s, want a defer", out)
			}
		})
	}
	t.Run("another run", func(t *testing.T) {
		t.Parallel()
		cache := t.TempDir()
		if out, _ := fire(t, map[string]string{"XDG_CACHE_HOME": cache}, "toolu_first", "prompt_1"); !strings.Contains(out, deferred) {
			t.Fatalf("printed %s, want a defer", out)
		}
		if out, _ := fire(t, map[string]string{"XDG_CACHE_HOME": cache}, "toolu_later", "prompt_2"); !strings.Contains(out, deferred) {
			t.Errorf("a call of the session's next run: printed %s, want a defer", out)
		}
		if out, _ := fire(t, map[string]string{RunDirEnv: t.TempDir()}, "toolu_resumed", ""); !strings.Contains(out, deferred) {
			t.Errorf("a call of a resumed run (its own directory, no prompt_id): printed %s, want a defer", out)
		}
	})
	t.Run("no way to tell the run", func(t *testing.T) {
		t.Parallel()
		out, sent := fire(t, map[string]string{"XDG_CACHE_HOME": t.TempDir()}, "toolu_first", "")
		waited(t, out, sent)
	})
}
