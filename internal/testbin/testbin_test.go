package testbin

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// fakeTB records how Find ended a test: Fatalf and Skipf end the
// goroutine, as the real ones do.
type fakeTB struct {
	testing.TB
	failed, skipped string
}

func (f *fakeTB) Helper() {}
func (f *fakeTB) Fatalf(format string, args ...any) {
	f.failed = fmt.Sprintf(format, args...)
	runtime.Goexit()
}
func (f *fakeTB) Skipf(format string, args ...any) {
	f.skipped = fmt.Sprintf(format, args...)
	runtime.Goexit()
}

// find runs Find on a fakeTB in its own goroutine, as a test would.
func find(t *testing.T, name string) (path string, tb *fakeTB) {
	t.Helper()
	tb = &fakeTB{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		path = Find(tb, name)
	}()
	<-done
	return path, tb
}

// isolate clears every variable that steers a lookup and puts only dir on
// PATH.
func isolate(t *testing.T, dir string) {
	t.Helper()
	t.Setenv("PATH", dir)
	t.Setenv("CI", "")
	t.Setenv(EnvRequire, "")
	for name := range programs {
		t.Setenv(EnvVar(name), "")
	}
}

func writeExe(t *testing.T, path string, mode os.FileMode) {
	t.Helper()
	if err := os.WriteFile(path, []byte("#!/bin/sh\n"), mode); err != nil {
		t.Fatal(err)
	}
}

func TestEnvVar(t *testing.T) {
	for name, want := range map[string]string{
		"redis-server": "REDIS_SERVER", "chromium": "CHROMIUM", "python3": "PYTHON3", "node": "NODE", "npm": "NPM",
	} {
		if got := EnvVar(name); got != want {
			t.Errorf("EnvVar(%q) = %q, want %q", name, got, want)
		}
	}
}

func TestFindMissing(t *testing.T) {
	for _, tc := range []struct {
		name, ci, require string
		wantFail          bool
	}{
		{name: "by hand: skipped", wantFail: false},
		{name: "listed: fails", require: "redis-server,python3", wantFail: true},
		{name: "listed with spaces: fails", require: "chromium, python3", wantFail: true},
		{name: "all: fails", require: "all", wantFail: true},
		{name: "others listed: skipped", require: "chromium,node", wantFail: false},
		{name: "CI=true: fails", ci: "true", wantFail: true},
		{name: "CI=1 is not CI=true: skipped", ci: "1", wantFail: false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			isolate(t, t.TempDir())
			t.Setenv("CI", tc.ci)
			t.Setenv(EnvRequire, tc.require)
			path, tb := find(t, "python3")
			if path != "" {
				t.Fatalf("Find = %q, want nothing", path)
			}
			msg := tb.skipped
			if tc.wantFail {
				msg = tb.failed
				if tb.skipped != "" {
					t.Fatalf("skipped (%s), want a failure", tb.skipped)
				}
			} else if tb.failed != "" {
				t.Fatalf("failed (%s), want a skip", tb.failed)
			}
			for _, want := range []string{"python3 not found", "apt-get install python3", "PYTHON3", "./scripts/test"} {
				if !strings.Contains(msg, want) {
					t.Errorf("message %q does not say %q", msg, want)
				}
			}
		})
	}
}

func TestFindOnPath(t *testing.T) {
	dir := t.TempDir()
	isolate(t, dir)
	t.Setenv(EnvRequire, "all")
	want := filepath.Join(dir, "chromium-browser")
	writeExe(t, want, 0o755)
	if path, tb := find(t, "chromium"); path != want || tb.failed != "" || tb.skipped != "" {
		t.Fatalf("Find = %q (failed %q, skipped %q), want %q", path, tb.failed, tb.skipped, want)
	}
}

func TestFindFromVariable(t *testing.T) {
	dir := t.TempDir()
	isolate(t, dir)
	// On PATH too: the variable wins.
	writeExe(t, filepath.Join(dir, "python3"), 0o755)
	want := filepath.Join(dir, "my-python")
	writeExe(t, want, 0o755)
	t.Setenv("PYTHON3", want)
	if path, tb := find(t, "python3"); path != want || tb.failed != "" || tb.skipped != "" {
		t.Fatalf("Find = %q (failed %q, skipped %q), want %q", path, tb.failed, tb.skipped, want)
	}
}

// A variable naming something that cannot run is a mistake to report,
// even by hand: skipping would hide it.
func TestFindBadVariableFails(t *testing.T) {
	dir := t.TempDir()
	notExe := filepath.Join(dir, "chromium")
	writeExe(t, notExe, 0o644)
	for name, value := range map[string]string{
		"missing":        filepath.Join(dir, "nothing-here"),
		"not executable": notExe,
		"a directory":    dir,
	} {
		t.Run(name, func(t *testing.T) {
			isolate(t, t.TempDir())
			t.Setenv("CHROMIUM", value)
			_, err := Lookup("chromium")
			if err == nil || errors.Is(err, ErrNotFound) || !strings.Contains(err.Error(), "CHROMIUM="+value) {
				t.Fatalf("Lookup: %v, want an error naming CHROMIUM=%s and not ErrNotFound", err, value)
			}
			if _, tb := find(t, "chromium"); tb.failed == "" {
				t.Fatalf("Find did not fail (skipped: %q)", tb.skipped)
			}
		})
	}
}

func TestLookupUnknown(t *testing.T) {
	if _, err := Lookup("redis"); err == nil || errors.Is(err, ErrNotFound) {
		t.Fatalf("Lookup(redis): %v, want an unknown-program error", err)
	}
}

// Every program scripts/test installs is one testbin knows: npm runs
// clients/typescript's npm ci when node_modules is missing.
func TestLookupKnowsEveryProgram(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"redis-server", "chromium", "python3", "node", "npm"} {
		exe := filepath.Join(dir, name)
		writeExe(t, exe, 0o755)
		t.Setenv(EnvVar(name), exe)
		if got, err := Lookup(name); err != nil || got != exe {
			t.Errorf("Lookup(%q) = %q, %v; want %q", name, got, err, exe)
		}
	}
}
