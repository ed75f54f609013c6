package main

// `slackbot hook` fails closed: whatever keeps a decision from arriving,
// the agent gets a denial it shows, with the reason, and exit 0 (the
// agents read the JSON only on exit 0; other codes let the tool run or
// fall back to the agent's own prompt).

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/slackapprove/slackbot/bot"
	"github.com/slackapprove/slackbot/internal/slackfake"
	"github.com/slackapprove/slackbot/internal/slacktest"
)

// fakeAPI is a server in slackbot's place that answers every request with
// status and body, and counts the requests.
func fakeAPI(t *testing.T, status int, body string) (*httptest.Server, *atomic.Int64) {
	t.Helper()
	var hits atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		hits.Add(1)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_, _ = w.Write([]byte(body))
	}))
	t.Cleanup(srv.Close)
	return srv, &hits
}

// closedPort returns a loopback address nothing listens on.
func closedPort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}

// TestHookFailsClosedWithoutAnswer: slackbot down, a refused key, a
// server error, and answers the hook cannot read all deny, saying why.
func TestHookFailsClosedWithoutAnswer(t *testing.T) {
	bash := hookInput(t, "claude-code/bash.json")
	down := closedPort(t)
	internal, _ := fakeAPI(t, http.StatusInternalServerError,
		`{"error":{"code":"internal","message":"slackbot failed to handle the request; try again later"}}`)
	html, _ := fakeAPI(t, http.StatusCreated, `<html><body>Sign in to continue</body></html>`)
	unknown, _ := fakeAPI(t, http.StatusCreated, `{"token":"tok","status":"approved"}`)
	e := newHookEnv(t)
	for _, tt := range []struct {
		name, golden, agent, url, key string
	}{
		{"slackbot down", "fail-down", "claude-code", "http://" + down, keyBilling},
		{"slackbot down, Codex", "codex-fail-down", "codex", "http://" + down, keyBilling},
		{"a key slackbot does not know", "fail-unauthorized", "claude-code", e.srv.URL, "not-a-key-0123456789"},
		{"a server error", "fail-internal", "claude-code", internal.URL, keyBilling},
		{"an answer that is not JSON", "fail-not-json", "claude-code", html.URL, keyBilling},
		{"an answer with an unknown status", "fail-unknown-status", "claude-code", unknown.URL, keyBilling},
	} {
		t.Run(tt.name, func(t *testing.T) {
			input := bash
			if tt.agent == "codex" {
				input = hookInput(t, "codex/bash.json")
			}
			r := waitHook(t, startHook(t.Context(), input, map[string]string{"SLACKBOT_URL": tt.url, "SLACKBOT_API_KEY": tt.key}, tt.agent))
			checkHookGolden(t, tt.golden, r.stdout, "URL", tt.url, "ADDR", down)
			if strings.Contains(r.stdout+r.stderr, tt.key) {
				t.Errorf("the hook's output shows the API key: %s %s", r.stdout, r.stderr)
			}
		})
	}
}

// TestHookRefusesBadInput: input the hook cannot act on is denied before
// anything is sent to slackbot.
func TestHookRefusesBadInput(t *testing.T) {
	api, hits := fakeAPI(t, http.StatusCreated, `{"token":"tok","status":"pending"}`)
	vars := map[string]string{"SLACKBOT_URL": api.URL, "SLACKBOT_API_KEY": keyBilling}
	bash := hookInput(t, "claude-code/bash.json")
	deep := `{"hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":{"a":` + strings.Repeat("[", 64) + strings.Repeat("]", 64) + `}}`
	oversize := append(bytes.Repeat([]byte(" "), maxHookInput-len(bash)+1), bash...)
	for _, tt := range []struct {
		name, golden string
		input        []byte
		vars         map[string]string
		args         []string
	}{
		{"stdin over 1 MiB", "fail-oversize", oversize, vars, nil},
		{"stdin not JSON", "fail-stdin-not-json", []byte("rm -rf build/\n"), vars, nil},
		{"another event", "fail-wrong-event", bytes.Replace(bash, []byte(`"PreToolUse"`), []byte(`"PostToolUse"`), 1), vars, nil},
		{"no tool_input", "fail-no-tool-input", []byte(`{"hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":"ls"}`), vars, nil},
		{"tool_input too deep", "fail-too-deep", []byte(deep), vars, nil},
		{"no SLACKBOT_URL", "fail-no-url", bash, map[string]string{"SLACKBOT_API_KEY": keyBilling}, nil},
		{"no SLACKBOT_API_KEY", "fail-no-key", bash, map[string]string{"SLACKBOT_URL": api.URL}, nil},
		{"a bad flag", "fail-bad-flag", bash, vars, []string{"--timout", "1m"}},
		{"a bad timeout", "fail-bad-timeout", bash, vars, []string{"--timeout", "100ms"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := waitHook(t, startHook(t.Context(), tt.input, tt.vars, append([]string{"claude-code"}, tt.args...)...))
			checkHookGolden(t, tt.golden, r.stdout, "URL", api.URL)
		})
	}
	if n := hits.Load(); n != 0 {
		t.Errorf("slackbot got %d requests for input the hook refuses, want none", n)
	}

	// An agent the hook does not know gets no JSON it might misread:
	// the usage, and a non-zero exit (TestHookWithoutAgentExits2).
	r := <-startHook(t.Context(), bash, vars, "cursor")
	if r.err == nil || r.stdout != "" || !strings.Contains(r.err.Error(), "claude-code or codex") {
		t.Errorf("hook cursor: got %v, stdout %q; want the usage and no output", r.err, r.stdout)
	}
}

// TestHookWithoutAgentExits2: a hook command that names no agent it
// knows (none, another, a flag in its place) cannot answer in any
// agent's format, so it exits 2, which Claude Code (and Gemini CLI) read
// as "block this call", with the reason on stderr; never 1, which lets
// the call go on. Run as the built program, for the real exit status.
func TestHookWithoutAgentExits2(t *testing.T) {
	bin := slackbotBinary(t)
	api, hits := fakeAPI(t, http.StatusCreated, `{"token":"tok","status":"pending"}`)
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
	full, err := os.OpenFile("/dev/full", os.O_WRONLY, 0)
	if err != nil {
		t.Skipf("no /dev/full: %v", err)
	}
	defer full.Close()
	var stderr bytes.Buffer
	cmd := exec.CommandContext(t.Context(), slackbotBinary(t), "hook", "claude-code")
	cmd.Env = []string{"SLACKBOT_URL=http://" + closedPort(t), "SLACKBOT_API_KEY=" + keyBilling}
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
	e := newHookEnv(t)
	vars := e.hookVars(keyBilling)
	input := hookInput(t, "claude-code/bash.json")

	t.Run("--timeout passes", func(t *testing.T) {
		before := len(e.cards())
		done := startHook(t.Context(), input, vars, "claude-code", "--timeout", "2s")
		card := e.waitLiveCard(t, before, "rm -rf build/")
		checkHookGolden(t, "fail-timeout", waitHook(t, done).stdout)
		e.waitCardSays(t, card, "Cancelled")
	})
	t.Run("interrupted", func(t *testing.T) {
		before := len(e.cards())
		ctx, interrupt := context.WithCancel(t.Context())
		defer interrupt()
		done := startHook(ctx, input, vars, "claude-code")
		card := e.waitLiveCard(t, before, "rm -rf build/")
		interrupt()
		checkHookGolden(t, "fail-interrupted", waitHook(t, done).stdout)
		e.waitCardSays(t, card, "Cancelled")
	})
	t.Run("the request expires", func(t *testing.T) {
		before := len(e.cards())
		done := startHook(t.Context(), input, vars, "claude-code")
		card := e.waitLiveCard(t, before, "rm -rf build/")
		e.clock.Add(2 * time.Hour)
		checkHookGolden(t, "fail-expired", waitHook(t, done).stdout)
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

// scriptedAPI is a server in slackbot's place that answers the create
// with a pending request and each long poll with the next of polls (a
// status and a body), counting the cancellations.
func scriptedAPI(t *testing.T, polls ...[2]string) (*httptest.Server, *atomic.Int64) {
	t.Helper()
	var next, cancels atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		switch {
		case r.Method == http.MethodPost && r.URL.Path == "/v1/approvals":
			w.WriteHeader(http.StatusCreated)
			_, _ = w.Write([]byte(`{"token":"tok","status":"pending"}`))
		case r.Method == http.MethodGet && r.URL.Path == "/v1/approvals/tok" && r.URL.Query().Get("wait") != "":
			i := int(next.Add(1)) - 1
			if i >= len(polls) {
				t.Errorf("poll %d: the script has %d", i+1, len(polls))
				i = len(polls) - 1
			}
			status := http.StatusOK
			if polls[i][0] != "200" {
				status = http.StatusServiceUnavailable
			}
			w.WriteHeader(status)
			_, _ = w.Write([]byte(polls[i][1]))
		case r.Method == http.MethodDelete && r.URL.Path == "/v1/approvals/tok":
			cancels.Add(1)
			_, _ = w.Write([]byte(`{"token":"tok","status":"cancelled"}`))
		default:
			t.Errorf("unexpected %s %s", r.Method, r.URL)
			w.WriteHeader(http.StatusNotFound)
		}
	}))
	t.Cleanup(srv.Close)
	return srv, &cancels
}

// TestHookRidesOutPollFailures: a long wait outlives a few failed polls
// (a replica restarting behind the load balancer); more in a row deny,
// and the request is cancelled.
func TestHookRidesOutPollFailures(t *testing.T) {
	input := hookInput(t, "claude-code/bash.json")
	unavailable := [2]string{"503", `{"error":{"code":"internal","message":"restarting"}}`}
	pending := [2]string{"200", `{"token":"tok","status":"pending"}`}
	approved := [2]string{"200", `{"token":"tok","status":"resolved","results":{"approvals":{"toolu_01HcWq7sYh3cVbY5Zp3kK2Xa":true},"answered_by":{"toolu_01HcWq7sYh3cVbY5Zp3kK2Xa":"U0ALICE"}}}`}

	api, cancels := scriptedAPI(t, pending, unavailable, unavailable, pending, unavailable, approved)
	r := waitHook(t, startHook(t.Context(), input, map[string]string{"SLACKBOT_URL": api.URL, "SLACKBOT_API_KEY": keyBilling}, "claude-code"))
	checkHookGolden(t, "claude-code-bash-allow", r.stdout)
	if n := cancels.Load(); n != 0 {
		t.Errorf("%d cancellations of a request that was approved", n)
	}

	api, cancels = scriptedAPI(t, unavailable, unavailable, unavailable, unavailable)
	r = waitHook(t, startHook(t.Context(), input, map[string]string{"SLACKBOT_URL": api.URL, "SLACKBOT_API_KEY": keyBilling}, "claude-code"))
	checkHookGolden(t, "fail-polls", r.stdout, "URL", api.URL)
	if n := cancels.Load(); n != 1 {
		t.Errorf("%d cancellations after the polls failed, want 1", n)
	}
}

// TestHookInterruptedWhileSlackbotHangs: an interruption while slackbot
// has not answered the create ends the hook after a short grace with the
// interruption's denial, not after the create's own timeout.
func TestHookInterruptedWhileSlackbotHangs(t *testing.T) {
	got := make(chan struct{}, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body) // then the server sees the hook hang up
		got <- struct{}{}
		<-r.Context().Done() // until the hook gives up
	}))
	t.Cleanup(srv.Close)
	ctx, interrupt := context.WithCancel(t.Context())
	defer interrupt()
	done := startHook(ctx, hookInput(t, "claude-code/bash.json"), map[string]string{"SLACKBOT_URL": srv.URL, "SLACKBOT_API_KEY": keyBilling}, "claude-code")
	<-got
	interrupt()
	checkHookGolden(t, "fail-interrupted", waitHook(t, done).stdout)
}
