package main

// `slackbot hook gemini` against the whole app: Gemini CLI's BeforeTool
// events recorded from Gemini CLI 0.61.0 (hook/testdata/gemini/, paths
// and ids replaced) go in on stdin, people decide on the cards, and the
// hook prints exactly hook/testdata/golden/gemini-*.json. The real Gemini
// CLI runs the hook in agents_gemini_test.go.

import (
	"errors"
	"strings"
	"testing"

	"github.com/slackapprove/slackbot/bot"
)

// geminiRoutes sends Gemini CLI's writes to #approvals and approves its
// reads with no card, as the README's routing example does.
const geminiRoutes = `
default_timeout: 1h
routes:
  - name: agent-reads
    when: {tools: ["read_file", "read_many_files", "glob", "grep_search", "list_directory"]}
    channel: C0APPROVALS
    approvers: {users: [U0ALICE]}
    auto_approve: "true"
  - name: agent-writes
    when: {tools: ["run_shell_command", "write_file", "replace", "mcp__*"]}
    channel: C0APPROVALS
    approvers: {users: [U0ALICE, U0BOB]}
`

// newGeminiHookEnv is the whole app with the HTTP API on and geminiRoutes,
// on the wall clock.
func newGeminiHookEnv(t *testing.T) *env {
	t.Helper()
	return newEnv(t, envOptions{routes: geminiRoutes, apiKeys: "billing=" + keyBilling, wallClock: true})
}

// TestHookGemini: Gemini CLI's BeforeTool events become cards that say
// what Gemini CLI wants to run, with Edit arguments… (the hook sends the
// tool's schema), and the decisions come back as its hook output: allow;
// allow with the input edited in the card's form in hookSpecificOutput;
// a denial for an edit that removes an argument (Gemini CLI's documented
// merge would keep the model's); a denial with the approver's reason.
// The form refuses an edit that does not fit the tool's schema.
func TestHookGemini(t *testing.T) {
	t.Parallel()
	e := newGeminiHookEnv(t)
	vars := e.hookVars(keyBilling)

	t.Run("run_shell_command approved", func(t *testing.T) {
		before := len(e.cards())
		done := startHook(t.Context(), hookInput(t, "gemini/run_shell_command.json"), vars, "gemini")
		card := e.waitLiveCard(t, before, "run_shell_command", "rm -rf build/", "npm run build", "Gemini CLI (/home/dev/shop)", "session 6f1c2a9e", "Rebuild the site from scratch")
		if text := cardText(card); strings.Contains(text, `\\u0026`) {
			t.Errorf("the card shows the command's && as \\u0026: %s", text)
		}
		e.clickCard(t, alice, card, bot.ActionIDApprove)
		checkHookGolden(t, "gemini-run_shell_command-allow", waitHook(t, done).Stdout)
	})
	t.Run("replace approved with input edited in the card", func(t *testing.T) {
		before := len(e.cards())
		done := startHook(t.Context(), hookInput(t, "gemini/replace.json"), vars, "gemini")
		card := e.waitLiveCard(t, before, "replace", "replicas: 30")
		noInstruction := `{"file_path":"/home/dev/shop/config/prod.yaml","new_string":"replicas: 5","old_string":"replicas: 3"}`
		err := e.press(t.Context(), card, decision{Action: bot.ActionIDEdit, User: alice, Args: noInstruction})
		if _, refused := errors.AsType[formRefused](err); !refused || !strings.Contains(err.Error(), "instruction") {
			t.Fatalf("an edit without the required instruction: %v, want the form refused naming it", err)
		}
		edited := `{"file_path":"/home/dev/shop/config/prod.yaml","instruction":"Scale the shop up for the sale","new_string":"replicas: 5","old_string":"replicas: 3"}`
		if err := e.press(t.Context(), card, decision{Action: bot.ActionIDEdit, User: alice, Args: edited}); err != nil {
			t.Fatal(err)
		}
		checkHookGolden(t, "gemini-replace-allow-edited", waitHook(t, done).Stdout)
	})
	t.Run("run_shell_command approved with an argument removed", func(t *testing.T) {
		before := len(e.cards())
		done := startHook(t.Context(), hookInput(t, "gemini/run_shell_command.json"), vars, "gemini")
		card := e.waitLiveCard(t, before, "run_shell_command", "rm -rf build/")
		if err := e.press(t.Context(), card, decision{Action: bot.ActionIDEdit, User: bob, Args: `{"command":"rm -rf build/"}`}); err != nil {
			t.Fatal(err)
		}
		checkHookGolden(t, "gemini-run_shell_command-edit-drops", waitHook(t, done).Stdout)
	})
	t.Run("write_file denied with a reason", func(t *testing.T) {
		before := len(e.cards())
		done := startHook(t.Context(), hookInput(t, "gemini/write_file.json"), vars, "gemini")
		card := e.waitLiveCard(t, before, "write_file", "release.yml")
		e.denyWithReason(t, bob, card, "Release workflows change only through a reviewed PR.")
		checkHookGolden(t, "gemini-write_file-deny", waitHook(t, done).Stdout)
	})
}
