package main

// The real Codex (codex-cli 0.171.0, internal/agentcli) in headless mode,
// `codex exec`, against a fake OpenAI Responses API on loopback
// (internal/fakemodel) that scripts its tool calls, with the README's
// Codex PreToolUse hook settings running the slackbot binary against the
// whole app: people decide on the cards in the fake Slack, and the test
// checks what Codex did (a file the command writes exists or not) and
// what the model was told (the function_call_output Codex sent back).
//
// Codex runs in its workspace-write sandbox (bubblewrap, which Codex
// bundles when the system has none), so the commands write only in the
// project directory; it is given a fresh CODEX_HOME and HOME per run,
// no update check and no analytics.

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/slackapprove/slackbot/bot"
	"github.com/slackapprove/slackbot/internal/agentcli"
	"github.com/slackapprove/slackbot/internal/fakemodel"
	"github.com/slackapprove/slackbot/internal/hooktest"
	"github.com/slackapprove/slackbot/internal/slacktest"
)

// codexRun is one `codex exec` and the fake model it talks to.
type codexRun struct {
	proj  string // the project directory, Codex's working directory
	model *fakemodel.OpenAI
	done  chan codexExit
}

// codexExit is how a codex exec ended.
type codexExit struct {
	out string
	err error
}

// codexOptions configures one codex exec.
type codexOptions struct {
	vars        map[string]string // the hook's environment (SLACKBOT_URL, SLACKBOT_API_KEY)
	hookCommand func(string) string
	untrusted   bool   // run without --dangerously-bypass-hook-trust
	event       string // the README's hooks.json of this event; PreToolUse when empty
	turns       []fakemodel.OpenAITurn
}

// startCodex starts codex exec in a fresh project with the README's Codex
// hook settings for o.event, their command rewritten by o.hookCommand.
func startCodex(t *testing.T, o codexOptions) *codexRun {
	t.Helper()
	codex := agentcli.Path(t, "codex")
	r := &codexRun{model: fakemodel.StartOpenAI(t, o.turns...), done: make(chan codexExit, 1)}
	dir := t.TempDir()
	home, codexHome := filepath.Join(dir, "home"), filepath.Join(dir, "codex-home")
	r.proj = filepath.Join(dir, "proj")
	for _, d := range []string{home, codexHome, r.proj} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	writeFile(t, filepath.Join(codexHome, "config.toml"), codexConfig(r.model.URL))
	if o.event == "" {
		o.event = "PreToolUse"
	}
	writeFile(t, filepath.Join(codexHome, "hooks.json"), readmeCodexHooks(t, o.event, o.hookCommand))

	args := []string{"exec", "--skip-git-repo-check", "--sandbox", "workspace-write"}
	if !o.untrusted {
		// Codex runs a hook only once a person trusted its exact
		// definition (/hooks in the interactive CLI); a CI run whose
		// hook settings the runner wrote itself vouches for them so.
		args = append(args, "--dangerously-bypass-hook-trust")
	}
	args = append(args, "Rebuild the site.")
	// The bound only keeps a broken run from hanging the test binary.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(t.Context()), 3*time.Minute)
	cmd := exec.CommandContext(ctx, codex, args...)
	// The agent's hook commands inherit its output: once it is killed,
	// a hook still waiting must not keep Wait from returning.
	cmd.WaitDelay = 5 * time.Second
	cmd.Dir = r.proj
	// Anything Codex would fetch beyond the loopback fake goes to a
	// closed port and fails at once.
	proxy := "http://" + hooktest.ClosedPort(t)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "CODEX_HOME=" + codexHome, "FAKE_OPENAI_KEY=sk-fake", "NO_COLOR=1",
		"HTTP_PROXY=" + proxy, "HTTPS_PROXY=" + proxy, "ALL_PROXY=" + proxy, "NO_PROXY=127.0.0.1,localhost"}
	for k, v := range o.vars {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	go func() {
		defer cancel()
		out, err := cmd.CombinedOutput()
		r.done <- codexExit{string(out), err}
	}()
	t.Cleanup(func() { cancel(); <-r.done })
	return r
}

// codexConfig is CODEX_HOME/config.toml: the fake as the model provider,
// and nothing Codex would fetch from the internet.
func codexConfig(baseURL string) string {
	return fmt.Sprintf(`model = %q
model_provider = "fake"
check_for_update_on_startup = false

[model_providers.fake]
name = "fake"
base_url = %q
wire_api = "responses"
env_key = "FAKE_OPENAI_KEY"
request_max_retries = 0
stream_max_retries = 0

[analytics]
enabled = false
`, fakemodel.OpenAIModel, baseURL)
}

// readmeCodexHooks is the README's Codex hooks.json for event, each
// command rewritten by rewrite (the slackbot binary's path in place of
// "slackbot", a shorter --timeout).
func readmeCodexHooks(t *testing.T, event string, rewrite func(string) string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(pkgDir, "..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range regexp.MustCompile("(?s)```json\n(.*?)```").FindAllStringSubmatch(string(b), -1) {
		var doc struct {
			Hooks map[string][]struct {
				Matcher string           `json:"matcher"`
				Hooks   []map[string]any `json:"hooks"`
			} `json:"hooks"`
		}
		if json.Unmarshal([]byte(m[1]), &doc) != nil || len(doc.Hooks[event]) == 0 || !strings.Contains(m[1], "slackbot hook codex") {
			continue
		}
		for _, group := range doc.Hooks[event] {
			for _, h := range group.Hooks {
				h["command"] = rewrite(h["command"].(string))
			}
		}
		out, _ := json.Marshal(doc)
		return string(out)
	}
	t.Fatalf("the README has no Codex %s hooks.json", event)
	return ""
}

// slackbotHook is a hookCommand that runs the slackbot binary with the
// hook's --timeout set to timeout (the README's when empty).
func slackbotHook(t *testing.T, timeout string) func(string) string {
	bin := slackbotBinary(t)
	return func(c string) string {
		c = strings.Replace(c, "slackbot hook", bin+" hook", 1)
		if timeout != "" {
			c = regexp.MustCompile(`--timeout \S+`).ReplaceAllString(c, "--timeout "+timeout)
		}
		return c
	}
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// wait waits for codex exec to end, and fails t if it failed.
func (r *codexRun) wait(t *testing.T) string {
	t.Helper()
	x := <-r.done
	r.done <- x // for the cleanup
	if x.err != nil {
		t.Fatalf("codex exec: %v\n%s", x.err, x.out)
	}
	return x.out
}

// exists reports whether the project holds name.
func (r *codexRun) exists(name string) bool {
	_, err := os.Stat(filepath.Join(r.proj, name))
	return err == nil
}

// told returns what Codex told the model of the tool call of turn i.
func (r *codexRun) told(t *testing.T, i int, out string) string {
	t.Helper()
	s, ok := r.model.Output(fakemodel.CallID(i))
	if !ok {
		t.Fatalf("Codex sent the model no output of call %d\n%s", i, out)
	}
	return s
}

// TestCodexExec: headless Codex asks slackbot before each shell command
// and patch, through the PreToolUse hook (Codex fires no
// PermissionRequest in codex exec), and does what was decided.
func TestCodexExec(t *testing.T) {
	t.Parallel()
	e := newHookEnv(t)
	vars := e.hookVars(keyBilling)

	t.Run("approved: the command and the patch ran", func(t *testing.T) {
		t.Parallel()
		patch := "*** Begin Patch\n*** Add File: notes.txt\n+approved in Slack\n*** End Patch\n"
		r := startCodex(t, codexOptions{vars: vars, hookCommand: slackbotHook(t, ""), turns: []fakemodel.OpenAITurn{
			{Exec: "touch approved-ran.txt"}, {Patch: patch},
		}})
		card := e.waitLiveCard(t, 0, "Bash", "touch approved-ran.txt", "Codex (", "gpt-5.5")
		e.clickCard(t, alice, card, bot.ActionIDApprove)
		card = e.waitLiveCard(t, 0, "apply_patch", "Add File: notes.txt")
		e.clickCard(t, bob, card, bot.ActionIDApprove)
		out := r.wait(t)
		if !r.exists("approved-ran.txt") {
			t.Errorf("the approved command did not run\n%s", out)
		}
		if b, err := os.ReadFile(filepath.Join(r.proj, "notes.txt")); err != nil || string(b) != "approved in Slack\n" {
			t.Errorf("the approved patch: notes.txt holds %q, %v\n%s", b, err, out)
		}
		if told := r.told(t, 0, out); strings.Contains(told, "blocked") {
			t.Errorf("the model was told %q of an approved command", told)
		}
	})
	t.Run("denied with a reason: the model is told it", func(t *testing.T) {
		t.Parallel()
		r := startCodex(t, codexOptions{vars: vars, hookCommand: slackbotHook(t, ""), turns: []fakemodel.OpenAITurn{{Exec: "touch denied-ran.txt"}}})
		card := e.waitLiveCard(t, 0, "Bash", "touch denied-ran.txt")
		e.denyWithReason(t, bob, card, "Not during the release freeze.")
		out := r.wait(t)
		if r.exists("denied-ran.txt") {
			t.Errorf("the denied command ran\n%s", out)
		}
		if told := r.told(t, 0, out); !strings.Contains(told, "Not during the release freeze.") {
			t.Errorf("the model was told %q, want the approver's reason", told)
		}
	})
	t.Run("approved with an edited command: the edit ran", func(t *testing.T) {
		t.Parallel()
		r := startCodex(t, codexOptions{vars: vars, hookCommand: slackbotHook(t, ""), turns: []fakemodel.OpenAITurn{{Exec: "touch unedited.txt"}}})
		card := e.waitLiveCard(t, 0, "Bash", "touch unedited.txt")
		e.answerWithEdit(t, card, map[string]string{"command": "touch edited.txt"})
		out := r.wait(t)
		if !r.exists("edited.txt") || r.exists("unedited.txt") {
			t.Errorf("edited.txt exists %v, unedited.txt exists %v; want only the edited command run\n%s", r.exists("edited.txt"), r.exists("unedited.txt"), out)
		}
	})
	t.Run("nobody decides: denied when the hook's wait ends", func(t *testing.T) {
		t.Parallel()
		r := startCodex(t, codexOptions{vars: vars, hookCommand: slackbotHook(t, "2s"), turns: []fakemodel.OpenAITurn{{Exec: "touch undecided-ran.txt"}}})
		out := r.wait(t)
		if r.exists("undecided-ran.txt") {
			t.Errorf("a command nobody decided ran\n%s", out)
		}
		if told := r.told(t, 0, out); !strings.Contains(told, "No decision on this tool call arrived: nobody decided within 2s") {
			t.Errorf("the model was told %q, want the hook's no-decision denial", told)
		}
		// The hook cancelled the request it stopped waiting for: its card
		// says so and has no buttons left to click.
		waitUntil(t, 30*time.Second, "the card of the call nobody decided to say Cancelled", func() bool {
			for _, m := range e.cards() {
				if showsAll(m, []string{"touch undecided-ran.txt"}) {
					_, live := slacktest.Button(m, bot.ActionIDApprove)
					return !live && strings.Contains(cardText(m), "Cancelled")
				}
			}
			return false
		})
	})
}

// TestCodexExecRequestExpires: a request that expires in slackbot (the
// route's timeout passes; here the app's clock is moved past it, so the
// test has an env of its own) is a denial Codex acts on: the command does
// not run and the model is told no decision arrived.
func TestCodexExecRequestExpires(t *testing.T) {
	t.Parallel()
	e := newHookEnv(t)
	r := startCodex(t, codexOptions{vars: e.hookVars(keyBilling), hookCommand: slackbotHook(t, ""),
		turns: []fakemodel.OpenAITurn{{Exec: "touch expired-ran.txt"}}})
	card := e.waitLiveCard(t, 0, "Bash", "touch expired-ran.txt")
	e.clock.Add(2 * time.Hour)
	out := r.wait(t)
	if r.exists("expired-ran.txt") {
		t.Errorf("the command of an expired request ran\n%s", out)
	}
	if told := r.told(t, 0, out); !strings.Contains(told, "No decision on this tool call arrived: the request expired") {
		t.Errorf("the model was told %q, want the expiry's denial", told)
	}
	e.waitCardSays(t, card, "Expired")
}

// TestCodexExecFailsClosed: when the hook cannot reach slackbot, or the
// hook binary is missing, the command does not run: the README's command
// ends in `|| exit 2`, which Codex reads as a denial with the shell's
// error as the reason, where a hook that cannot start would otherwise be
// a failed hook, past which Codex runs the call.
func TestCodexExecFailsClosed(t *testing.T) {
	t.Parallel()
	t.Run("slackbot unreachable", func(t *testing.T) {
		t.Parallel()
		down := hooktest.ClosedPort(t)
		r := startCodex(t, codexOptions{vars: map[string]string{"SLACKBOT_URL": "http://" + down, "SLACKBOT_API_KEY": keyBilling},
			hookCommand: slackbotHook(t, ""), turns: []fakemodel.OpenAITurn{{Exec: "touch down-ran.txt"}}})
		out := r.wait(t)
		if r.exists("down-ran.txt") {
			t.Errorf("the command ran though slackbot was unreachable\n%s", out)
		}
		if told := r.told(t, 0, out); !strings.Contains(told, "slackbot could not be reached at http://"+down) {
			t.Errorf("the model was told %q, want the hook's reason", told)
		}
		if strings.Contains(out, keyBilling) {
			t.Errorf("Codex's output shows the API key:\n%s", out)
		}
	})
	t.Run("the hook binary missing", func(t *testing.T) {
		t.Parallel()
		missing := filepath.Join(t.TempDir(), "no-such-slackbot")
		r := startCodex(t, codexOptions{vars: map[string]string{"SLACKBOT_URL": "http://" + hooktest.ClosedPort(t), "SLACKBOT_API_KEY": keyBilling},
			hookCommand: func(c string) string { return strings.Replace(c, "slackbot hook", missing+" hook", 1) },
			turns:       []fakemodel.OpenAITurn{{Exec: "touch missing-ran.txt"}}})
		out := r.wait(t)
		if r.exists("missing-ran.txt") {
			t.Errorf("the command ran though the hook could not start\n%s", out)
		}
		if told := r.told(t, 0, out); !strings.Contains(told, "no-such-slackbot") {
			t.Errorf("the model was told %q, want the shell's error", told)
		}
	})
}

// TestCodexExecUngated shows the limits the README states, where codex
// exec runs a command unasked: Codex runs no hook whose definition
// nobody trusted, and says nothing; and codex exec never fires
// PermissionRequest (it runs with the approval policy "never", whatever
// config.toml says), so the interactive CLI's hook gates nothing there.
func TestCodexExecUngated(t *testing.T) {
	t.Parallel()
	e := newHookEnv(t)
	for _, tt := range []struct {
		name, event, file string
		untrusted         bool
	}{
		{"an untrusted PreToolUse hook", "PreToolUse", "untrusted-ran.txt", true},
		{"a trusted PermissionRequest hook", "PermissionRequest", "permission-ran.txt", false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := startCodex(t, codexOptions{vars: e.hookVars(keyBilling), hookCommand: slackbotHook(t, ""), untrusted: tt.untrusted,
				event: tt.event, turns: []fakemodel.OpenAITurn{{Exec: "touch " + tt.file}}})
			out := r.wait(t)
			if !r.exists(tt.file) {
				t.Errorf("the command did not run; has Codex changed when it runs this hook? Then the README's Codex section is wrong\n%s", out)
			}
			if strings.Contains(out, "hook: ") {
				t.Errorf("Codex ran a hook:\n%s", out)
			}
			if n := len(e.cards()); n != 0 {
				t.Errorf("%d cards posted, want none (Codex ran no hook)", n)
			}
		})
	}
}
