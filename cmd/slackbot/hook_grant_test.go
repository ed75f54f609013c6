package main

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/slackapprove/slackbot/bot"
	"github.com/slackapprove/slackbot/internal/hooktest"
)

// hookGrantRoutes lets Alice approve coding agents' calls for up to 8 h.
const hookGrantRoutes = `
default_timeout: 1h
routes:
  - name: coding-agents
    when: {tools: ["Bash"]}
    channel: C0APPROVALS
    approvers: {users: [U0ALICE]}
    grants: 8h
`

// TestHookGrantCoversItsDirectory: a grant on a Claude Code hook's card
// covers what the card named — the key and the working directory — so
// the same command from another session in that directory runs without
// a card, and from another directory under the same key gets a card.
func TestHookGrantCoversItsDirectory(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{routes: hookGrantRoutes, apiKeys: "laptop=" + keyBilling, wallClock: true})
	vars := e.hookVars(keyBilling)
	n := 0
	input := func(cwd, session string) []byte {
		t.Helper()
		n++
		var ev map[string]any
		if err := json.Unmarshal(hookInput(t, "claude-code/bash.json"), &ev); err != nil {
			t.Fatal(err)
		}
		ev["cwd"], ev["session_id"], ev["tool_use_id"] = cwd, session, "toolu_grant_"+string(rune('a'+n))
		b, err := json.Marshal(ev)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	allowed := func(r hooktest.Result) bool { return strings.Contains(r.Stdout, `"permissionDecision":"allow"`) }

	before := len(e.cards())
	done := startHook(t.Context(), input("/home/dev/shop", "session-one"), vars, "claude-code")
	card := e.waitLiveCard(t, before, "Claude Code (/home/dev/shop)", "`laptop`")
	e.clickCard(t, alice, card, bot.GrantActionID(8*time.Hour))
	if r := waitHook(t, done); !allowed(r) {
		t.Fatalf("the granted call: %s", r.Stdout)
	}

	before = len(e.cards())
	if r := waitHook(t, startHook(t.Context(), input("/home/dev/shop", "session-two"), vars, "claude-code")); !allowed(r) || !strings.Contains(r.Stdout, "grant:"+alice) {
		t.Errorf("the same command in the same directory, another session: %s; want allowed by Alice's grant", r.Stdout)
	}
	if got := len(e.cards()); got != before {
		t.Errorf("%d cards posted for a granted call, want none", got-before)
	}

	done = startHook(t.Context(), input("/home/dev/bank", "session-three"), vars, "claude-code")
	var early *hooktest.Result
	waitUntil(t, 30*time.Second, "a card for the other directory, or the hook's answer", func() bool {
		select {
		case r := <-done:
			early = &r
			return true
		default:
		}
		return len(e.cards()) > before
	})
	if early != nil {
		t.Fatalf("the same command in another directory under the same key was answered without a card: %s", early.Stdout)
	}
	card = e.waitLiveCard(t, before, "Claude Code (/home/dev/bank)")
	e.clickCard(t, alice, card, bot.ActionIDDeny)
	if r := waitHook(t, done); allowed(r) {
		t.Errorf("the call denied on its card ran: %s", r.Stdout)
	}
}
