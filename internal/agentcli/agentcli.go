// Package agentcli finds the coding-agent CLIs the end-to-end tests drive —
// Claude Code (claude), Codex (codex) and Gemini CLI (gemini) — installed
// from npm exactly as testdata/package-lock.json pins them (scripts/test
// runs npm ci there). Each ships its native binary or its bundle inside
// the npm package, so nothing else is downloaded; the tests point them at
// fake model APIs on loopback.
//
// A missing CLI fails the test when "coding-agents" is required
// (SLACKBOT_TEST_REQUIRE, or CI=true: internal/testbin) and skips it
// otherwise, naming the command that installs them.
//
// It is for tests only.
package agentcli

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/slackapprove/slackbot/internal/testbin"
)

// Require is the name under which SLACKBOT_TEST_REQUIRE lists the CLIs.
const Require = "coding-agents"

// Dir is the npm project that installs the CLIs.
func Dir() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "testdata")
}

// Lookup returns the path of the installed CLI called name ("claude",
// "codex", "gemini"), or an error saying how to install it.
func Lookup(name string) (string, error) {
	switch name {
	case "claude", "codex", "gemini":
	default:
		return "", fmt.Errorf("agentcli: unknown CLI %q", name)
	}
	p := filepath.Join(Dir(), "node_modules", ".bin", name)
	if _, err := os.Stat(p); err != nil {
		return "", fmt.Errorf("%s is not installed in %s: run ./scripts/test, or npm ci there", name, Dir())
	}
	return p, nil
}

// Path returns the path of the CLI called name; when it is not installed
// it fails t if the CLIs are required, and skips t otherwise.
func Path(t testing.TB, name string) string {
	t.Helper()
	p, err := Lookup(name)
	if err == nil {
		return p
	}
	if testbin.Required(Require) {
		t.Fatal(err)
	}
	t.Skip(err)
	return ""
}
