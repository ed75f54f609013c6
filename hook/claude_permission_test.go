package hook

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/slackapprove/slackbot/agentrunner"
	"github.com/slackapprove/slackbot/client"
)

// permissionAPI is a server in slackbot's place that keeps the create
// request the hook sent and answers the first long poll with the request
// ended as end says, given the call id the hook chose.
func permissionAPI(t *testing.T, end func(callID string) string) (*httptest.Server, func() client.CreateRequest) {
	t.Helper()
	var mu sync.Mutex
	var created client.CreateRequest
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		mu.Lock()
		defer mu.Unlock()
		switch {
		case r.Method == http.MethodPost && r.URL.Path == "/v1/approvals":
			if err := json.NewDecoder(r.Body).Decode(&created); err != nil {
				t.Errorf("create: %v", err)
			}
			w.WriteHeader(http.StatusCreated)
			_, _ = w.Write([]byte(`{"token":"tok","status":"pending"}`))
		case r.Method == http.MethodGet && r.URL.Path == "/v1/approvals/tok":
			_, _ = w.Write([]byte(end(created.Approvals[0].ToolCallID)))
		default:
			w.WriteHeader(http.StatusNotFound)
		}
	}))
	t.Cleanup(srv.Close)
	return srv, func() client.CreateRequest { mu.Lock(); defer mu.Unlock(); return created }
}

// resolved is a resolved request's body with the decision on callID
// (its wire form) and the metadata of the call.
func resolved(callID string, decision agentrunner.ApprovalResult, metadata string) string {
	d, _ := json.Marshal(decision)
	body := `{"token":"tok","status":"resolved","results":{"approvals":{"` + callID + `":` + string(d) + `},"answered_by":{"` + callID + `":"U0ALICE"}`
	if metadata != "" {
		body += `,"metadata":{"` + callID + `":` + metadata + `}`
	}
	return body + `}}`
}

// The rule permission_bash.json offers, as slackbot stores it (a decoded
// object, its keys sorted).
const offeredRule = `{"behavior":"allow","destination":"localSettings","rules":[{"ruleContent":"npm test:*","toolName":"Bash"}],"type":"addRules"}`

// TestHookClaudePermissionRequest: Claude Code's PermissionRequest gets
// its own decision shape: allow, allow with updatedInput, allow with the
// always-allow rule it offered (updatedPermissions, exactly as Claude
// Code wrote it), deny with the reason as the message; an approval with
// a rule it did not offer, an expiry and slackbot down deny.
func TestHookClaudePermissionRequest(t *testing.T) {
	t.Parallel()
	input := hookInput(t, "claude-code/permission_bash.json")
	edited := json.RawMessage(`{"command":"npm test -- --runInBand --bail","description":"Run the test suite"}`)
	for _, tt := range []struct {
		name, golden string
		end          func(callID string) string
	}{
		{"approved", "claude-code-permission-allow", func(id string) string { return resolved(id, agentrunner.Approve(), "") }},
		{"always allowed", "claude-code-permission-always", func(id string) string {
			return resolved(id, agentrunner.Approve(), `{"`+agentrunner.MetaAlwaysAllow+`":`+offeredRule+`}`)
		}},
		{"approved with edited input", "claude-code-permission-edited", func(id string) string { return resolved(id, agentrunner.ApproveWith(edited), "") }},
		{"denied with a reason", "claude-code-permission-deny", func(id string) string {
			return resolved(id, agentrunner.Deny("Run the tests in CI, not on the release box."), "")
		}},
		{"a rule it did not offer", "claude-code-permission-foreign-rule", func(id string) string {
			return resolved(id, agentrunner.Approve(), `{"`+agentrunner.MetaAlwaysAllow+`":`+strings.Replace(offeredRule, "npm test:*", "*", 1)+`}`)
		}},
		{"expired", "claude-code-permission-expired", func(string) string { return `{"token":"tok","status":"expired"}` }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			api, created := permissionAPI(t, tt.end)
			r := waitHook(t, startHook(t.Context(), input, map[string]string{"SLACKBOT_URL": api.URL, "SLACKBOT_API_KEY": keyBilling}, "claude-code"))
			checkHookGolden(t, tt.golden, r.Stdout)
			req := created()
			md := req.Metadata[req.Approvals[0].ToolCallID]
			rule, _ := json.Marshal(md[agentrunner.MetaAlwaysAllow])
			if string(rule) != offeredRule || md[agentrunner.MetaAgentSession] != "8f3b2c1a-5d4e-4f6a-9b7c-2e1d0a9f8c7b" {
				t.Errorf("the create offered %s for session %v; want the addRules suggestion %s and the session", rule, md[agentrunner.MetaAgentSession], offeredRule)
			}
		})
	}
	t.Run("slackbot down", func(t *testing.T) {
		t.Parallel()
		down := closedPort(t)
		r := waitHook(t, startHook(t.Context(), input, map[string]string{"SLACKBOT_URL": "http://" + down, "SLACKBOT_API_KEY": keyBilling}, "claude-code"))
		checkHookGolden(t, "claude-code-permission-fail-down", r.Stdout, "URL", "http://"+down, "ADDR", down)
	})
}

// TestHookClaudePermissionOffersOnlyRules: suggestions that are no
// always-allow rule (a mode, directories, a deny rule, an oversized
// rule) are not offered to slackbot, and none means no metadata at all.
func TestHookClaudePermissionOffersOnlyRules(t *testing.T) {
	t.Parallel()
	for _, suggestions := range []string{
		`[]`,
		`[{"type":"setMode","mode":"acceptEdits","destination":"session"}]`,
		`[{"type":"addDirectories","directories":["/etc"],"destination":"session"}]`,
		`[{"type":"addRules","rules":[{"toolName":"Bash"}],"behavior":"deny","destination":"session"}]`,
		`[{"type":"addRules","rules":[{"toolName":"Bash","ruleContent":"` + strings.Repeat("x", 3000) + `"}],"behavior":"allow","destination":"session"}]`,
		`[{"type":"addRules","rules":[{"toolName":"Bash","ruleContent":"ls\u0007"}],"behavior":"allow","destination":"session"}]`,
		`"not an array"`,
	} {
		api, created := permissionAPI(t, func(id string) string { return resolved(id, agentrunner.Approve(), "") })
		input := `{"session_id":"s","cwd":"/w","hook_event_name":"PermissionRequest","tool_name":"Bash","tool_input":{"command":"ls"},"permission_suggestions":` + suggestions + `}`
		r := waitHook(t, startHook(t.Context(), []byte(input), map[string]string{"SLACKBOT_URL": api.URL, "SLACKBOT_API_KEY": keyBilling}, "claude-code"))
		if !strings.Contains(r.Stdout, `"behavior":"allow"`) || strings.Contains(r.Stdout, "updatedPermissions") {
			t.Errorf("suggestions %.60s: printed %s; want a plain allow", suggestions, r.Stdout)
		}
		for _, md := range created().Metadata {
			if _, ok := md[agentrunner.MetaAlwaysAllow]; ok {
				t.Errorf("suggestions %.60s: offered %v; want no always-allow rule", suggestions, md)
			}
		}
	}
}
