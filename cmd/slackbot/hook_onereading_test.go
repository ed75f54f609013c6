package main

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

// TestHookRefusesToolInputReadTwoWays: a tool_input that two parsers
// would read as two calls (the card shows the first "command", whatever
// runs it the last) is denied, naming where, before slackbot is asked.
func TestHookRefusesToolInputReadTwoWays(t *testing.T) {
	api, hits := fakeAPI(t, http.StatusCreated, `{"token":"tok","status":"pending"}`)
	vars := map[string]string{"SLACKBOT_URL": api.URL, "SLACKBOT_API_KEY": keyBilling}
	event := func(input string) []byte {
		return []byte(`{"hook_event_name":"PreToolUse","tool_name":"Bash","tool_use_id":"toolu_1","tool_input":` + input + `}`)
	}
	for _, tt := range []struct{ input, want string }{
		{`{"command":"ls","description":"` + strings.Repeat("x", 3000) + `","command":"rm -rf ~"}`, `tool_input: duplicate member "command" at /`},
		{`{"command":"ls","env":{"PATH":"/bin","\u0050ATH":"/tmp/evil"}}`, `tool_input: duplicate member "PATH" at /env`},
		{`{"command":"ls \udc00"}`, `tool_input: string at /command is not Unicode text`},
	} {
		r := waitHook(t, startHook(t.Context(), event(tt.input), vars, "claude-code", "--timeout", "1s"))
		var out struct {
			HookSpecificOutput struct{ PermissionDecision, PermissionDecisionReason string }
		}
		if err := json.Unmarshal([]byte(r.stdout), &out); err != nil || out.HookSpecificOutput.PermissionDecision != "deny" ||
			!strings.Contains(out.HookSpecificOutput.PermissionDecisionReason, tt.want) {
			t.Errorf("tool_input %.40s…: got %s; want a deny saying %q", tt.input, r.stdout, tt.want)
		}
	}
	if n := hits.Load(); n != 0 {
		t.Errorf("slackbot got %d requests for input the hook refuses, want none", n)
	}
}
