package main

// The real Gemini CLI (0.61.0, internal/agentcli) against a fake Gemini
// API (internal/fakemodel), headless (gemini -p --approval-mode=yolo: the
// hook is the only gate), with `slackbot hook gemini`, the built program,
// as its BeforeTool hook asking the whole app: people decide on the cards
// in the fake Slack, and the test checks what ran and what the model was
// told.

import (
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/slackapprove/slackbot/bot"
	"github.com/slackapprove/slackbot/internal/agentcli"
	"github.com/slackapprove/slackbot/internal/fakemodel"
	"github.com/slackapprove/slackbot/internal/hooktest"
)

// geminiRun is one headless run of Gemini CLI.
type geminiRun struct {
	model *fakemodel.Gemini
	dir   string // its working directory
	done  chan geminiExit
}

type geminiExit struct {
	out string
	err error
}

// geminiHooks is the "hooks" of the README's settings.json, with the
// built program in place of slackbot on the PATH.
func geminiHooks(command string) map[string]any {
	return map[string]any{"BeforeTool": []any{map[string]any{
		"matcher": "run_shell_command|write_file|replace|mcp__.*",
		"hooks":   []any{map[string]any{"name": "slackbot", "type": "command", "command": command, "timeout": 60000}},
	}}}
}

// startGemini runs `gemini -p` in a fresh directory holding files, with
// a fresh HOME whose settings are settings (geminiHooks under "hooks")
// and the hook's environment vars, against a fake model that plays
// script.
func startGemini(t *testing.T, settings map[string]any, vars map[string]string, files map[string]string, script ...fakemodel.GeminiTurn) *geminiRun {
	t.Helper()
	bin := agentcli.Path(t, "gemini")
	r := &geminiRun{model: fakemodel.NewGemini(t, script...), dir: t.TempDir(), done: make(chan geminiExit, 1)}
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(r.dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.CommandContext(t.Context(), bin, "-p", "do what the model says", "--approval-mode", "yolo", "-m", "gemini-2.5-flash")
	// The agent's hook commands inherit its output: once it is killed,
	// a hook still waiting must not keep Wait from returning.
	cmd.WaitDelay = 5 * time.Second
	cmd.Dir = r.dir
	cmd.Env = append(r.model.Env(fakemodel.GeminiHome(t, settings)), "PATH="+os.Getenv("PATH"))
	for k, v := range vars {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	go func() {
		out, err := cmd.CombinedOutput()
		r.done <- geminiExit{string(out), err}
	}()
	return r
}

// wait waits for the run to end, and fails t unless it ended well.
func (r *geminiRun) wait(t *testing.T) string {
	t.Helper()
	select {
	case x := <-r.done:
		if x.err != nil {
			t.Fatalf("gemini: %v\n%s", x.err, x.out)
		}
		return x.out
	case <-time.After(2 * time.Minute):
		t.Fatal("gemini still runs after 2m")
	}
	return ""
}

// toldModel returns what the CLI sent the model for its one call of tool.
func (r *geminiRun) toldModel(t *testing.T, tool string) string {
	t.Helper()
	got := r.model.FunctionResponses(tool)
	if len(got) != 1 {
		t.Fatalf("the model was sent %d responses for %s, want 1: %s", len(got), tool, got)
	}
	return string(got[0])
}

// file reads a file of the run's directory ("" when there is none).
func (r *geminiRun) file(name string) string {
	b, _ := os.ReadFile(filepath.Join(r.dir, name))
	return string(b)
}

// geminiHookCommand is the hook command of the README's settings, with
// the built program in place of slackbot.
func geminiHookCommand(t *testing.T) string {
	t.Helper()
	return slackbotBinary(t) + " hook gemini --timeout 50s"
}

// TestAgentGemini: a person in Slack decides Gemini CLI's tool calls.
// Approved, the shell command runs once; denied with a reason, nothing
// runs and the model's next request carries the reason; edited in the
// card's form, the edited replace is the one applied.
func TestAgentGemini(t *testing.T) {
	t.Parallel()
	e := newGeminiHookEnv(t)
	settings := map[string]any{"hooks": geminiHooks(geminiHookCommand(t))}
	vars := e.hookVars(keyBilling)

	t.Run("approved", func(t *testing.T) {
		t.Parallel()
		run := startGemini(t, settings, vars, nil, fakemodel.GeminiCall("run_shell_command",
			map[string]any{"command": "echo approved >> ran.txt && echo ran-once", "description": "Record the approval"}))
		card := e.waitLiveCard(t, 0, "run_shell_command", "echo approved", "ran.txt", "Gemini CLI (", "Record the approval")
		e.clickCard(t, alice, card, bot.ActionIDApprove)
		run.wait(t)
		if got := run.file("ran.txt"); got != "approved\n" {
			t.Errorf("ran.txt holds %q, want the command run once", got)
		}
		if told := run.toldModel(t, "run_shell_command"); !strings.Contains(told, "ran-once") {
			t.Errorf("the model was told %s, want the command's output", told)
		}
	})
	t.Run("approved in GitHub Actions, the variables allowed", func(t *testing.T) {
		t.Parallel()
		ci := maps.Clone(settings)
		ci["security"] = map[string]any{
			"auth":                         map[string]any{"selectedType": "gemini-api-key"},
			"folderTrust":                  map[string]any{"enabled": false},
			"environmentVariableRedaction": map[string]any{"allowed": []string{"SLACKBOT_URL", "SLACKBOT_API_KEY"}},
		}
		ciVars := maps.Clone(vars)
		ciVars["GITHUB_SHA"] = "0123abc"
		run := startGemini(t, ci, ciVars, nil, fakemodel.GeminiCall("run_shell_command",
			map[string]any{"command": "echo from-ci >> ci.txt", "description": "Run in CI"}))
		card := e.waitLiveCard(t, 0, "run_shell_command", "echo from-ci", "Run in CI")
		e.clickCard(t, alice, card, bot.ActionIDApprove)
		run.wait(t)
		if got := run.file("ci.txt"); got != "from-ci\n" {
			t.Errorf("ci.txt holds %q, want the command run once", got)
		}
	})
	t.Run("denied with a reason", func(t *testing.T) {
		t.Parallel()
		run := startGemini(t, settings, vars, nil, fakemodel.GeminiCall("run_shell_command",
			map[string]any{"command": "touch denied.txt", "description": "Mark the denial"}))
		card := e.waitLiveCard(t, 0, "run_shell_command", "touch denied.txt")
		e.denyWithReason(t, bob, card, "Not on a Friday afternoon.")
		run.wait(t)
		if _, err := os.Stat(filepath.Join(run.dir, "denied.txt")); err == nil {
			t.Error("denied.txt exists: the denied command ran")
		}
		if told := run.toldModel(t, "run_shell_command"); !strings.Contains(told, "Not on a Friday afternoon.") {
			t.Errorf("the model was told %s, want the approver's reason", told)
		}
	})
	t.Run("approved with edited arguments", func(t *testing.T) {
		t.Parallel()
		run := startGemini(t, settings, vars, map[string]string{"prod.yaml": "replicas: 3\nimage: shop:1.4\n"}, fakemodel.GeminiCall("replace",
			map[string]any{"file_path": "prod.yaml", "old_string": "replicas: 3", "new_string": "replicas: 30", "instruction": "Scale up for the sale"}))
		card := e.waitLiveCard(t, 0, "replace", "replicas: 30", "Scale up for the sale")
		// Gemini CLI made the path absolute before the hook saw it; the
		// approver changes new_string in the card's form.
		edited := `{"file_path":"` + filepath.Join(run.dir, "prod.yaml") + `","instruction":"Scale up for the sale","new_string":"replicas: 5","old_string":"replicas: 3"}`
		if err := e.press(t.Context(), card, decision{Action: bot.ActionIDEdit, User: alice, Args: edited}); err != nil {
			t.Fatal(err)
		}
		run.wait(t)
		if got, want := run.file("prod.yaml"), "replicas: 5\nimage: shop:1.4\n"; got != want {
			t.Errorf("prod.yaml holds %q, want the edited replacement %q", got, want)
		}
	})
}

// TestAgentGeminiNoDecision: when no decision can be had Gemini CLI runs
// nothing and the model hears why: the request expires in slackbot,
// slackbot cannot be reached, and the hook command cannot even start
// (Gemini CLI 0.61.0 takes a hook's exit status 127 with text as a
// block).
func TestAgentGeminiNoDecision(t *testing.T) {
	t.Parallel()
	e := newGeminiHookEnv(t)
	missing := filepath.Join(t.TempDir(), "slackbot")
	call := func(name string) fakemodel.GeminiTurn {
		return fakemodel.GeminiCall("run_shell_command", map[string]any{"command": "touch " + name, "description": "Touch " + name})
	}
	for _, tt := range []struct {
		name, command, url, says string
		expire                   bool
		more                     map[string]string // more environment
	}{
		{"the request expires", geminiHookCommand(t), e.srv.URL, "No decision on this tool call arrived", true, nil},
		{"slackbot unreachable", geminiHookCommand(t), "http://" + hooktest.ClosedPort(t), "slackbot could not be reached", false, nil},
		{"the hook cannot start", missing + " hook gemini", e.srv.URL, missing, false, nil},
		// In GitHub Actions (GITHUB_SHA set) Gemini CLI strips from a
		// hook's environment every variable it does not allow by name.
		{"GitHub Actions without the allowlist", geminiHookCommand(t), e.srv.URL, "SLACKBOT_URL is not set", false, map[string]string{"GITHUB_SHA": "0123abc"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			file := strings.ReplaceAll(tt.name, " ", "-") + ".txt"
			vars := map[string]string{"SLACKBOT_URL": tt.url, "SLACKBOT_API_KEY": keyBilling}
			maps.Copy(vars, tt.more)
			run := startGemini(t, map[string]any{"hooks": geminiHooks(tt.command)}, vars, nil, call(file))
			if tt.expire {
				card := e.waitLiveCard(t, 0, "touch "+file)
				e.clock.Add(2 * time.Hour)
				e.waitCardSays(t, card, "Expired")
			}
			out := run.wait(t)
			if _, err := os.Stat(filepath.Join(run.dir, file)); err == nil {
				t.Errorf("%s exists: the command ran", file)
			}
			if told := run.toldModel(t, "run_shell_command"); !strings.Contains(told, tt.says) {
				t.Errorf("the model was told %s, want %q", told, tt.says)
			}
			if strings.Contains(out, keyBilling) {
				t.Errorf("Gemini CLI's output shows the API key: %s", out)
			}
		})
	}
}
