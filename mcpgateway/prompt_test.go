package mcpgateway_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/slackapprove/slackbot/approval"
	"github.com/slackapprove/slackbot/bot"
	"github.com/slackapprove/slackbot/internal/slacktest"
)

// Permission requests as Claude Code sends them to its
// --permission-prompt-tool, for Bash, Edit and an MCP tool.
var recordedPrompts = map[string]string{
	"Bash": `{"tool_name":"Bash","input":{"command":"rm -rf build/","description":"Remove the build directory"},"tool_use_id":"toolu_01Bash7xQ2"}`,
	"Edit": `{"tool_name":"Edit","input":{"file_path":"/repo/main.go","old_string":"v1","new_string":"v2"},"tool_use_id":"toolu_01Edit9kP4"}`,
	"MCP":  `{"tool_name":"mcp__github__create_issue","input":{"owner":"acme","repo":"web","title":"Broken build"},"tool_use_id":"toolu_01Mcp3zR8"}`,
}

func TestApprovalPrompt(t *testing.T) {
	tests := []struct {
		prompt   string
		decision approval.Decision
		want     string
		card     string
	}{
		{"Bash", approval.Decision{Action: approval.ActionApprove},
			`{"behavior":"allow","updatedInput":{"command":"rm -rf build/","description":"Remove the build directory"}}`,
			"Claude Code wants to run a command"},
		{"Bash", approval.Decision{Action: approval.ActionApprove, OverrideArgs: json.RawMessage(`{"command":"rm -rf build/tmp","description":"Remove the build directory"}`)},
			`{"behavior":"allow","updatedInput":{"command":"rm -rf build/tmp","description":"Remove the build directory"}}`, ""},
		{"Bash", approval.Decision{Action: approval.ActionDeny, Reason: "Not on main."},
			`{"behavior":"deny","message":"Not on main."}`, ""},
		{"Edit", approval.Decision{Action: approval.ActionApprove},
			`{"behavior":"allow","updatedInput":{"file_path":"/repo/main.go","old_string":"v1","new_string":"v2"}}`,
			"Claude Code wants to edit /repo/main.go"},
		{"Edit", approval.Decision{Action: approval.ActionApprove, OverrideArgs: json.RawMessage(`{"file_path":"/repo/main.go","old_string":"v1","new_string":"v3"}`)},
			`{"behavior":"allow","updatedInput":{"file_path":"/repo/main.go","old_string":"v1","new_string":"v3"}}`, ""},
		{"Edit", approval.Decision{Action: approval.ActionDeny},
			`{"behavior":"deny","message":"The tool call was denied."}`, ""},
		{"MCP", approval.Decision{Action: approval.ActionApprove},
			`{"behavior":"allow","updatedInput":{"owner":"acme","repo":"web","title":"Broken build"}}`,
			"Claude Code wants to run `mcp__github__create_issue`"},
		{"MCP", approval.Decision{Action: approval.ActionApprove, OverrideArgs: json.RawMessage(`{"owner":"acme","repo":"web","title":"Build broken on main"}`)},
			`{"behavior":"allow","updatedInput":{"owner":"acme","repo":"web","title":"Build broken on main"}}`, ""},
		{"MCP", approval.Decision{Action: approval.ActionDeny, Reason: "File it in Jira."},
			`{"behavior":"deny","message":"File it in Jira."}`, ""},
	}
	e := newEnv(t, envOptions{})
	cs := e.client(billingKey, nil)
	for i, tt := range tests {
		t.Run(tt.prompt+"/"+string(tt.decision.Action), func(t *testing.T) {
			// Each case is its own request: the same tool_use_id would get
			// the first case's decision.
			args := strings.Replace(recordedPrompts[tt.prompt], `"tool_use_id":"`, `"tool_use_id":"`+itoa(i)+`_`, 1)
			ch := call(t.Context(), cs, &mcp.CallToolParams{Name: "approval_prompt", Arguments: json.RawMessage(args)})
			token, callID, card := e.waitCard(i + 1)
			if tt.card != "" {
				blocks, _ := json.Marshal(card.Blocks)
				if !strings.Contains(string(blocks), jsonString(tt.card)) {
					t.Errorf("card %s; want it to lead with %q", blocks, tt.card)
				}
				// The change itself, as code: the command, the diff's lines.
				for _, part := range map[string][]string{"Bash": {"rm -rf build/"}, "Edit": {"-v1", "+v2"}}[tt.prompt] {
					if !strings.Contains(string(blocks), jsonString(part)) {
						t.Errorf("card %s; want it to show %q", blocks, part)
					}
				}
				if _, ok := slacktest.Button(card, bot.ActionIDEdit); !ok {
					t.Errorf("card %s; want an Edit button: the input may be edited before it runs", blocks)
				}
			}
			r, err := e.svc.Get(t.Context(), token)
			if err != nil {
				t.Fatal(err)
			}
			var in struct {
				ToolName  string `json:"tool_name"`
				ToolUseID string `json:"tool_use_id"`
			}
			_ = json.Unmarshal([]byte(args), &in)
			if c := r.Calls[0]; c.Tool != in.ToolName || c.ID != in.ToolUseID || c.Route != "writes" {
				t.Errorf("call %s %s on route %q; want the prompted tool %s, id %s, routed as such", c.Tool, c.ID, c.Route, in.ToolName, in.ToolUseID)
			}
			e.decide(token, callID, tt.decision)
			res := wait(t, ch)
			if len(res.Content) != 1 || res.IsError {
				t.Fatalf("result %+v; want one text item, not an error", res)
			}
			if got := text(res); got != tt.want {
				t.Errorf("got  %s\nwant %s", got, tt.want)
			}
		})
	}

	// Claude Code asking again for the same tool use gets the same answer,
	// with no second card.
	again := strings.Replace(recordedPrompts["Bash"], `"tool_use_id":"`, `"tool_use_id":"2_`, 1)
	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "approval_prompt", Arguments: json.RawMessage(again)})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := text(res), tests[2].want; got != want || len(e.cards()) != len(tests) {
		t.Errorf("the same prompt again: %s with %d cards; want %s with %d", got, len(e.cards()), want, len(tests))
	}
}

// jsonString is s as it appears inside a JSON string.
func jsonString(s string) string {
	b, _ := json.Marshal(s)
	return strings.Trim(string(b), `"`)
}

func TestApprovalPromptAutoApprovedAndBadInput(t *testing.T) {
	e := newEnv(t, envOptions{})
	cs := e.client(billingKey, nil)
	tests := []struct {
		name string
		args map[string]any
		want string
	}{
		{"a route's policy approves Read", map[string]any{"tool_name": "Read", "input": map[string]any{"file_path": "/repo/go.mod"}, "tool_use_id": "toolu_r1"},
			`{"behavior":"allow","updatedInput":{"file_path":"/repo/go.mod"}}`},
		{"no route for the tool", map[string]any{"tool_name": "NotebookEdit", "input": map[string]any{"notebook_path": "/a.ipynb"}, "tool_use_id": "toolu_n1"},
			`"behavior":"deny"`},
		{"no tool name", map[string]any{"input": map[string]any{}}, `{"behavior":"deny","message":"approval_prompt: tool_name is required"}`},
		{"input not an object", map[string]any{"tool_name": "Bash", "input": "rm -rf /"}, `{"behavior":"deny","message":"approval_prompt: input must be the tool's input object"}`},
	}
	for _, tt := range tests {
		res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "approval_prompt", Arguments: tt.args})
		if err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		if got := text(res); !strings.Contains(got, tt.want) || len(res.Content) != 1 {
			t.Errorf("%s: got %s; want %s", tt.name, got, tt.want)
		}
	}
	if n := len(e.cards()); n != 0 {
		t.Errorf("%d cards; want none", n)
	}
}
