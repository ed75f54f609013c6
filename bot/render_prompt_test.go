package bot

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestPromptConfirmation(t *testing.T) {
	long := strings.Repeat("x", maxPromptLead+10)
	tests := []struct {
		name, tool, args, want string
	}{
		{"bash", "Bash", `{"command":"rm -rf build/"}`, "Claude Code wants to run `Bash`: `rm -rf build/`"},
		{"bash with the rest", "Bash", `{"command":"make","description":"Build it"}`,
			"Claude Code wants to run `Bash`: `make`, with {\"description\":\"Build it\"}"},
		{"edit leads with the file", "Edit", `{"file_path":"/repo/main.go","old_string":"a","new_string":"b"}`,
			"Claude Code wants to run `Edit`: `/repo/main.go`, with {\"new_string\":\"b\",\"old_string\":\"a\"}"},
		{"web fetch leads with the url", "WebFetch", `{"url":"https://example.com","prompt":"summarize"}`,
			"Claude Code wants to run `WebFetch`: `https://example.com`, with {\"prompt\":\"summarize\"}"},
		{"mcp tool has no lead", "mcp__github__create_issue", `{"owner":"acme","title":"Broken"}`,
			"Claude Code wants to run `mcp__github__create_issue`, with {\"owner\":\"acme\",\"title\":\"Broken\"}"},
		{"empty input", "ExitPlanMode", `{}`, "Claude Code wants to run `ExitPlanMode`"},
		{"long command cut in its middle", "Bash", `{"command":"` + long + `"}`,
			"Claude Code wants to run `Bash`: `" + long[:maxPromptLead/2-textLen(endsGap)] + endsGap + long[:maxPromptLead/2] + "`"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := promptConfirmation("Claude Code", tt.tool, json.RawMessage(tt.args)); got != tt.want {
				t.Errorf("got  %q\nwant %q", got, tt.want)
			}
		})
	}
}

func TestPromptCardRendersTheLead(t *testing.T) {
	c := goldenCards()["pending_permission_prompt"]
	blocks, _ := json.Marshal(ApprovalBlocks(c))
	if !strings.Contains(string(blocks), "Claude Code wants to run `Bash`: `rm -rf build/`") {
		t.Errorf("card %s; want it to lead with the command", blocks)
	}
	c.Confirmation = "Explicit text"
	if blocks, _ := json.Marshal(ApprovalBlocks(c)); strings.Contains(string(blocks), "wants to run") {
		t.Errorf("card %s; want a set confirmation to win", blocks)
	}
}
