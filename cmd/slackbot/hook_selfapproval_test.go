package main

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/slackapprove/slackbot/bot"
	"github.com/slackapprove/slackbot/internal/apitest"
)

// hookSelfRoutes are hookRoutes plus a route where the key that asks may
// approve its own calls at /v1.
const hookSelfRoutes = hookRoutes + `  - name: notebooks
    when: {tools: ["NotebookEdit"]}
    channel: C0APPROVALS
    approvers: {users: [U0ALICE]}
    allow_self_approval: true
`

// notebookEdit is a PreToolUse event for a tool of the notebooks route.
const notebookEdit = `{"session_id":"8f3b2c1a-5d4e-4f6a-9b7c-2e1d0a9f8c7b","cwd":"/home/dev/shop","hook_event_name":"PreToolUse",` +
	`"tool_name":"NotebookEdit","tool_input":{"notebook_path":"/home/dev/shop/report.ipynb","new_source":"print(1)"},"tool_use_id":"toolu_01Self"}`

// TestHookRunsNothingItsKeyApproved: the hook's key, reading the token
// from the card, cannot approve the hook's call through /v1 (403
// self_approval, the hook still waits for a person); where a route lets
// it, the key's approval is recorded, but the hook answers deny: it runs
// only what a person, a policy or a grant approved.
func TestHookRunsNothingItsKeyApproved(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{routes: hookSelfRoutes, apiKeys: "billing=" + keyBilling, wallClock: true})
	vars := e.hookVars(keyBilling)
	doc := apitest.Load(t)
	approve := func(card string) (int, []byte) {
		token, callID := e.requestOfCard(t, e.waitLiveCard(t, 0, card))
		return e.apiCall(doc, keyBilling, http.MethodPost, "/v1/approvals/"+token+"/results", `{"approvals":{"`+callID+`":true}}`)
	}

	done := startHook(t.Context(), hookInput(t, "claude-code/bash.json"), vars, "claude-code")
	if status, b := approve("rm -rf build/"); status != http.StatusForbidden || !strings.Contains(string(b), `"self_approval"`) {
		t.Fatalf("the hook's key approves its call: got %d %s, want 403 self_approval", status, b)
	}
	select {
	case r := <-done:
		t.Fatalf("the hook answered before a person decided: %s", r.Stdout)
	default:
	}
	e.clickCard(t, alice, e.waitLiveCard(t, 0, "rm -rf build/"), bot.ActionIDApprove)
	checkHookGolden(t, "claude-code-bash-allow", waitHook(t, done).Stdout)

	done = startHook(t.Context(), []byte(notebookEdit), vars, "claude-code")
	if status, b := approve("NotebookEdit"); status != http.StatusOK {
		t.Fatalf("the key approves its call where the route allows it: got %d %s", status, b)
	}
	var out struct {
		HookSpecificOutput struct {
			PermissionDecision       string `json:"permissionDecision"`
			PermissionDecisionReason string `json:"permissionDecisionReason"`
		} `json:"hookSpecificOutput"`
	}
	r := waitHook(t, done)
	if err := json.Unmarshal([]byte(r.Stdout), &out); err != nil {
		t.Fatalf("hook output %q: %v", r.Stdout, err)
	}
	if got := out.HookSpecificOutput; got.PermissionDecision != "deny" || !strings.Contains(got.PermissionDecisionReason, "billing") {
		t.Errorf("the hook answered %s; want deny, naming the key that approved", r.Stdout)
	}
}
