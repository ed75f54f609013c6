package main

// The real Claude Code (internal/agentcli) with slackbot as its
// PermissionRequest hook, against a fake Anthropic API
// (internal/fakemodel) and the whole app. The hook fires only when Claude
// Code would ask the user: Read and `ls` never reach Slack; the calls it
// asks about get cards, and what people decide there comes back as
// Claude Code's PermissionRequest decision, which the model sees in its
// tool_result.

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/slackapprove/slackbot/bot"
	"github.com/slackapprove/slackbot/internal/fakemodel"
	"github.com/slackapprove/slackbot/internal/hooktest"
	"github.com/slackapprove/slackbot/internal/slacktest"
)

// permissionRoutes send Claude Code's Bash calls to #approvals with
// the agent's always-allow rule offered, and its Write calls to a route
// that gives people two seconds.
const permissionRoutes = `
default_timeout: 1h
routes:
  - name: coding-agents
    when: {tools: ["Bash"]}
    channel: C0APPROVALS
    approvers: {users: [U0ALICE, U0BOB]}
    offer_always_allow: true
  - name: quick-writes
    when: {tools: ["Write"]}
    channel: C0APPROVALS
    approvers: {users: [U0ALICE]}
    timeout: 2s
`

// newPermissionEnv is the whole app with the HTTP API on and
// permissionRoutes, on the wall clock.
func newPermissionEnv(t *testing.T) *env {
	t.Helper()
	return newEnv(t, envOptions{routes: permissionRoutes, apiKeys: "billing=" + keyBilling, wallClock: true})
}

// newClaudePermissionRun is newClaudeRun with `slackbot hook claude-code`
// as the project's PermissionRequest hook instead of its PreToolUse hook.
func newClaudePermissionRun(t *testing.T, e *env, model *fakemodel.Anthropic) *claudeRun {
	t.Helper()
	c := newClaudeRun(t, e, model)
	settings := map[string]any{"hooks": map[string]any{"PermissionRequest": []any{map[string]any{
		"matcher": "*", "hooks": []any{map[string]any{"type": "command", "command": slackbotBinary(t) + " hook claude-code", "timeout": 600}},
	}}}}
	b, err := json.Marshal(settings)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(c.dir, ".claude", "settings.json"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	return c
}

// exists reports whether the project of c holds name.
func (c *claudeRun) exists(name string) bool {
	_, err := os.Stat(filepath.Join(c.dir, name))
	return err == nil
}

// toolResult is the tool_result the model got for id, failing the test
// when there is none.
func toolResult(t *testing.T, model *fakemodel.Anthropic, id string) fakemodel.Block {
	t.Helper()
	tr, ok := model.ToolResults()[id]
	if !ok {
		t.Fatalf("the model got no tool_result for %s", id)
	}
	return tr
}

// TestClaudeCodePermissionRequest: one Claude Code session whose calls
// show each way a PermissionRequest ends. A Read it does not ask about
// and an `ls` never reach Slack; a Bash call alice approves runs; one bob
// denies with a reason does not, and the model reads the reason; one
// approved with edited arguments runs as edited (updatedInput); a Write
// nobody decides within its route's 2 s is denied as expired.
func TestClaudeCodePermissionRequest(t *testing.T) {
	t.Parallel()
	e := newPermissionEnv(t)
	model := fakemodel.NewAnthropic(t,
		fakemodel.ToolTurn("toolu_read", "Read", map[string]any{"file_path": "README.md"}),
		fakemodel.ToolTurn("toolu_ls", "Bash", map[string]any{"command": "ls", "description": "List the project"}),
		fakemodel.ToolTurn("toolu_approve", "Bash", map[string]any{"command": "touch approved.txt", "description": "Mark approval"}),
		fakemodel.ToolTurn("toolu_deny", "Bash", map[string]any{"command": "touch denied.txt", "description": "Mark denial"}),
		fakemodel.ToolTurn("toolu_edit", "Bash", map[string]any{"command": "touch asked.txt", "description": "Mark the edit"}),
		fakemodel.ToolTurn("toolu_late", "Write", map[string]any{"file_path": "late.txt", "content": "too late\n"}),
		fakemodel.TextTurn("Done."))
	c := newClaudePermissionRun(t, e, model)
	if err := os.WriteFile(filepath.Join(c.dir, "README.md"), []byte("# shop\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	before := len(e.cards())
	done := c.start(t, "-p", "mark the project")

	card := e.waitLiveCard(t, before, "Bash", "touch approved.txt", "Claude Code (")
	if n := len(e.cards()) - before; n != 1 {
		t.Errorf("%d cards before the first Bash call that asks, want 1: Read and ls reached Slack", n)
	}
	if _, ok := slacktest.Button(card, bot.ActionIDApproveAlways); ok {
		t.Errorf("an always-allow button for a call whose suggestions hold no rule (touch: a directory and a mode)")
	}
	e.clickCard(t, alice, card, bot.ActionIDApprove)

	card = e.waitLiveCard(t, before+1, "touch denied.txt")
	e.denyWithReason(t, bob, card, "Nothing is marked denied in this repository.")

	card = e.waitLiveCard(t, before+2, "touch asked.txt")
	e.answerWithEdit(t, card, map[string]string{"command": "touch edited.txt"})

	e.waitLiveCard(t, before+3, "Write", "late.txt")
	res := c.wait(t, done)

	if res.Result != "Done." {
		t.Errorf("claude's result %q, want Done.", res.Result)
	}
	if tr := toolResult(t, model, "toolu_read"); tr.IsError || !strings.Contains(tr.ResultText(), "# shop") {
		t.Errorf("Read: %s (error %v), want the file", tr.ResultText(), tr.IsError)
	}
	if tr := toolResult(t, model, "toolu_ls"); tr.IsError || !strings.Contains(tr.ResultText(), "README.md") {
		t.Errorf("ls: %s (error %v), want the listing", tr.ResultText(), tr.IsError)
	}
	if !c.exists("approved.txt") || toolResult(t, model, "toolu_approve").IsError {
		t.Errorf("the approved call did not run: approved.txt %v", c.exists("approved.txt"))
	}
	if tr := toolResult(t, model, "toolu_deny"); c.exists("denied.txt") || !tr.IsError || !strings.Contains(tr.ResultText(), "Nothing is marked denied in this repository.") {
		t.Errorf("the denied call: ran %v, the model read %q (error %v); want no run and the reason", c.exists("denied.txt"), tr.ResultText(), tr.IsError)
	}
	if c.exists("asked.txt") || !c.exists("edited.txt") || toolResult(t, model, "toolu_edit").IsError {
		t.Errorf("the edited call: asked.txt %v, edited.txt %v; want the edited command to have run instead", c.exists("asked.txt"), c.exists("edited.txt"))
	}
	if tr := toolResult(t, model, "toolu_late"); c.exists("late.txt") || !tr.IsError || !strings.Contains(tr.ResultText(), "expired") {
		t.Errorf("the Write nobody decided: written %v, the model read %q; want no file and the expiry", c.exists("late.txt"), tr.ResultText())
	}
	if n := len(e.cards()) - before; n != 4 {
		t.Errorf("%d cards, want 4 (one per call Claude Code asked about)", n)
	}
}

// TestClaudeCodeAlwaysAllow: alice chooses "Approve and always allow
// Bash(npm test *)", the rule Claude Code suggested; Claude Code keeps
// it in the project's local settings, so the same call again runs
// without a card, and the audit stream says who allowed which rule for
// which project and session.
func TestClaudeCodeAlwaysAllow(t *testing.T) {
	t.Parallel()
	e := newPermissionEnv(t)
	npmTest := map[string]any{"command": "npm test --silent", "description": "Run the tests"}
	model := fakemodel.NewAnthropic(t,
		fakemodel.ToolTurn("toolu_first", "Bash", npmTest),
		fakemodel.ToolTurn("toolu_again", "Bash", npmTest),
		fakemodel.TextTurn("Tests ran twice."))
	c := newClaudePermissionRun(t, e, model)
	pkg := `{"name":"shop","version":"1.0.0","scripts":{"test":"echo ran >> ran.txt"}}`
	if err := os.WriteFile(filepath.Join(c.dir, "package.json"), []byte(pkg), 0o644); err != nil {
		t.Fatal(err)
	}
	before := len(e.cards())
	done := c.start(t, "-p", "run the tests twice")
	card := e.waitLiveCard(t, before, "npm test --silent", "Bash(npm test *)")
	btn, ok := slacktest.Button(card, bot.ActionIDApproveAlways)
	if !ok || btn.Text.Text != "Approve and always allow Bash(npm test *)" {
		t.Fatalf("the card's always-allow button: %v %+v; want Approve and always allow Bash(npm test *)", ok, btn.Text)
	}
	e.clickCard(t, alice, card, bot.ActionIDApproveAlways)
	res := c.waitDenyingOthers(t, e, done, before+1)

	if res.Result != "Tests ran twice." {
		t.Errorf("claude's result %q", res.Result)
	}
	if got, _ := os.ReadFile(filepath.Join(c.dir, "ran.txt")); string(got) != "ran\nran\n" {
		t.Errorf("ran.txt %q, want both calls to have run", got)
	}
	local, _ := os.ReadFile(filepath.Join(c.dir, ".claude", "settings.local.json"))
	if !strings.Contains(string(local), "Bash(npm test *)") {
		t.Errorf("the project's local settings %s do not hold the rule", local)
	}
	events, err := e.app.store.ReadAudit(t.Context(), "", 0)
	if err != nil {
		t.Fatal(err)
	}
	var audited string
	for _, ev := range events {
		if ev.Type == "always_allowed" {
			audited = ev.Detail
		}
	}
	for _, want := range []string{alice, "Bash(npm test *)", "localSettings", "api:billing", "Claude Code (" + c.dir, "session " + res.SessionID} {
		if !strings.Contains(audited, want) {
			t.Errorf("the audit stream's always_allowed %q does not say %q", audited, want)
		}
	}
}

// waitDenyingOthers waits for claude to end, failing the test for every
// card after the first seen ones that shows up meanwhile (a call that
// should not have reached Slack), which bob denies so that the run ends.
func (c *claudeRun) waitDenyingOthers(t *testing.T, e *env, done <-chan claudeOutcome, seen int) claudeResult {
	t.Helper()
	var o claudeOutcome
	waitUntil(t, 3*time.Minute, "claude to end", func() bool {
		select {
		case o = <-done:
			return true
		default:
		}
		if cards := e.cards(); len(cards) > seen {
			t.Errorf("a call reached Slack that should not have: %s", cardText(cards[seen]))
			if _, live := slacktest.Button(cards[seen], bot.ActionIDDeny); live {
				e.clickCard(t, bob, cards[seen], bot.ActionIDDeny)
			}
			seen++
		}
		return false
	})
	if o.err != nil || o.jsonErr != nil {
		t.Fatalf("claude: %v (output: %v)\nstdout: %s\nstderr: %s", o.err, o.jsonErr, o.stdout, o.stderr)
	}
	return o.res
}

// TestClaudeCodePreToolUse: the same ways a call ends with slackbot as
// Claude Code's PreToolUse hook (approval: TestClaudeCodeHookApproved):
// a denial with a reason the model reads, an approval with edited
// arguments that runs as edited (updatedInput), a Write nobody decides
// within its route's 2 s, denied as expired.
func TestClaudeCodePreToolUse(t *testing.T) {
	t.Parallel()
	e := newPermissionEnv(t)
	model := fakemodel.NewAnthropic(t,
		fakemodel.ToolTurn("toolu_deny", "Bash", map[string]any{"command": "touch denied.txt", "description": "Mark denial"}),
		fakemodel.ToolTurn("toolu_edit", "Bash", map[string]any{"command": "touch asked.txt", "description": "Mark the edit"}),
		fakemodel.ToolTurn("toolu_late", "Write", map[string]any{"file_path": "late.txt", "content": "too late\n"}),
		fakemodel.TextTurn("Done."))
	c := newClaudeRun(t, e, model)
	before := len(e.cards())
	done := c.start(t, "-p", "mark the project")

	card := e.waitLiveCard(t, before, "touch denied.txt")
	if _, ok := slacktest.Button(card, bot.ActionIDApproveAlways); ok {
		t.Errorf("a PreToolUse card offers an always-allow rule: PreToolUse sends none")
	}
	e.denyWithReason(t, bob, card, "Nothing is marked denied in this repository.")
	card = e.waitLiveCard(t, before+1, "touch asked.txt")
	e.answerWithEdit(t, card, map[string]string{"command": "touch edited.txt"})
	e.waitLiveCard(t, before+2, "Write", "late.txt")
	if res := c.wait(t, done); res.Result != "Done." {
		t.Errorf("claude's result %q, want Done.", res.Result)
	}

	if tr := toolResult(t, model, "toolu_deny"); c.exists("denied.txt") || !tr.IsError || !strings.Contains(tr.ResultText(), "Nothing is marked denied in this repository.") {
		t.Errorf("the denied call: ran %v, the model read %q; want no run and the reason", c.exists("denied.txt"), tr.ResultText())
	}
	if c.exists("asked.txt") || !c.exists("edited.txt") || toolResult(t, model, "toolu_edit").IsError {
		t.Errorf("the edited call: asked.txt %v, edited.txt %v; want the edited command to have run instead", c.exists("asked.txt"), c.exists("edited.txt"))
	}
	if tr := toolResult(t, model, "toolu_late"); c.exists("late.txt") || !tr.IsError || !strings.Contains(tr.ResultText(), "expired") {
		t.Errorf("the Write nobody decided: written %v, the model read %q; want no file and the expiry", c.exists("late.txt"), tr.ResultText())
	}
}

// TestClaudeCodeHookUnreachable: with slackbot unreachable, both of
// Claude Code's hooks deny the call, saying why, and it does not run.
func TestClaudeCodeHookUnreachable(t *testing.T) {
	t.Parallel()
	e := newPermissionEnv(t)
	for name, newRun := range map[string]func(*testing.T, *env, *fakemodel.Anthropic) *claudeRun{
		"PermissionRequest": newClaudePermissionRun,
		"PreToolUse":        func(t *testing.T, e *env, m *fakemodel.Anthropic) *claudeRun { return newClaudeRun(t, e, m) },
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			model := fakemodel.NewAnthropic(t,
				fakemodel.ToolTurn("toolu_down", "Bash", map[string]any{"command": "touch never.txt", "description": "Mark"}),
				fakemodel.TextTurn("Gave up."))
			c := newRun(t, e, model)
			c.unreachable(t)
			c.wait(t, c.start(t, "-p", "mark"))
			if tr := toolResult(t, model, "toolu_down"); c.exists("never.txt") || !tr.IsError || !strings.Contains(tr.ResultText(), "could not be reached") {
				t.Errorf("with slackbot down: ran %v, the model read %q; want a denial saying slackbot could not be reached", c.exists("never.txt"), tr.ResultText())
			}
		})
	}
}

// unreachable points c's hook at a loopback port nothing listens on.
func (c *claudeRun) unreachable(t *testing.T) {
	t.Helper()
	for i, v := range c.env {
		if strings.HasPrefix(v, "SLACKBOT_URL=") {
			c.env[i] = "SLACKBOT_URL=http://" + hooktest.ClosedPort(t)
		}
	}
}
