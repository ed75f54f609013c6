package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/slackapprove/slackbot/bot"
	"github.com/slackapprove/slackbot/internal/apitest"
	"github.com/slackapprove/slackbot/internal/slackfake"
	"github.com/slackapprove/slackbot/internal/slacktest"
	"github.com/slackapprove/slackbot/internal/testbin"
)

// The clients' tests (clients/python, clients/typescript) run against the
// whole app with the API's test keys and routes (internal/apitest).
const keyBilling = apitest.KeyBilling

// newAPIEnv is the whole app with the HTTP API on, as the clients' tests
// and the API's end-to-end tests use it: the wall clock, so a request's
// timeout passes in real time.
func newAPIEnv(t *testing.T) *env {
	t.Helper()
	return newEnv(t, envOptions{routes: apitest.Routes, apiKeys: apitest.Keys, wallClock: true})
}

// TestPythonExample runs clients/python's tests against this
// slackbot (fake Slack, real Redis), with an approver who clicks Approve
// on every card as it appears (and edits in Slack's form the one card
// showing pythonEditMe). Python is needed ($PYTHON3 or python3 on
// PATH): without it the test fails when python3 is required (scripts/test
// and CI=true require it, see internal/testbin) and is skipped otherwise.
//
// The suite runs twice, as its users meet the client: without pydantic_ai
// (hidden even where it is installed: the client returns dicts) and with
// it (the client returns Pydantic AI's objects). PyPI is unreachable
// here, so "with" is the stand-in in clients/python/standin, whose
// definitions are copied from the real package; like the real one it
// needs pydantic, and the subtest fails (when python3 is required) or is
// skipped when the python3 found has none. A third run is under Python
// 3.10, the oldest the client supports (as Pydantic AI does), when one is
// found (python310); the suite's own 3.10 check (test_py310: syntax and
// standard-library names) runs in every run.
func TestPythonExample(t *testing.T) {
	t.Parallel()
	py := testbin.Find(t, "python3")
	dir, err := filepath.Abs(filepath.Join("..", "..", "clients", "python"))
	if err != nil {
		t.Fatal(err)
	}
	for _, mode := range []struct{ name, py, env, says string }{
		{"without pydantic_ai", py, "hide", "pydantic_ai: not importable (hidden)"},
		{"with pydantic_ai", py, "standin", "pydantic_ai: the stand-in "},
		{"python 3.10 without pydantic_ai", "3.10", "hide", "pydantic_ai: not importable (hidden)"},
	} {
		t.Run(mode.name, func(t *testing.T) {
			t.Parallel()
			py := mode.py
			if py == "3.10" {
				py = python310(t)
			}
			if mode.env == "standin" {
				if out, err := exec.CommandContext(t.Context(), py, "-c", "import pydantic").CombinedOutput(); err != nil {
					msg := fmt.Sprintf("%s has no pydantic, which Pydantic AI (and its stand-in) needs: %v\n%s", py, err, out)
					if testbin.Required("python3") {
						t.Fatal(msg)
					}
					t.Skip("SKIPPED, NOT TESTED: " + msg)
				}
			}
			out := runPythonSuite(t, py, dir, "SLACKBOT_TEST_PYDANTIC_AI="+mode.env)
			if !strings.Contains(out, mode.says) {
				t.Errorf("the Python output lacks %q: the suite did not run %s", mode.says, mode.name)
			}
			// Pydantic AI's DeferredToolResults has no answered_by: with
			// it, the receipts name who approved (the tests check them).
			by := func(ids ...string) string {
				if mode.env == "standin" {
					return `"answered_by":{}`
				}
				var parts []string
				for _, id := range ids {
					who := "U0ALICE"
					if id == "call_2" {
						who = "billing"
					}
					parts = append(parts, fmt.Sprintf("%q:%q", id, who))
				}
				return `"answered_by":{` + strings.Join(parts, ",") + `}`
			}
			got := normalizeReceipts(out)
			for _, want := range []string{
				`LIVE handler results: {"calls":{},"approvals":{"call_live_1":true},"metadata":{"call_live_1":{"slackbot_receipt":"…"}},` + by("call_live_1") + `}`,
				`LIVE slack edit results: {"calls":{},"approvals":{"call_edit_1":{"override_args":{"path":"/tmp/edited.txt"},"kind":"tool-approved"}},"metadata":{"call_edit_1":{"slackbot_receipt":"…"}},` + by("call_edit_1") + `}`,
				`LIVE stop-the-world results: {"calls":{"call_2":{"rows":3}},"approvals":{"call_1":true,"call_3":true},"metadata":{"call_1":{"slackbot_receipt":"…"},"call_3":{"slackbot_receipt":"…"}},` + by("call_1", "call_2", "call_3") + `}`,
			} {
				if !strings.Contains(got, want) {
					t.Errorf("the Python output lacks %s", want)
				}
			}
			if strings.Contains(got, "skipped 'set SLACKBOT_URL") {
				t.Errorf("the live Python tests were skipped")
			}
		})
	}
}

// python310 returns a Python 3.10: $PYTHON310 (which must be one),
// pyenv's, or python3.10 on PATH (pyenv's shim there runs only when pyenv
// selects 3.10, hence the check that it runs). It skips t when there is
// none: the suite's own 3.10 check (test_py310) still runs under the other
// Pythons.
func python310(t *testing.T) string {
	t.Helper()
	is310 := func(p string) error {
		out, err := exec.CommandContext(t.Context(), p, "-c", "import sys; assert sys.version_info[:2] == (3, 10), sys.version").CombinedOutput()
		if err != nil {
			return fmt.Errorf("%s is no Python 3.10: %v\n%s", p, err, out)
		}
		return nil
	}
	if p := os.Getenv("PYTHON310"); p != "" {
		if err := is310(p); err != nil {
			t.Fatalf("PYTHON310: %v", err)
		}
		return p
	}
	home, _ := os.UserHomeDir()
	candidates, _ := filepath.Glob(filepath.Join(home, ".pyenv", "versions", "3.10.*", "bin", "python3.10"))
	if p, err := exec.LookPath("python3.10"); err == nil {
		candidates = append(candidates, p)
	}
	for _, p := range candidates {
		if is310(p) == nil {
			return p
		}
	}
	t.Skip("SKIPPED, NOT TESTED: no Python 3.10 ($PYTHON310, ~/.pyenv/versions/3.10.*, python3.10 on PATH): the suite ran under " +
		"the other Pythons only, with its check that the client's files parse as 3.10 and use nothing 3.11 added (test_py310)")
	return ""
}

// runPythonSuite runs clients/python's unittest suite with extra
// environment against a slackbot of its own, whose approver clicks every
// card, and returns its output; it fails t unless the suite passes.
func runPythonSuite(t *testing.T, py, dir string, env ...string) string {
	t.Helper()
	e := newAPIEnv(t)
	ctx, cancel := context.WithCancel(t.Context())
	var wg sync.WaitGroup
	clicks := 0
	wg.Go(func() { clicks = e.approveEverything(ctx, alice) })

	cmd := exec.CommandContext(t.Context(), py, "-m", "unittest", "-v", "test_slackbot_client")
	cmd.Dir = dir
	cmd.Env = append(append(os.Environ(),
		"SLACKBOT_URL="+e.srv.URL,
		"SLACKBOT_API_KEY="+keyBilling,
		"SLACKBOT_LIVE_TIMEOUT=60",
		"PYTHONDONTWRITEBYTECODE=1",
		"PYTHONUNBUFFERED=1",
	), env...)
	cmd.WaitDelay = 5 * time.Second
	out, err := cmd.CombinedOutput()
	cancel()
	wg.Wait()
	t.Logf("%s -m unittest (%d cards approved):\n%s", py, clicks, out)
	if err != nil {
		t.Fatalf("the Python tests failed: %v", err)
	}
	return string(out)
}

// slackPost sends an interactivity payload signed as Slack signs them and
// returns the status; it fails no test, for goroutines.
func (e *env) slackPost(ctx context.Context, payload []byte) (int, error) {
	resp, err := slacktest.Post(ctx, e.srv.URL+"/slack/interactivity", slacktest.FormContentType,
		slacktest.Form(payload), testSecret, time.Now())
	if err != nil {
		return 0, err
	}
	resp.Body.Close()
	return resp.StatusCode, nil
}

// pythonEditMe and pythonEdited are the Python tests' Slack edit: a card
// whose arguments show pythonEditMe, and that offers Edit, is edited to
// pythonEdited instead of approved as it is.
const (
	pythonEditMe = "/tmp/edit-me.txt"
	pythonEdited = `{"path": "/tmp/edited.txt"}`
)

// approveEverything clicks Approve, as user, on every card that offers it
// until ctx ends (or Edit, on a card showing pythonEditMe), and returns
// how many it clicked.
func (e *env) approveEverything(ctx context.Context, user string) int {
	clicked := map[string]bool{}
	for ctx.Err() == nil {
		for _, ch := range []string{approvalsCh, general} {
			for _, m := range e.slack.Messages(ch) {
				btn, ok := slacktest.Button(m, "approve")
				if !ok || clicked[m.TS] {
					continue
				}
				clicked[m.TS] = true
				if _, edit := slacktest.Button(m, bot.ActionIDEdit); edit && strings.Contains(string(m.BlocksJSON), pythonEditMe) {
					if err := e.press(ctx, m, decision{Action: bot.ActionIDEdit, User: user, Args: pythonEdited}); err != nil && ctx.Err() == nil {
						e.t.Errorf("edit %s: %v", m.TS, err)
					}
					continue
				}
				click := slacktest.Click{Team: testTeam, User: user, Message: m, Button: btn, TriggerID: e.slack.IssueTrigger(user, "")}.Payload()
				if status, err := e.slackPost(ctx, click); err != nil || status != http.StatusOK {
					if ctx.Err() == nil {
						e.t.Errorf("approve %s: got %d, %v", m.TS, status, err)
					}
				}
			}
		}
		select {
		case <-ctx.Done():
		case <-time.After(10 * time.Millisecond):
		}
	}
	return len(clicked)
}

// TestTypeScriptClients runs clients/typescript's tests (node --test) with
// the real framework packages from its lockfile against this slackbot
// (fake Slack, real Redis). The node tests play the agent; this test plays
// the approvers through a small loopback control API: POST /decide makes
// a user click a call's card (signed as Slack signs). Expiry is real: the
// node tests ask for a one-second timeout and nobody clicks. Node is needed ($NODE or node on PATH;
// npm too when node_modules is missing): without it the test fails when
// node is required (scripts/test, CI=true) and is skipped otherwise.
func TestTypeScriptClients(t *testing.T) {
	t.Parallel()
	node := testbin.Find(t, "node")
	cpuTurn(t)
	dir, err := filepath.Abs(filepath.Join("..", "..", "clients", "typescript"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "node_modules", ".package-lock.json")); err != nil {
		npm := testbin.Find(t, "npm")
		runNode(t, dir, nil, npm, "ci", "--no-audit", "--no-fund")
	}
	e := newAPIEnv(t)
	control := httptest.NewServer(e.controlAPI())
	t.Cleanup(control.Close)

	runNode(t, dir, nil, node, filepath.Join("node_modules", "typescript", "bin", "tsc"), "-p", ".")
	checkLibBuilt(t, node, dir)
	// The READMEs' TypeScript snippets (TestReadmeTypeScriptExamples), under strict.
	runNode(t, dir, nil, node, filepath.Join("node_modules", "typescript", "bin", "tsc"), "-p", "tsconfig.examples.json")
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
// "deny", "deny_reason" with reason, "edit" with args: the edit form's
// text) on the card of a call.
type decision struct {
	Token      string `json:"token"`
	ToolCallID string `json:"tool_call_id"`
	Action     string `json:"action"`
	User       string `json:"user"`
	Reason     string `json:"reason"`
	Args       string `json:"args"`
}

// controlAPI is the approvers' side of the TypeScript tests. A form
// slackbot refuses (an edit that does not fit the schema) is answered 422
// with slackbot's answer, and a button the card lacks 409, for the node
// test to check.
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
		var refused formRefused
		if err := e.decide(r.Context(), d); errors.As(err, &refused) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusUnprocessableEntity)
			w.Write(refused)
			return
		} else if _, ok := err.(noButton); ok {
			http.Error(w, err.Error(), http.StatusConflict)
			return
		} else if err != nil {
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
	return e.press(ctx, m, d)
}

// press clicks d's button on card m as d.User and submits the form it
// opens, if any, with d's reason or arguments.
func (e *env) press(ctx context.Context, m slackfake.Message, d decision) error {
	btn, ok := slacktest.Button(m, d.Action)
	if !ok {
		return noButton(fmt.Sprintf("card %s has no %q button", m.TS, d.Action))
	}
	trigger := e.slack.IssueTrigger(d.User, "")
	click := slacktest.Click{Team: testTeam, User: d.User, Message: m, Button: btn, TriggerID: trigger}.Payload()
	if status, err := e.slackPost(ctx, click); err != nil || status != http.StatusOK {
		return fmt.Errorf("click %s: got %d, %v", d.Action, status, err)
	}
	var callback string
	var values map[string]map[string]string
	switch d.Action {
	case bot.ActionIDDenyReason:
		callback, values = bot.CallbackDenyReason, map[string]map[string]string{bot.BlockIDDenyReason: {bot.ActionIDDenyReasonInput: d.Reason}}
	case bot.ActionIDEdit:
		callback, values = bot.CallbackEditArgs, map[string]map[string]string{bot.BlockIDEditArgs: {bot.ActionIDEditArgsInput: d.Args}}
	default:
		return nil
	}
	view, err := pollFor(ctx, func() (slackfake.View, bool) {
		for _, v := range e.slack.Views() {
			if v.TriggerID == trigger && v.CallbackID == callback {
				return v, true
			}
		}
		return slackfake.View{}, false
	})
	if err != nil {
		return fmt.Errorf("the %s modal: %w", d.Action, err)
	}
	sub := slacktest.Submission{Team: testTeam, User: d.User, View: view, Values: values}.Payload()
	resp, err := slacktest.Post(ctx, e.srv.URL+"/slack/interactivity", slacktest.FormContentType, slacktest.Form(sub), testSecret, time.Now())
	if err != nil {
		return fmt.Errorf("view_submission: %w", err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<16))
	switch {
	case resp.StatusCode != http.StatusOK:
		return fmt.Errorf("view_submission: got %d %s", resp.StatusCode, body)
	case strings.Contains(string(body), `"response_action":"errors"`):
		return formRefused(body)
	}
	return nil
}

// formRefused is slackbot's answer to a form it refused, the problems
// under the inputs: for a node test that expects a refusal, not a failure.
type formRefused []byte

func (f formRefused) Error() string { return "the form was refused: " + string(f) }

// noButton says a card lacks the button a node test asked to click: for
// a test that expects it missing (409), not a failure.
type noButton string

func (b noButton) Error() string { return string(b) }

// waitCard is card for a handler goroutine: it returns an error instead
// of failing the test.
func (e *env) waitCard(ctx context.Context, token, callID string) (slackfake.Message, error) {
	return pollFor(ctx, func() (slackfake.Message, bool) {
		rec, err := e.app.store.Get(ctx, token)
		if err != nil {
			return slackfake.Message{}, false
		}
		c := rec.Call(callID)
		if c == nil || c.Message.ID == "" {
			return slackfake.Message{}, false
		}
		return e.slack.Message(c.Message.Channel, c.Message.ID)
	})
}

// pollFor calls f until it reports true, for at most 10 seconds.
func pollFor[T any](ctx context.Context, f func() (T, bool)) (T, error) {
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
