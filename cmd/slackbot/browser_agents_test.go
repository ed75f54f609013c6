package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/slackapprove/slackbot/bot"
)

// agentRoutes send the coding agents' writes to #approvals of the dev
// workspace, where Alice or Bob decides.
const agentRoutes = `
default_timeout: 1h
routes:
  - name: agent-writes
    when: {tools: ["Bash", "Edit", "Write", "MultiEdit", "apply_patch"]}
    channel: C0APPROVALS
    approvers: {users: [U0ALICE, U0BOB]}
`

// TestDevBrowserAgentCards shows, in the emulator of `slackbot dev`, the
// cards of Claude Code's hook as an approver sees them: a Bash call leads
// with its command as code and the agent's description; an Edit is a
// unified diff of the strings it replaces. They are the README's
// screenshots of agent cards.
func TestDevBrowserAgentCards(t *testing.T) {
	t.Parallel()
	routes := filepath.Join(t.TempDir(), "routes.yaml")
	if err := os.WriteFile(routes, []byte(agentRoutes), 0o600); err != nil {
		t.Fatal(err)
	}
	p, base := devBrowserEnv(t, map[string]string{"ROUTES_FILE": routes, "API_KEYS": "laptop=" + keyBilling})
	vars := map[string]string{"SLACKBOT_URL": base, "SLACKBOT_API_KEY": keyBilling}
	p.Do("act as Alice", chromedp.Click(chromedp.CSS(`.acting-user[data-user="U0ALICE"]`)))
	p.Do("open #approvals", chromedp.Click(chromedp.CSS(`#channels [data-channel="C0APPROVALS"]`)))

	bash := startHook(t.Context(), hookEvent(t, "PreToolUse", "/home/dev/shop", "Bash", map[string]any{
		"command": "rm -rf dist/ && npm ci && npm run build", "description": "Rebuild the shop from a clean install", "timeout": 300000}), vars, "claude-code")
	p.WaitFor("the Bash card with its command as code", cardIs("Bash", `(() => {
		const code = [...card.querySelectorAll('.mk-pre')].map(e => e.textContent).join('\n');
		return card.textContent.includes('Claude Code wants to run a command') &&
			code.includes('rm -rf dist/ && npm ci && npm run build') &&
			card.textContent.includes('Rebuild the shop from a clean install') &&
			!!card.querySelector('button[data-action-id="edit"]');
	})()`))
	p.Screenshot("agent-bash-card.png")
	p.Do("approve the Bash call", chromedp.Click(chromedp.CSS(`#messages button[data-action-id="`+bot.ActionIDApprove+`"]`)))
	if out := waitHook(t, bash).Stdout; !strings.Contains(out, `"permissionDecision":"allow"`) {
		t.Errorf("the hook printed %s, want allow", out)
	}

	edit := startHook(t.Context(), hookEvent(t, "PreToolUse", "/home/dev/shop", "Edit", map[string]any{
		"file_path":  "/home/dev/shop/src/cart.ts",
		"old_string": "export function total(items: Item[]): number {\n  return items.reduce((sum, i) => sum + i.price, 0);\n}\n",
		"new_string": "export function total(items: Item[]): number {\n  return items.reduce((sum, i) => sum + i.price * i.quantity, 0);\n}\n"}), vars, "claude-code")
	p.WaitFor("the Edit card with its diff", cardIs("Edit", `(() => {
		const code = [...card.querySelectorAll('.mk-pre')].map(e => e.textContent).join('\n');
		return card.textContent.includes('Claude Code wants to edit /home/dev/shop/src/cart.ts') &&
			code.includes('-  return items.reduce((sum, i) => sum + i.price, 0);') &&
			code.includes('+  return items.reduce((sum, i) => sum + i.price * i.quantity, 0);');
	})()`))
	p.Screenshot("agent-edit-card.png")
	p.Do("deny the Edit", chromedp.Click(chromedp.CSS(`#messages .msg:last-child button[data-action-id="`+bot.ActionIDDeny+`"]`)))
	if out := waitHook(t, edit).Stdout; !strings.Contains(out, `"permissionDecision":"deny"`) {
		t.Errorf("the hook printed %s, want deny", out)
	}
}
