package hook

// The hook fails closed: whatever keeps a decision from arriving, the
// agent gets a denial it shows, with the reason, and Run returns nil (the
// command exits 0: the agents read the JSON only on exit 0; other codes
// let the tool run or fall back to the agent's own prompt). These tests
// put a server in slackbot's place; cmd/slackbot's hook tests run the hook
// against the whole program, with people deciding in the fake Slack.

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/slackapprove/slackbot/internal/apitest"
	"github.com/slackapprove/slackbot/internal/hooktest"
)

const keyBilling = apitest.KeyBilling

// startHook runs the hook command with args in the background, with input
// on stdin and vars as its environment.
func startHook(ctx context.Context, input []byte, vars map[string]string, args ...string) <-chan hooktest.Result {
	return hooktest.Start(ctx, Run, input, vars, args...)
}

var (
	files           = hooktest.Files("testdata")
	hookInput       = files.Input
	checkHookGolden = files.CheckGolden
	waitHook        = hooktest.Wait
	fakeAPI         = hooktest.FakeAPI
	closedPort      = hooktest.ClosedPort
)

// TestHookFailsClosedWithoutAnswer: slackbot down, a server error, and
// answers the hook cannot read all deny, saying why (a key slackbot
// refuses: cmd/slackbot's TestHookFailsClosedOnUnknownKey).
func TestHookFailsClosedWithoutAnswer(t *testing.T) {
	t.Parallel()
	bash := hookInput(t, "claude-code/bash.json")
	down := closedPort(t)
	internal, _ := fakeAPI(t, http.StatusInternalServerError,
		`{"error":{"code":"internal","message":"slackbot failed to handle the request; try again later"}}`)
	html, _ := fakeAPI(t, http.StatusCreated, `<html><body>Sign in to continue</body></html>`)
	unknown, _ := fakeAPI(t, http.StatusCreated, `{"token":"tok","status":"approved"}`)
	for _, tt := range []struct {
		name, golden, agent, url, key string
	}{
		{"slackbot down", "fail-down", "claude-code", "http://" + down, keyBilling},
		{"slackbot down, Codex", "codex-fail-down", "codex", "http://" + down, keyBilling},
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
			checkHookGolden(t, tt.golden, r.Stdout, "URL", tt.url, "ADDR", down)
			if strings.Contains(r.Stdout+r.Stderr, tt.key) {
				t.Errorf("the hook's output shows the API key: %s %s", r.Stdout, r.Stderr)
			}
		})
	}
}

// TestHookRefusesBadInput: input the hook cannot act on is denied before
// anything is sent to slackbot.
func TestHookRefusesBadInput(t *testing.T) {
	t.Parallel()
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
			checkHookGolden(t, tt.golden, r.Stdout, "URL", api.URL)
		})
	}
	if n := hits.Load(); n != 0 {
		t.Errorf("slackbot got %d requests for input the hook refuses, want none", n)
	}

	// An agent the hook does not know gets no JSON it might misread:
	// the usage, and an error, for exit status 2 (cmd/slackbot's
	// TestHookWithoutAgentExits2).
	r := <-startHook(t.Context(), bash, vars, "cursor")
	if r.Err == nil || r.Stdout != "" || !strings.Contains(r.Err.Error(), "claude-code, codex or gemini") {
		t.Errorf("hook cursor: got %v, stdout %q; want the usage and no output", r.Err, r.Stdout)
	}
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
	t.Parallel()
	input := hookInput(t, "claude-code/bash.json")
	unavailable := [2]string{"503", `{"error":{"code":"internal","message":"restarting"}}`}
	pending := [2]string{"200", `{"token":"tok","status":"pending"}`}
	approved := [2]string{"200", `{"token":"tok","status":"resolved","results":{"approvals":{"toolu_01HcWq7sYh3cVbY5Zp3kK2Xa":true},"answered_by":{"toolu_01HcWq7sYh3cVbY5Zp3kK2Xa":"U0ALICE"}}}`}

	api, cancels := scriptedAPI(t, pending, unavailable, unavailable, pending, unavailable, approved)
	r := waitHook(t, startHook(t.Context(), input, map[string]string{"SLACKBOT_URL": api.URL, "SLACKBOT_API_KEY": keyBilling}, "claude-code"))
	checkHookGolden(t, "claude-code-bash-allow", r.Stdout)
	if n := cancels.Load(); n != 0 {
		t.Errorf("%d cancellations of a request that was approved", n)
	}

	api, cancels = scriptedAPI(t, unavailable, unavailable, unavailable, unavailable)
	r = waitHook(t, startHook(t.Context(), input, map[string]string{"SLACKBOT_URL": api.URL, "SLACKBOT_API_KEY": keyBilling}, "claude-code"))
	checkHookGolden(t, "fail-polls", r.Stdout, "URL", api.URL)
	if n := cancels.Load(); n != 1 {
		t.Errorf("%d cancellations after the polls failed, want 1", n)
	}
}

// TestHookInterruptedWhileSlackbotHangs: an interruption while slackbot
// has not answered the create ends the hook after a short grace with the
// interruption's denial, not after the create's own timeout.
func TestHookInterruptedWhileSlackbotHangs(t *testing.T) {
	t.Parallel()
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
	checkHookGolden(t, "fail-interrupted", waitHook(t, done).Stdout)
}

// TestHookRefusesToolInputReadTwoWays: a tool_input that two parsers
// would read as two calls (the card shows the first "command", whatever
// runs it the last) is denied, naming where, before slackbot is asked.
func TestHookRefusesToolInputReadTwoWays(t *testing.T) {
	t.Parallel()
	api, hits := fakeAPI(t, http.StatusCreated, `{"token":"tok","status":"pending"}`)
	vars := map[string]string{"SLACKBOT_URL": api.URL, "SLACKBOT_API_KEY": keyBilling}
	event := func(input string) []byte {
		return []byte(`{"hook_event_name":"PreToolUse","tool_name":"Bash","tool_use_id":"toolu_1","tool_input":` + input + `}`)
	}
	for _, tt := range []struct{ input, want string }{
		{`{"command":"ls","description":"` + strings.Repeat("x", 3000) + `","command":"rm -rf ~"}`, `tool_input: duplicate member "command" at /`},
		{`{"command":"ls","env":{"PATH":"/bin","\u0050ATH":"/tmp/evil"}}`, `tool_input: duplicate member "PATH" at /env`},
		{`{"command":"ls \udc00"}`, `tool_input: string at /command is not Unicode text`},
	} {
		r := waitHook(t, startHook(t.Context(), event(tt.input), vars, "claude-code", "--timeout", "1s"))
		var out struct {
			HookSpecificOutput struct{ PermissionDecision, PermissionDecisionReason string }
		}
		if err := json.Unmarshal([]byte(r.Stdout), &out); err != nil || out.HookSpecificOutput.PermissionDecision != "deny" ||
			!strings.Contains(out.HookSpecificOutput.PermissionDecisionReason, tt.want) {
			t.Errorf("tool_input %.40s…: got %s; want a deny saying %q", tt.input, r.Stdout, tt.want)
		}
	}
	if n := hits.Load(); n != 0 {
		t.Errorf("slackbot got %d requests for input the hook refuses, want none", n)
	}
}
