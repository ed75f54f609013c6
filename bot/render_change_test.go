package bot

import (
	"fmt"
	"strings"
	"testing"

	"github.com/slack-go/slack"

	"github.com/slackapprove/slackbot/agentrunner"
	"github.com/slackapprove/slackbot/approval"
)

// agentCard is a pending card of a coding agent's call of tool with args,
// its change built by approval from the arguments, as Viewer.View does.
func agentCard(t testing.TB, agent, tool string, args any, md map[string]any) Card {
	t.Helper()
	raw := mustMarshal(t, args)
	ch := approval.BuildChange(agent, tool, raw, md)
	if ch == nil {
		t.Fatalf("no change for %s %s %s", agent, tool, raw)
	}
	return Card{
		Token: testToken, ToolCallID: "toolu_01", Kind: agentrunner.KindApproval, ToolName: tool, Args: raw,
		Confirmation: ch.Lead(), Requester: "laptop", RequesterClaim: approval.AgentName(agent) + " (/home/dev/shop)",
		Route: "agent-writes", Mentions: []string{"S0DEVS"}, CreatedAt: created, ExpiresAt: expires, RequiredApprovals: 1,
		AllowDenyReason: true, AllowEdit: true, State: approval.CallPending, Change: ch,
	}
}

// changeCards are the agent cards pinned in testdata/golden.
func changeCards(t testing.TB) map[string]Card {
	var long strings.Builder
	for i := range 400 {
		fmt.Fprintf(&long, "\tlog.Printf(\"step %d of the migration\")\n", i)
	}
	edits := []map[string]any{
		{"old_string": "const retries = 3", "new_string": "const retries = 5"},
		{"old_string": "timeout: 30s", "new_string": "timeout: 90s", "replace_all": true},
	}
	return map[string]Card{
		"change_bash": agentCard(t, approval.AgentClaudeCode, "Bash", map[string]any{
			"command": "rm -rf build/ && npm run build", "description": "Rebuild the app from scratch", "timeout": 120000}, nil),
		"change_edit": agentCard(t, approval.AgentClaudeCode, "Edit", map[string]any{
			"file_path":  "/home/dev/shop/src/cart.ts",
			"old_string": "export function total(items: Item[]) {\n  return items.reduce((s, i) => s + i.price, 0);\n}\n",
			"new_string": "export function total(items: Item[]) {\n  return items.reduce((s, i) => s + i.price * i.quantity, 0);\n}\n"}, nil),
		"change_multiedit": agentCard(t, approval.AgentClaudeCode, "MultiEdit", map[string]any{"file_path": "/home/dev/shop/config.ts", "edits": edits}, nil),
		"change_write": agentCard(t, approval.AgentClaudeCode, "Write", map[string]any{"file_path": "/home/dev/shop/.env.example", "content": "PORT=8080\nLOG_LEVEL=debug\n"},
			map[string]any{approval.MetaLocalDiff: "--- /home/dev/shop/.env.example\n+++ /home/dev/shop/.env.example\n@@ -1,2 +1,2 @@\n PORT=8080\n-LOG_LEVEL=info\n+LOG_LEVEL=debug\n"}),
		"change_codex_apply_patch": agentCard(t, approval.AgentCodex, "apply_patch", map[string]any{
			"command": "*** Begin Patch\n*** Update File: src/cart.ts\n@@ export function total\n-  return items.reduce((s, i) => s + i.price, 0);\n+  return items.reduce((s, i) => s + i.price * i.quantity, 0);\n*** End Patch\n"}, nil),
		"change_long_diff": agentCard(t, approval.AgentClaudeCode, "Edit", map[string]any{
			"file_path": "/home/dev/shop/migrate.go", "old_string": long.String(), "new_string": strings.ReplaceAll(long.String(), "log.Printf", "slog.Info")}, nil),
	}
}

// hostileChanges are changes whose every text tries to mention, link,
// format and close code blocks, some of them too long for a card, a
// modal or slackbot itself.
func hostileChanges(t testing.TB) map[string]*approval.Change {
	t.Helper()
	lines := strings.Repeat(hostile+"\n```\n", 400)
	edits := make([]map[string]any, 300)
	for i := range edits {
		edits[i] = map[string]any{"old_string": fmt.Sprint(i, hostile), "new_string": hostile + "\n```"}
	}
	path := "`/etc/passwd` ```\n<!channel> <https://evil.example|ok> EVIL"
	build := func(agent, tool string, args any, md map[string]any) *approval.Change {
		ch := approval.BuildChange(agent, tool, mustMarshal(t, args), md)
		if ch == nil {
			t.Fatalf("no change for %s %s", agent, tool)
		}
		return ch
	}
	return map[string]*approval.Change{
		"bash":      build(approval.AgentClaudeCode, "Bash", map[string]any{"command": hostile + "\n```\n" + hostile, "description": hostile, "EVIL <!here>": hostile}, nil),
		"edit":      build(approval.AgentClaudeCode, "Edit", map[string]any{"file_path": path, "old_string": lines, "new_string": strings.ToUpper(lines)}, nil),
		"multiedit": build(approval.AgentClaudeCode, "MultiEdit", map[string]any{"file_path": path, "edits": edits}, nil),
		"write": build(approval.AgentGemini, "write_file", map[string]any{"file_path": path, "content": lines},
			map[string]any{approval.MetaLocalDiff: strings.Repeat("-"+hostile+"\n+```\n", 2000)}),
		"patch": build(approval.AgentCodex, "apply_patch", map[string]any{"command": strings.Repeat(hostile+"\n", approval.MaxChangeText/len(hostile)+10)}, nil),
	}
}

func TestChangeCardsGolden(t *testing.T) {
	for name, c := range changeCards(t) {
		t.Run(name, func(t *testing.T) {
			blocks := ApprovalBlocks(c)
			checkMessage(t, c, blocks)
			checkGolden(t, name, marshalGolden(t, map[string]any{"text": ApprovalText(c), "blocks": slack.Blocks{BlockSet: blocks}}))
		})
	}
	// Approved with an edit: what was asked and what runs, both as diffs.
	c := changeCards(t)["change_edit"]
	c.State, c.DecidedBy, c.DecidedAt = approval.CallApproved, "U0BOB", decided
	c.OverrideArgs = mustMarshal(t, map[string]any{"file_path": c.Change.Path, "old_string": "  return items.reduce((s, i) => s + i.price, 0);\n",
		"new_string": "  return items.reduce((s, i) => s + i.price * (i.quantity ?? 1), 0);\n"})
	c.EditedChange = approval.BuildChange(approval.AgentClaudeCode, "Edit", c.OverrideArgs, nil)
	blocks := ApprovalBlocks(c)
	checkMessage(t, c, blocks)
	checkGolden(t, "change_edit_approved_edited", marshalGolden(t, map[string]any{"text": ApprovalText(c), "blocks": slack.Blocks{BlockSet: blocks}}))
	all := strings.Join(texts(toJSON(t, slack.Blocks{BlockSet: blocks})), "\n")
	for _, want := range []string{"*Arguments as requested*\n*Diff*", "*Arguments as approved (edited)*\n*Diff*", "+  return items.reduce((s, i) =&gt; s + i.price * (i.quantity ?? 1), 0);"} {
		if !strings.Contains(all, want) {
			t.Errorf("the approved card does not show %q:\n%s", want, all)
		}
	}

	c = changeCards(t)["change_long_diff"]
	view := ArgsModal(c)
	checkModal(t, c, view)
	checkGolden(t, "modal_change_long_diff", marshalGolden(t, view))
	view = EditArgsModal(changeCards(t)["change_edit"], testRef, nil)
	checkModal(t, c, view)
	checkGolden(t, "modal_edit_change", marshalGolden(t, view))
}

// TestChangeCardsAtAGlance checks what an approver of an agent's call
// sees: the lead, the command or diff as code under its label, the
// agent's description as its words, the other arguments, and a View full
// diff button only when the diff does not fit.
func TestChangeCardsAtAGlance(t *testing.T) {
	tests := []struct {
		card        string
		wantActions []string
		wantText    []string
	}{
		{"change_bash", []string{"approve", "deny", "deny_reason", "edit"}, []string{
			"Claude Code wants to run a command", "*Command*\n```\nrm -rf build/ &amp;&amp; npm run build\n```",
			"The agent's description: “Rebuild the app from scratch”", "Other arguments: `{\"timeout\":120000}`"}},
		{"change_edit", []string{"approve", "deny", "deny_reason", "edit"}, []string{
			"Claude Code wants to edit /home/dev/shop/src/cart.ts", "*Diff* `/home/dev/shop/src/cart.ts`\n```\n--- /home/dev/shop/src/cart.ts\n+++ /home/dev/shop/src/cart.ts\n@@ -1,3 +1,3 @@\n export function total(items: Item[]) {\n-  return items.reduce((s, i) =&gt; s + i.price, 0);\n+  return items.reduce((s, i) =&gt; s + i.price * i.quantity, 0);\n }\n```"}},
		{"change_multiedit", []string{"approve", "deny", "deny_reason", "edit"}, []string{"(edit 1 of 2)", "(edit 2 of 2, every occurrence)", "-timeout: 30s\n+timeout: 90s"}},
		{"change_write", []string{"approve", "deny", "deny_reason", "edit"}, []string{
			"*Content* `/home/dev/shop/.env.example`\n```\nPORT=8080\nLOG_LEVEL=debug\n```", "computed on the agent's machine by its hook", "-LOG_LEVEL=info\n+LOG_LEVEL=debug"}},
		{"change_codex_apply_patch", []string{"approve", "deny", "deny_reason", "edit"}, []string{"Codex wants to apply a patch", "*Patch*\n```\n*** Begin Patch\n*** Update File: src/cart.ts"}},
		{"change_long_diff", []string{"view_args", "approve", "deny", "deny_reason", "edit"}, []string{
			"characters not shown", "of the diff. Use *View full diff* to see the rest.", "+\tslog.Info(\"step 399 of the migration\")"}},
	}
	cards := changeCards(t)
	for _, tt := range tests {
		t.Run(tt.card, func(t *testing.T) {
			v := toJSON(t, slack.Blocks{BlockSet: ApprovalBlocks(cards[tt.card])})
			if got := actionIDs(v); strings.Join(got, ",") != strings.Join(tt.wantActions, ",") {
				t.Errorf("buttons = %q, want %q", got, tt.wantActions)
			}
			all := strings.Join(texts(v), "\n")
			for _, want := range tt.wantText {
				if !strings.Contains(all, want) {
					t.Errorf("rendered text does not contain %q; text:\n%s", want, all)
				}
			}
			if strings.Contains(all, `"command":`) || strings.Contains(all, `"old_string"`) {
				t.Errorf("the card shows the arguments' JSON, want the change only:\n%s", all)
			}
		})
	}
	// A notification, one line, still says which command runs.
	if got := ApprovalText(cards["change_bash"]); !strings.Contains(got, "Claude Code wants to run a command: rm -rf build/ &amp;&amp; npm run build") {
		t.Errorf("ApprovalText = %q, want the command in it", got)
	}
	// The button on a long diff is labelled for it.
	for _, b := range find(toJSON(t, slack.Blocks{BlockSet: ApprovalBlocks(cards["change_long_diff"])}), "button") {
		if b["action_id"] == ActionIDViewArgs && b["text"].(map[string]any)["text"] != "View full diff" {
			t.Errorf("view button says %v, want View full diff", b["text"])
		}
	}
}

// TestChangeModalShowsAll checks that View full diff shows every line of
// a diff a card cuts, and that a change longer than slackbot keeps says
// that all of it runs.
func TestChangeModalShowsAll(t *testing.T) {
	c := changeCards(t)["change_long_diff"]
	all := strings.Join(texts(toJSON(t, ArgsModal(c))), "\n")
	for i := range 400 {
		if want := fmt.Sprintf("+\tslog.Info(\"step %d of the migration\")", i); !strings.Contains(all, want) {
			t.Fatalf("the modal lacks %q", want)
		}
	}
	ch := hostileChanges(t)["patch"]
	if !ch.Cut {
		t.Fatal("a patch longer than MaxChangeText is not cut")
	}
	c.Change = ch
	for name, v := range map[string]any{"card": slack.Blocks{BlockSet: ApprovalBlocks(c)}, "modal": ArgsModal(c)} {
		if all := strings.Join(texts(toJSON(t, v)), "\n"); !strings.Contains(all, "the whole of it runs") {
			t.Errorf("%s does not say a cut change runs whole", name)
		}
	}
}

// TestAgentEditForm checks the form that edits an agent's call: one input
// per field, prefilled, no JSON; a field too long for Slack is shown and
// kept; its submission edits only those fields.
func TestAgentEditForm(t *testing.T) {
	c := changeCards(t)["change_edit"]
	view := EditArgsModal(c, testRef, c.Args)
	v := toJSON(t, view)
	var ids []string
	for _, in := range find(v, "plain_text_input") {
		ids = append(ids, in["action_id"].(string))
	}
	if want := "field.file_path,field.old_string,field.new_string"; strings.Join(ids, ",") != want {
		t.Errorf("inputs %v, want %s", ids, want)
	}
	if view.Submit == nil || strings.Contains(strings.Join(texts(v), "\n"), `"old_string"`) {
		t.Errorf("submit %v; the form must edit fields, not JSON", view.Submit)
	}
	long := agentCard(t, approval.AgentClaudeCode, "Write", map[string]any{"file_path": "f", "content": strings.Repeat("x", maxInputValue+1)}, nil)
	view = EditArgsModal(long, testRef, long.Args)
	all := strings.Join(texts(toJSON(t, view)), "\n")
	if len(find(toJSON(t, view), "plain_text_input")) != 1 || !strings.Contains(all, "Content: 3,001 characters, more than Slack can edit (3,000); kept as it is.") {
		t.Errorf("a content too long to edit: want only the file's input and a note; got\n%s", all)
	}
	values := map[string]map[string]slack.BlockAction{
		BlockIDEditArgs:          {"field.file_path": {Value: "/home/dev/shop/src/cart.ts"}},
		BlockIDEditArgs + ".new": {"field.new_string": {Value: "export const total = 0;\n"}},
	}
	if got := editedFields(values); len(got) != 2 || got["new_string"] != "export const total = 0;\n" {
		t.Errorf("editedFields = %v", got)
	}
	if editedFields(map[string]map[string]slack.BlockAction{BlockIDEditArgs: {ActionIDEditArgsInput: {Value: "{}"}}}) != nil {
		t.Error("the JSON form read as fields")
	}
}
