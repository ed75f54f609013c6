// Package testbin finds the programs the tests run (redis-server, chromium,
// python3, node, npm) and decides, in one place, what a missing one means.
//
// A program is looked up in its own variable first — REDIS_SERVER,
// CHROMIUM, PYTHON3, NODE, NPM: its name upper-cased, '-' as '_' — which must
// then name an executable, and otherwise on PATH under each of its names.
//
// A missing program fails the test when it is required: named in
// SLACKBOT_TEST_REQUIRE (a comma-separated list, or "all"), which
// scripts/test sets for everything it installed, or when CI=true. Otherwise
// the test is skipped with a message naming what to install, so
// `go test ./...` by hand on a machine without chromium still runs the rest.
//
// It is for tests only; nothing outside _test.go files and test helper
// packages imports it.
package testbin

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// EnvRequire names the variable listing the programs whose absence fails a
// test instead of skipping it.
const EnvRequire = "SLACKBOT_TEST_REQUIRE"

// program is one program the tests run.
type program struct {
	names []string // tried on PATH, in order
	paths []string // absolute paths tried after PATH
	what  string   // what to install, for messages
}

var programs = map[string]program{
	"redis-server": {
		names: []string{"redis-server"},
		// Debian's package puts it here; kept for a PATH that lacks /usr/bin.
		paths: []string{"/usr/bin/redis-server"},
		what:  "redis-server (apt-get install redis-server, brew install redis)",
	},
	"chromium": {
		names: []string{"chromium", "chromium-browser", "google-chrome"},
		what:  "chromium (apt-get install chromium, brew install --cask chromium)",
	},
	"python3": {
		names: []string{"python3"},
		what:  "python3 (apt-get install python3, brew install python)",
	},
	"node": {
		names: []string{"node"},
		what:  "node (apt-get install nodejs, brew install node)",
	},
	"npm": {
		names: []string{"npm"},
		what:  "npm (apt-get install npm, brew install node)",
	},
}

// ErrNotFound is wrapped by Lookup's error when a program is not installed.
var ErrNotFound = errors.New("not found")

// EnvVar returns the variable that may name program's path: REDIS_SERVER
// for redis-server.
func EnvVar(name string) string {
	return strings.ToUpper(strings.ReplaceAll(name, "-", "_"))
}

// Lookup returns the path of the program called name ("redis-server",
// "chromium", "python3", "node", "npm"). Its variable (EnvVar) wins when set, and
// must name an executable file; otherwise the program's names are tried on
// PATH. The error wraps ErrNotFound when the program is not installed, and
// says what to install and which variable to set.
func Lookup(name string) (string, error) {
	p, ok := programs[name]
	if !ok {
		return "", fmt.Errorf("testbin: unknown program %q", name)
	}
	env := EnvVar(name)
	if v := os.Getenv(env); v != "" {
		if err := executable(v); err != nil {
			return "", fmt.Errorf("%s=%s: %w", env, v, err)
		}
		return v, nil
	}
	for _, n := range p.names {
		if path, err := exec.LookPath(n); err == nil {
			return path, nil
		}
	}
	for _, path := range p.paths {
		if executable(path) == nil {
			return path, nil
		}
	}
	return "", fmt.Errorf("%s %w on PATH: install %s, set %s to its path, or run ./scripts/test, which installs it",
		name, ErrNotFound, p.what, env)
}

func executable(path string) error {
	fi, err := os.Stat(path)
	if err != nil {
		return err
	}
	if fi.IsDir() || fi.Mode().Perm()&0o111 == 0 {
		return errors.New("not an executable file")
	}
	return nil
}

// Required reports whether a missing program called name fails the tests
// that need it: when CI=true, or when SLACKBOT_TEST_REQUIRE lists it or is
// "all".
func Required(name string) bool {
	if os.Getenv("CI") == "true" {
		return true
	}
	for _, r := range strings.Split(os.Getenv(EnvRequire), ",") {
		if r = strings.TrimSpace(r); r == name || r == "all" {
			return true
		}
	}
	return false
}

// Find returns the path of the program called name, as Lookup does. When
// it is not installed, Find fails t if the program is Required and skips t
// otherwise; a variable naming something that is not an executable always
// fails t.
func Find(t testing.TB, name string) string {
	t.Helper()
	path, err := Lookup(name)
	switch {
	case err == nil:
		return path
	case !errors.Is(err, ErrNotFound):
		t.Fatalf("testbin: %v", err)
	case Required(name):
		t.Fatalf("testbin: %v (required: %s)", err, requiredBy())
	default:
		t.Skipf("SKIPPED, NOT TESTED: %v", err)
	}
	return ""
}

func requiredBy() string {
	var by []string
	if os.Getenv("CI") == "true" {
		by = append(by, "CI=true")
	}
	if v := os.Getenv(EnvRequire); v != "" {
		by = append(by, EnvRequire+"="+v)
	}
	return strings.Join(by, ", ")
}
