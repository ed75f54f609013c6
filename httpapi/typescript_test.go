package httpapi_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/slackapprove/slackbot/bot"
	"github.com/slackapprove/slackbot/internal/slackfake"
	"github.com/slackapprove/slackbot/internal/slacktest"
	"github.com/slackapprove/slackbot/internal/testbin"
)

// TestTypeScriptClients runs clients/typescript's tests (node --test) with
// the real framework packages from its lockfile against this slackbot
// (fake Slack, real Redis). The node tests play the agent; this test plays
// the approvers through a small loopback control API: POST /decide makes
// a user click a call's card (signed as Slack signs). Expiry is real: the
// node tests ask for a one-second timeout and nobody clicks. Node is needed ($NODE or node on PATH;
// npm too when node_modules is missing): without it the test fails when
// node is required (scripts/test, CI=true) and is skipped otherwise.
func TestTypeScriptClients(t *testing.T) {
	node := testbin.Find(t, "node")
	dir, err := filepath.Abs(filepath.Join("..", "clients", "typescript"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "node_modules", ".package-lock.json")); err != nil {
		npm := testbin.Find(t, "npm")
		runNode(t, dir, nil, npm, "ci", "--no-audit", "--no-fund")
	}
	e := newEnv(t, envOptions{})
	control := httptest.NewServer(e.controlAPI())
	t.Cleanup(control.Close)

	runNode(t, dir, nil, node, filepath.Join("node_modules", "typescript", "bin", "tsc"), "-p", ".")
	tests, err := filepath.Glob(filepath.Join(dir, "dist", "test", "*.test.js"))
	if err != nil || len(tests) == 0 {
		t.Fatalf("no compiled tests in clients/typescript/dist/test (%v)", err)
	}
	out := runNode(t, dir, []string{
		"SLACKBOT_URL=" + e.srv.URL,
		"SLACKBOT_API_KEY=" + keyBilling,
		"SLACKBOT_CONTROL_URL=" + control.URL,
		// The Agents SDK would export traces to api.openai.com.
		"OPENAI_AGENTS_DISABLE_TRACING=1",
	}, node, append([]string{"--test", "--test-concurrency=1", "--test-reporter=spec"}, tests...)...)
	for _, want := range []string{"ℹ fail 0", "ℹ cancelled 0", "ℹ skipped 0"} {
		if !strings.Contains(out, want) {
			t.Errorf("node --test output lacks %q", want)
		}
	}
}

// runNode runs a program in dir with extra environment, logs its output,
// and fails t unless it succeeds.
func runNode(t *testing.T, dir string, env []string, prog string, args ...string) string {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), prog, args...)
	cmd.Dir = dir
	cmd.Env = append(append(os.Environ(), "PATH="+filepath.Dir(prog)+string(os.PathListSeparator)+os.Getenv("PATH")), env...)
	cmd.WaitDelay = 5 * time.Second
	out, err := cmd.CombinedOutput()
	t.Logf("%s %s:\n%s", filepath.Base(prog), strings.Join(args, " "), out)
	if err != nil {
		t.Fatalf("%s %s: %v", filepath.Base(prog), strings.Join(args, " "), err)
	}
	return string(out)
}

// decision is a control API request: user clicks action ("approve",
// "deny", "deny_reason" with reason) on the card of a call.
type decision struct {
	Token      string `json:"token"`
	ToolCallID string `json:"tool_call_id"`
	Action     string `json:"action"`
	User       string `json:"user"`
	Reason     string `json:"reason"`
}

// controlAPI is the approvers' side of the TypeScript tests.
func (e *env) controlAPI() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /decide", func(w http.ResponseWriter, r *http.Request) {
		var d decision
		if err := json.NewDecoder(r.Body).Decode(&d); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		if d.User == "" {
			d.User = alice
		}
		if err := e.decide(r.Context(), d); err != nil {
			e.t.Errorf("control: decide %s %s: %v", d.ToolCallID, d.Action, err)
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	})
	return mux
}

// decide clicks as d says, on the card of d's call, once it is posted.
func (e *env) decide(ctx context.Context, d decision) error {
	m, err := e.waitCard(ctx, d.Token, d.ToolCallID)
	if err != nil {
		return err
	}
	btn, ok := button(m, d.Action)
	if !ok {
		return fmt.Errorf("card %s has no %q button", m.TS, d.Action)
	}
	trigger := e.slack.IssueTrigger(d.User, "")
	click := slacktest.Click{Team: testTeam, User: d.User, Message: m, Button: btn, TriggerID: trigger}.Payload()
	if status, err := e.slackPost(ctx, click); err != nil || status != http.StatusOK {
		return fmt.Errorf("click %s: got %d, %v", d.Action, status, err)
	}
	if d.Action != bot.ActionIDDenyReason {
		return nil
	}
	view, err := poll(ctx, func() (slackfake.View, bool) {
		for _, v := range e.slack.Views() {
			if v.TriggerID == trigger && v.CallbackID == bot.CallbackDenyReason {
				return v, true
			}
		}
		return slackfake.View{}, false
	})
	if err != nil {
		return fmt.Errorf("the deny_reason modal: %w", err)
	}
	sub := slacktest.Submission{Team: testTeam, User: d.User, View: view,
		Values: map[string]map[string]string{bot.BlockIDDenyReason: {bot.ActionIDDenyReasonInput: d.Reason}}}.Payload()
	if status, err := e.slackPost(ctx, sub); err != nil || status != http.StatusOK {
		return fmt.Errorf("view_submission: got %d, %v", status, err)
	}
	return nil
}

// waitCard is card for a handler goroutine: it returns an error instead
// of failing the test.
func (e *env) waitCard(ctx context.Context, token, callID string) (slackfake.Message, error) {
	return poll(ctx, func() (slackfake.Message, bool) {
		rec, err := e.store.Get(ctx, token)
		if err != nil {
			return slackfake.Message{}, false
		}
		c := rec.Call(callID)
		if c == nil || c.Message.TS == "" {
			return slackfake.Message{}, false
		}
		return e.slack.Message(c.Message.Channel, c.Message.TS)
	})
}

// poll calls f until it reports true, for at most 10 seconds.
func poll[T any](ctx context.Context, f func() (T, bool)) (T, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	for {
		if v, ok := f(); ok {
			return v, nil
		}
		select {
		case <-ctx.Done():
			var zero T
			return zero, errors.New("timed out")
		case <-time.After(5 * time.Millisecond):
		}
	}
}
