package hook

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

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
