package main

// `slackbot hook` fails closed: whatever keeps a decision from arriving,
// the agent gets a denial it shows, with the reason, and exit 0 (the
// agents read the JSON only on exit 0; other codes let the tool run or
// fall back to the agent's own prompt). Package hook's tests cover the
// failures a server in slackbot's place can stage; these need the whole
// program or the built binary's exit status.

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/slackapprove/slackbot/bot"
	"github.com/slackapprove/slackbot/internal/hooktest"
	"github.com/slackapprove/slackbot/internal/slackfake"
	"github.com/slackapprove/slackbot/internal/slacktest"
)

// TestHookFailsClosedOnUnknownKey: a key slackbot refuses denies, saying
// why, and never shows the key (the other ways the hook gets no answer are
// hook's TestHookFailsClosedWithoutAnswer, against a server in slackbot's
// place).
func TestHookFailsClosedOnUnknownKey(t *testing.T) {
	t.Parallel()
	e := newHookEnv(t)
	const key = "not-a-key-0123456789"
	r := waitHook(t, startHook(t.Context(), hookInput(t, "claude-code/bash.json"), map[string]string{"SLACKBOT_URL": e.srv.URL, "SLACKBOT_API_KEY": key}, "claude-code"))
	checkHookGolden(t, "fail-unauthorized", r.Stdout, "URL", e.srv.URL)
	if strings.Contains(r.Stdout+r.Stderr, key) {
		t.Errorf("the hook's output shows the API key: %s %s", r.Stdout, r.Stderr)
	}
}

// TestHookWithoutAgentExits2: a hook command that names no agent it
// knows (none, another, a flag in its place) cannot answer in any
// agent's format, so it exits 2, which Claude Code (and Gemini CLI) read
// as "block this call", with the reason on stderr; never 1, which lets
// the call go on. Run as the built program, for the real exit status.
func TestHookWithoutAgentExits2(t *testing.T) {
	t.Parallel()
	bin := slackbotBinary(t)
	api, hits := hooktest.FakeAPI(t, http.StatusCreated, `{"token":"tok","status":"pending"}`)
	bash := hookInput(t, "claude-code/bash.json")
	for _, tt := range []struct {
		name string
		args []string
		want string // on stderr
	}{
		{"no agent", nil, "usage: slackbot hook claude-code|codex"},
		{"an unknown agent", []string{"cursor"}, `unknown agent "cursor"`},
		{"an agent's name in another case", []string{"Claude-Code"}, `unknown agent "Claude-Code"`},
		{"a flag before the agent", []string{"--timeout", "1m", "claude-code"}, `unknown agent "--timeout"`},
		{"a bad flag and no agent", []string{"--timout=1m"}, `unknown agent "--timout=1m"`},
		{"help", []string{"--help"}, "usage: slackbot hook claude-code|codex"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			cmd := exec.CommandContext(t.Context(), bin, append([]string{"hook"}, tt.args...)...)
			cmd.Env = []string{"SLACKBOT_URL=" + api.URL, "SLACKBOT_API_KEY=" + keyBilling}
			cmd.Stdin, cmd.Stdout, cmd.Stderr = bytes.NewReader(bash), &stdout, &stderr
			err := cmd.Run()
			if exit, ok := errors.AsType[*exec.ExitError](err); !ok || exit.ExitCode() != 2 {
				t.Errorf("slackbot hook %s: %v, want exit status 2", strings.Join(tt.args, " "), err)
			}
			if !strings.Contains(stderr.String(), tt.want) {
				t.Errorf("stderr %q lacks %q", stderr.String(), tt.want)
			}
			if stdout.Len() != 0 {
				t.Errorf("stdout %q, want nothing an agent might read as a decision", stdout.String())
			}
		})
	}
	if n := hits.Load(); n != 0 {
		t.Errorf("slackbot got %d requests from hooks that name no agent, want none", n)
	}
}

// TestHookExits2WhenItCannotAnswer: a hook whose decision cannot be
// written (stdout is a full disk) exits 2 with the reason on stderr.
func TestHookExits2WhenItCannotAnswer(t *testing.T) {
	t.Parallel()
	full, err := os.OpenFile("/dev/full", os.O_WRONLY, 0)
	if err != nil {
		t.Skipf("no /dev/full: %v", err)
	}
	defer full.Close()
	var stderr bytes.Buffer
	cmd := exec.CommandContext(t.Context(), slackbotBinary(t), "hook", "claude-code")
	cmd.Env = []string{"SLACKBOT_URL=http://" + hooktest.ClosedPort(t), "SLACKBOT_API_KEY=" + keyBilling}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = bytes.NewReader(hookInput(t, "claude-code/bash.json")), full, &stderr
	err = cmd.Run()
	if exit, ok := errors.AsType[*exec.ExitError](err); !ok || exit.ExitCode() != 2 {
		t.Errorf("slackbot hook with stdout on /dev/full: %v, want exit status 2", err)
	}
	if want := "write the decision"; !strings.Contains(stderr.String(), want) {
		t.Errorf("stderr %q lacks %q", stderr.String(), want)
	}
}

// TestHookEndsWithoutDecision: when nobody decides in time, the hook is
// interrupted, or the request expires in slackbot, the agent is told no
// decision arrived, and the card no longer asks anyone (the hook cancels
// a request it stops waiting for).
func TestHookEndsWithoutDecision(t *testing.T) {
	t.Parallel()
	e := newHookEnv(t)
	vars := e.hookVars(keyBilling)
	input := hookInput(t, "claude-code/bash.json")

	t.Run("--timeout passes", func(t *testing.T) {
		before := len(e.cards())
		done := startHook(t.Context(), input, vars, "claude-code", "--timeout", "2s")
		card := e.waitLiveCard(t, before, "rm -rf build/")
		checkHookGolden(t, "fail-timeout", waitHook(t, done).Stdout)
		e.waitCardSays(t, card, "Cancelled")
	})
	t.Run("interrupted", func(t *testing.T) {
		before := len(e.cards())
		ctx, interrupt := context.WithCancel(t.Context())
		defer interrupt()
		done := startHook(ctx, input, vars, "claude-code")
		card := e.waitLiveCard(t, before, "rm -rf build/")
		interrupt()
		checkHookGolden(t, "fail-interrupted", waitHook(t, done).Stdout)
		e.waitCardSays(t, card, "Cancelled")
	})
	t.Run("the request expires", func(t *testing.T) {
		before := len(e.cards())
		done := startHook(t.Context(), input, vars, "claude-code")
		card := e.waitLiveCard(t, before, "rm -rf build/")
		e.clock.Add(2 * time.Hour)
		checkHookGolden(t, "fail-expired", waitHook(t, done).Stdout)
		e.waitCardSays(t, card, "Expired")
	})
}

// waitCardSays waits until card has no buttons and shows what.
func (e *env) waitCardSays(t *testing.T, card slackfake.Message, what string) {
	t.Helper()
	waitUntil(t, 30*time.Second, "the card to say "+what, func() bool {
		cur, ok := e.slack.Message(card.Channel, card.TS)
		_, live := slacktest.Button(cur, bot.ActionIDApprove)
		return ok && !live && strings.Contains(cardText(cur), what)
	})
}
