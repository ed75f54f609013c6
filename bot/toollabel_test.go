package bot

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/slackapprove/slackbot/agentrunner"
	"github.com/slackapprove/slackbot/approval"
	"github.com/slackapprove/slackbot/routing"
	"github.com/slackapprove/slackbot/runs"
)

// TestMCPToolLabel: an MCP server's tool is named one way on everything a
// person sees (header, body, notification text, modals), as its
// confirmation names it: "<server>.<tool>".
func TestMCPToolLabel(t *testing.T) {
	routes, err := routing.ParseRoutes([]byte(`routes:
  - channel: C0APPROVALS
    approvers: {users: ["U0ALICE"]}
mcp_servers:
  - name: fs
    command: ["mcp-server-filesystem", "/tmp"]
`), "routes.yaml")
	if err != nil {
		t.Fatal(err)
	}
	b := newTestBot(testConfig{Routes: routes})
	call := agentrunner.ToolCallPart{ToolName: "fs__write_file", Args: json.RawMessage(`{"path":"a.txt","content":"hi"}`), ToolCallID: "c1"}
	a := &approval.Request{Token: "tok", Requests: agentrunner.DeferredToolRequests{Approvals: []agentrunner.ToolCallPart{call}}}
	card := b.cards.card(a, &approval.Call{ID: "c1", Kind: agentrunner.KindApproval, Status: approval.CallPending})

	blocks, _ := json.Marshal(ApprovalBlocks(card))
	shown := map[string]string{
		"card":       string(blocks),
		"text":       ApprovalText(card),
		"arguments":  marshalText(t, ArgsModal(card)),
		"deny modal": marshalText(t, DenyReasonModal(card, approval.MessageRef{})),
		"edit modal": marshalText(t, EditArgsModal(card, approval.MessageRef{}, card.Args)),
	}
	for what, s := range shown {
		s = strings.ReplaceAll(s, "\u200b", "") // the zero-width spaces that keep _ from italicizing
		if strings.Contains(s, "fs__write_file") || !strings.Contains(s, "fs.write_file") {
			t.Errorf("%s names the tool other than fs.write_file:\n%s", what, s)
		}
	}
	for _, name := range []string{"write_file", "fsx__write_file", "fs__", "delete_file"} {
		if got := b.cards.toolLabel(name); got != name {
			t.Errorf("toolLabel(%q) = %q, want it unchanged", name, got)
		}
	}
}

// TestFailureWordedOnce: a failed tool's outcome on its card reads "The
// tool failed: <the error>", without the runner's "Tool failed: " and
// without the tool's name again.
func TestFailureWordedOnce(t *testing.T) {
	routes, err := routing.ParseRoutes([]byte("routes:\n  - channel: C0APPROVALS\n    approvers: {users: [U0ALICE]}\nmcp_servers:\n  - name: fs\n    command: [x]\n"), "r.yaml")
	if err != nil {
		t.Fatal(err)
	}
	b := newTestBot(testConfig{Routes: routes})
	tests := []struct{ tool, ret, want string }{
		{"fs__write_file", "Tool failed: fs.write_file: EEXIST: file already exists", "🔴 The tool failed: EEXIST: file already exists"},
		{"delete_file", "Tool failed: disk full", "🔴 The tool failed: disk full"},
		{"delete_file", "Tool failed: ", "🔴 The tool failed."},
	}
	for _, tt := range tests {
		p := agentrunner.ToolReturn(tt.tool, "c1", json.RawMessage(marshalText(t, tt.ret)), agentrunner.OutcomeFailed)
		got := outcomeText(approval.Outcome{Status: OutcomeFailed, Summary: runs.FailureSummary(p, b.ToolLabel(p.ToolName))}, maxSectionText)
		if got != tt.want {
			t.Errorf("%s returning %q: got %q, want %q", tt.tool, tt.ret, got, tt.want)
		}
	}
}

func marshalText(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestPermissionPromptCard: a coding agent's permission prompt (the MCP
// gateway's approval_prompt) leads with what its tool will do and can be
// edited.
func TestPermissionPromptCard(t *testing.T) {
	routes, err := routing.ParseRoutes([]byte("routes:\n  - channel: C0APPROVALS\n    approvers: {users: [U0ALICE]}\n"), "r.yaml")
	if err != nil {
		t.Fatal(err)
	}
	b := newTestBot(testConfig{Routes: routes})
	call := agentrunner.ToolCallPart{ToolName: "Bash", Args: json.RawMessage(`{"command":"rm -rf build/"}`), ToolCallID: "toolu_1"}
	a := &approval.Request{Token: "tok", Requests: agentrunner.DeferredToolRequests{
		Approvals: []agentrunner.ToolCallPart{call},
		Metadata:  map[string]map[string]any{"toolu_1": {approval.MetaPermissionPrompt: "Claude Code"}},
	}}
	card := b.cards.card(a, &approval.Call{ID: "toolu_1", Kind: agentrunner.KindApproval, Status: approval.CallPending})
	if card.PromptAgent != "Claude Code" || !card.AllowEdit {
		t.Errorf("card prompt agent %q, edit %v; want Claude Code, editable", card.PromptAgent, card.AllowEdit)
	}
	// Bash's change is its command: the card leads with it as code.
	if got := normalize(card).Confirmation; got != "Claude Code wants to run a command" || card.Change == nil || card.Change.Text != "rm -rf build/" {
		t.Errorf("confirmation %q, change %+v", got, card.Change)
	}
	// A tool with no change to show leads with its input.
	a.Requests.Approvals[0].ToolName = "WebFetch"
	a.Requests.Approvals[0].Args = json.RawMessage(`{"url":"https://example.com/x"}`)
	card = b.cards.card(a, &approval.Call{ID: "toolu_1", Kind: agentrunner.KindApproval, Status: approval.CallPending})
	if got := normalize(card).Confirmation; got != "Claude Code wants to run `WebFetch`: `https://example.com/x`" {
		t.Errorf("confirmation %q", got)
	}
	a.Requests.Approvals[0].ToolName = "Bash"
	a.Requests.Metadata = nil
	if card := b.cards.card(a, &approval.Call{ID: "toolu_1", Kind: agentrunner.KindApproval, Status: approval.CallPending}); card.PromptAgent != "" || card.AllowEdit {
		t.Errorf("a Bash call not from a prompt: prompt agent %q, edit %v; want neither", card.PromptAgent, card.AllowEdit)
	}
}
