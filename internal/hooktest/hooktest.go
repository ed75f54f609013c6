// Package hooktest is the test harness of the hook command (package
// hook), shared by hook's own tests, which put a server in slackbot's
// place, and cmd/slackbot's, which run the hook against the whole
// program: the recorded hook inputs and golden outputs, a run of the
// command in the background, and servers in slackbot's place.
package hooktest

import (
	"bytes"
	"context"
	"flag"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

var update = flag.Bool("update-hooks", false, "rewrite the hook's golden files (hook/testdata/golden)")

// Files is the directory of the recorded hook inputs (<agent>/*.json) and
// the golden outputs (golden/*.json): hook/testdata.
type Files string

// Input reads the recorded hook input name, such as "claude-code/bash.json".
func (f Files) Input(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(string(f), name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// CheckGolden compares the hook's stdout with golden/<name>.json byte for
// byte, after replacing in got each value of the name, value pairs vars
// (a URL, an address), in order, with its {{NAME}}; -update-hooks
// rewrites the file.
func (f Files) CheckGolden(t *testing.T, name, got string, vars ...string) {
	t.Helper()
	for i := 0; i+1 < len(vars); i += 2 {
		got = strings.ReplaceAll(got, vars[i+1], "{{"+vars[i]+"}}")
	}
	path := filepath.Join(string(f), "golden", name+".json")
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update-hooks to write it)", err)
	}
	if got != string(want) {
		t.Errorf("slackbot hook printed\n%s\nwant (%s)\n%s", got, path, want)
	}
}

// Command is the hook command as a test runs it: hook.Run, or the
// program's run with "hook" before args.
type Command func(ctx context.Context, args []string, getenv func(string) string, stdin io.Reader, stdout, stderr io.Writer) error

// Result is how one run of the hook command ended.
type Result struct {
	Stdout, Stderr string
	Err            error
}

// Start runs cmd with args in the background, with input on stdin and
// vars as its environment.
func Start(ctx context.Context, cmd Command, input []byte, vars map[string]string, args ...string) <-chan Result {
	done := make(chan Result, 1)
	go func() {
		var stdout, stderr bytes.Buffer
		err := cmd(ctx, args, func(k string) string { return vars[k] }, bytes.NewReader(input), &stdout, &stderr)
		done <- Result{stdout.String(), stderr.String(), err}
	}()
	return done
}

// Wait waits for a hook run to end, failing t if it returned an error
// (the hook reports everything as a decision and exits 0).
func Wait(t *testing.T, done <-chan Result) Result {
	t.Helper()
	select {
	case r := <-done:
		if r.Err != nil {
			t.Fatalf("slackbot hook returned %v (stderr %s), want exit 0 with a decision", r.Err, r.Stderr)
		}
		return r
	case <-time.After(60 * time.Second):
		t.Fatal("slackbot hook did not end")
	}
	return Result{}
}

// FakeAPI is a server in slackbot's place that answers every request with
// status and body, and counts the requests.
func FakeAPI(t *testing.T, status int, body string) (*httptest.Server, *atomic.Int64) {
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

// ClosedPort returns a loopback address nothing listens on.
func ClosedPort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}
