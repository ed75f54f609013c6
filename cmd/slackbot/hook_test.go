package main

// `slackbot hook claude-code|codex` against the whole app: recorded hook
// inputs (hook/testdata/<agent>/*.json) go in on stdin, people decide on
// the cards in the fake Slack with signed clicks and modals, and the hook
// prints exactly the JSON in hook/testdata/golden.

import (
	"context"
	"io"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/slack-go/slack"

	"github.com/slackapprove/slackbot/bot"
	"github.com/slackapprove/slackbot/internal/hooktest"
	"github.com/slackapprove/slackbot/internal/slackfake"
	"github.com/slackapprove/slackbot/internal/slacktest"
)

// hookRoutes auto-approves the agents' read-only tools and sends the rest
// to #approvals, where alice or bob decides.
const hookRoutes = `
default_timeout: 1h
routes:
  - name: read-only
    when: {tools: ["Read", "Grep", "Glob", "mcp__*__get_*"]}
    channel: C0APPROVALS
    approvers: {users: [U0ALICE]}
    auto_approve: "true"
  - name: coding-agents
    when: {tools: ["Bash", "Edit", "Write", "apply_patch", "mcp__*"]}
    channel: C0APPROVALS
    approvers: {users: [U0ALICE, U0BOB]}
`

// newHookEnv is the whole app with the HTTP API on and hookRoutes, on the
// wall clock (the hook's waits pass in real time).
func newHookEnv(t *testing.T) *env {
	t.Helper()
	return newEnv(t, envOptions{routes: hookRoutes, apiKeys: "billing=" + keyBilling, wallClock: true})
}

// startHook runs `slackbot hook <args>` in the background with input on
// stdin and vars as its environment.
func startHook(ctx context.Context, input []byte, vars map[string]string, args ...string) <-chan hooktest.Result {
	return hooktest.Start(ctx, runHook, input, vars, args...)
}

// runHook is `slackbot hook <args>` through run.
func runHook(ctx context.Context, args []string, getenv func(string) string, stdin io.Reader, stdout, stderr io.Writer) error {
	return run(ctx, append([]string{"hook"}, args...), getenv, stdin, stdout, stderr)
}

// The recorded hook inputs and golden outputs are package hook's.
var (
	hookFiles       = hooktest.Files(filepath.Join("..", "..", "hook", "testdata"))
	hookInput       = hookFiles.Input
	checkHookGolden = hookFiles.CheckGolden
	waitHook        = hooktest.Wait
)

// hookVars is the environment of a hook that asks e's slackbot as key.
func (e *env) hookVars(key string) map[string]string {
	return map[string]string{"SLACKBOT_URL": e.srv.URL, "SLACKBOT_API_KEY": key}
}

// waitLiveCard waits for a card in #approvals, after the first after
// cards, that shows every one of shows and still has its buttons.
func (e *env) waitLiveCard(t *testing.T, after int, shows ...string) slackfake.Message {
	t.Helper()
	var card slackfake.Message
	waitUntil(t, 30*time.Second, "a card showing "+strings.Join(shows, ", "), func() bool {
		cards := e.cards()
		for _, m := range cards[min(after, len(cards)):] {
			if _, live := slacktest.Button(m, bot.ActionIDApprove); live && showsAll(m, shows) {
				card = m
				return true
			}
		}
		return false
	})
	return card
}

// showsAll reports whether a card's text holds every one of shows.
func showsAll(m slackfake.Message, shows []string) bool {
	text := cardText(m)
	for _, s := range shows {
		if !strings.Contains(text, s) {
			return false
		}
	}
	return true
}

// clickCard clicks actionID on card as user, signed as Slack signs.
func (e *env) clickCard(t *testing.T, user string, card slackfake.Message, actionID string) {
	t.Helper()
	btn, ok := slacktest.Button(card, actionID)
	if !ok {
		t.Fatalf("card %s has no %q button", card.TS, actionID)
	}
	click := slacktest.Click{Team: testTeam, User: user, Message: card, Button: btn, TriggerID: e.slack.IssueTrigger(user, "")}.Payload()
	if status, err := e.slackPost(t.Context(), click); err != nil || status != 200 {
		t.Fatalf("click %s: got %d, %v", actionID, status, err)
	}
}

// denyWithReason denies card as user through the "Deny with reason…"
// modal.
func (e *env) denyWithReason(t *testing.T, user string, card slackfake.Message, reason string) {
	t.Helper()
	btn, ok := slacktest.Button(card, bot.ActionIDDenyReason)
	if !ok {
		t.Fatalf("card %s has no %q button", card.TS, bot.ActionIDDenyReason)
	}
	trigger := e.slack.IssueTrigger(user, "")
	click := slacktest.Click{Team: testTeam, User: user, Message: card, Button: btn, TriggerID: trigger}.Payload()
	if status, err := e.slackPost(t.Context(), click); err != nil || status != 200 {
		t.Fatalf("click deny_reason: got %d, %v", status, err)
	}
	var view slackfake.View
	waitUntil(t, 30*time.Second, "the deny_reason modal", func() bool {
		for _, v := range e.slack.Views() {
			if v.TriggerID == trigger && v.CallbackID == bot.CallbackDenyReason {
				view = v
				return true
			}
		}
		return false
	})
	payload := slacktest.Submission{Team: testTeam, User: user, View: view,
		Values: map[string]map[string]string{bot.BlockIDDenyReason: {bot.ActionIDDenyReasonInput: reason}}}.Payload()
	if status, err := e.slackPost(t.Context(), payload); err != nil || status != 200 {
		t.Fatalf("submit the reason: got %d, %v", status, err)
	}
}

// requestOfCard waits for the request of card and returns its token and
// call, as the card's buttons carry them.
func (e *env) requestOfCard(t *testing.T, card slackfake.Message) (token, callID string) {
	t.Helper()
	waitUntil(t, 30*time.Second, "the request of the card "+card.TS, func() bool {
		pending, _, err := e.app.store.Pending(t.Context(), 100, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range pending {
			for _, c := range r.Calls {
				if c.Message.ID == card.TS {
					token, callID = r.Token, c.ID
				}
			}
		}
		return token != ""
	})
	return token, callID
}

// answerWithEdit has alice approve the call of card with edited fields
// through the card's "Edit arguments…" form: an agent's own tool (Bash,
// Edit) is edited by its command or strings, the form's other inputs
// submitted as they were prefilled, as Slack sends them.
func (e *env) answerWithEdit(t *testing.T, card slackfake.Message, fields map[string]string) {
	t.Helper()
	view := e.openEditForm(t, alice, card)
	values := map[string]map[string]string{}
	for _, b := range view.Blocks {
		in, ok := b.(*slack.InputBlock)
		if !ok {
			continue
		}
		el, ok := in.Element.(*slack.PlainTextInputBlockElement)
		if !ok {
			t.Fatalf("edit form input %s is a %T", in.BlockID, in.Element)
		}
		key, isField := strings.CutPrefix(el.ActionID, "field.")
		if !isField {
			t.Fatalf("edit form input %s/%s: want the tool's fields, not its JSON", in.BlockID, el.ActionID)
		}
		v, edited := fields[key]
		if !edited {
			v = el.InitialValue
		}
		values[in.BlockID] = map[string]string{el.ActionID: v}
	}
	if body := e.submit(alice, view, values); body != "" {
		t.Fatalf("the edit form answered %s, want it closed", body)
	}
}

// openEditForm clicks "Edit arguments…" on card as user and returns the
// form Slack shows.
func (e *env) openEditForm(t *testing.T, user string, card slackfake.Message) slackfake.View {
	t.Helper()
	btn, ok := slacktest.Button(card, bot.ActionIDEdit)
	if !ok {
		t.Fatalf("card %s has no %q button", card.TS, bot.ActionIDEdit)
	}
	trigger := e.slack.IssueTrigger(user, "")
	click := slacktest.Click{Team: testTeam, User: user, Message: card, Button: btn, TriggerID: trigger}.Payload()
	if status, err := e.slackPost(t.Context(), click); err != nil || status != 200 {
		t.Fatalf("click edit: got %d, %v", status, err)
	}
	var view slackfake.View
	waitUntil(t, 30*time.Second, "the edit form", func() bool {
		for _, v := range e.slack.Views() {
			if v.TriggerID == trigger && v.CallbackID == bot.CallbackEditArgs {
				view = v
				return true
			}
		}
		return false
	})
	return view
}

// TestHookClaudeCode: Claude Code's PreToolUse events become cards that
// show what Claude Code wants to do, and the decisions come back as
// Claude Code's hook output: an approval, an approval with edited input
// (the whole input in updatedInput), a denial with the approver's reason,
// a plain denial, and a read-only tool the routes approve with no card.
func TestHookClaudeCode(t *testing.T) {
	t.Parallel()
	e := newHookEnv(t)
	vars := e.hookVars(keyBilling)

	t.Run("Bash approved", func(t *testing.T) {
		before := len(e.cards())
		done := startHook(t.Context(), hookInput(t, "claude-code/bash.json"), vars, "claude-code")
		card := e.waitLiveCard(t, before, "Bash", "rm -rf build/", "npm run build", "Claude Code (/home/dev/shop)", "session 8f3b2c1a", "Rebuild the site from scratch")
		if text := cardText(card); strings.Contains(text, `\\u0026`) {
			t.Errorf("the card shows the command's && as \\u0026 (escaped before it reached slackbot): %s", text)
		}
		e.clickCard(t, alice, card, bot.ActionIDApprove)
		checkHookGolden(t, "claude-code-bash-allow", waitHook(t, done).Stdout)
	})
	t.Run("Edit approved with edited input", func(t *testing.T) {
		before := len(e.cards())
		done := startHook(t.Context(), hookInput(t, "claude-code/edit.json"), vars, "claude-code")
		card := e.waitLiveCard(t, before, "Edit", "replicas: 30")
		e.answerWithEdit(t, card, map[string]string{"new_string": "replicas: 5"})
		checkHookGolden(t, "claude-code-edit-allow-edited", waitHook(t, done).Stdout)
	})
	t.Run("Write denied with a reason", func(t *testing.T) {
		before := len(e.cards())
		done := startHook(t.Context(), hookInput(t, "claude-code/write.json"), vars, "claude-code")
		card := e.waitLiveCard(t, before, "Write", "release.yml")
		e.denyWithReason(t, bob, card, "Release workflows change only through a reviewed PR.")
		checkHookGolden(t, "claude-code-write-deny", waitHook(t, done).Stdout)
	})
	t.Run("MCP tool denied", func(t *testing.T) {
		before := len(e.cards())
		done := startHook(t.Context(), hookInput(t, "claude-code/mcp_github_create_issue.json"), vars, "claude-code")
		card := e.waitLiveCard(t, before, "mcp__github__create_issue", "Checkout fails for carts over 100 items")
		e.clickCard(t, bob, card, bot.ActionIDDeny)
		checkHookGolden(t, "claude-code-mcp-deny", waitHook(t, done).Stdout)
	})
	t.Run("Read approved by the routes, no card", func(t *testing.T) {
		before := len(e.cards())
		r := waitHook(t, startHook(t.Context(), hookInput(t, "claude-code/read.json"), vars, "claude-code"))
		checkHookGolden(t, "claude-code-read-policy", r.Stdout)
		if n := len(e.cards()); n != before {
			t.Errorf("%d cards after a read-only call, want %d (none posted)", n, before)
		}
	})
}

// TestHookCodex: Codex's PermissionRequest events get Codex's decision
// JSON. Codex refuses updatedInput, so an approval with edited arguments
// is a denial that tells the model which arguments were approved.
func TestHookCodex(t *testing.T) {
	t.Parallel()
	e := newHookEnv(t)
	vars := e.hookVars(keyBilling)
	input := hookInput(t, "codex/bash.json")

	t.Run("approved", func(t *testing.T) {
		before := len(e.cards())
		done := startHook(t.Context(), input, vars, "codex")
		card := e.waitLiveCard(t, before, "Bash", "git push --force-with-lease origin release", "Codex (/home/dev/shop)", "session 019ad3f2", "gpt-5-codex")
		e.clickCard(t, alice, card, bot.ActionIDApprove)
		checkHookGolden(t, "codex-bash-allow", waitHook(t, done).Stdout)
	})
	t.Run("approved with edited arguments", func(t *testing.T) {
		before := len(e.cards())
		done := startHook(t.Context(), input, vars, "codex")
		card := e.waitLiveCard(t, before, "git push --force-with-lease origin release")
		e.answerWithEdit(t, card, map[string]string{"command": "git push --force-with-lease origin release-candidate"})
		checkHookGolden(t, "codex-bash-allow-edited", waitHook(t, done).Stdout)
	})
	t.Run("denied with a reason", func(t *testing.T) {
		before := len(e.cards())
		done := startHook(t.Context(), input, vars, "codex")
		card := e.waitLiveCard(t, before, "git push --force-with-lease origin release")
		e.denyWithReason(t, bob, card, "Not during the freeze.")
		checkHookGolden(t, "codex-bash-deny", waitHook(t, done).Stdout)
	})
}
