// Package redistest gives tests a Redis. Client gives a real one: the
// server named by REDIS_URL when it is set (as in CI), or otherwise a
// redis-server started on a free loopback port once per test binary.
// Embedded gives the in-process Redis (miniredis) that store.Open starts
// for an empty URL, and needs nothing installed: the tests of the packages
// above the store use it, and the real server is left to the tests of
// replication, persistence and Redis's own behaviour (store and the
// end-to-end suites). Every test gets its own key prefix so tests sharing
// one server never see each other's keys.
//
// A test binary that uses Client should stop the server it may have started:
//
//	func TestMain(m *testing.M) { redistest.Main(m) }
package redistest

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/slackapprove/slackbot/internal/testbin"
	"github.com/slackapprove/slackbot/store"
)

// EnvURL is the environment variable naming a shared Redis for tests.
const EnvURL = "REDIS_URL"

// startTimeout bounds how long a freshly started redis-server may take to
// answer PING before the start counts as failed.
const startTimeout = 10 * time.Second

var shared struct {
	once sync.Once
	srv  *Server
	url  string
	err  error
}

// URL returns the URL of the Redis shared by the tests of this binary:
// REDIS_URL when set, otherwise that of a redis-server started on first use.
// It fails t, saying what to install, when neither is available: a test
// that needs Redis never skips. The server binary is $REDIS_SERVER when set,
// otherwise redis-server on PATH (see internal/testbin).
func URL(t testing.TB) string {
	t.Helper()
	if u := os.Getenv(EnvURL); u != "" {
		return u
	}
	shared.once.Do(func() {
		dir, err := os.MkdirTemp("", "redistest-")
		if err != nil {
			shared.err = err
			return
		}
		shared.srv, shared.err = start(dir, nil)
		if shared.err != nil {
			_ = os.RemoveAll(dir)
			return
		}
		shared.url = shared.srv.URL()
	})
	if shared.err != nil {
		t.Fatalf("redistest: %v", shared.err)
	}
	return shared.url
}

// Main runs the tests of m, then stops the shared redis-server if one was
// started, and exits with the tests' exit code.
func Main(m *testing.M) {
	os.Exit(Run(m))
}

// Run is Main for a TestMain with cleanup of its own to do before it
// exits: it runs the tests of m, stops the shared redis-server if one was
// started, and returns the tests' exit code.
func Run(m *testing.M) int {
	code := m.Run()
	if shared.srv != nil {
		_ = shared.srv.stop()
		_ = os.RemoveAll(shared.srv.Dir)
	}
	return code
}

// Client returns a client of the shared test Redis and a key prefix that is
// unique to t. The client is closed, and the keys under the prefix deleted,
// when t ends.
func Client(t testing.TB) (redis.UniversalClient, string) {
	t.Helper()
	opt, err := redis.ParseURL(URL(t))
	if err != nil {
		t.Fatalf("redistest: parse %s: %v", EnvURL, err)
	}
	rdb := redis.NewClient(opt)
	prefix := Prefix(t)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = DeletePrefix(ctx, rdb, prefix)
		_ = rdb.Close()
	})
	return rdb, prefix
}

// Embedded returns a client of an embedded Redis of t's own, the one
// store.Open starts for an empty URL, and a key prefix unique to t. Both
// are closed when t ends. A second client of the same Redis, as another
// replica of slackbot would have, dials rdb.(*redis.Client).Options().Addr.
func Embedded(t testing.TB) (redis.UniversalClient, string) {
	t.Helper()
	rdb, closeFn, err := store.Open(context.Background(), "")
	if err != nil {
		t.Fatalf("redistest: %v", err)
	}
	t.Cleanup(func() { _ = closeFn() })
	return rdb, Prefix(t)
}

// Prefix returns a fresh key prefix for t: "test:<name>:<random>:".
func Prefix(t testing.TB) string {
	t.Helper()
	var b [4]byte
	_, _ = rand.Read(b[:])
	name := strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '_', r == '-':
			return r
		}
		return '_'
	}, t.Name())
	if len(name) > 40 {
		name = name[:40]
	}
	return "test:" + name + ":" + hex.EncodeToString(b[:]) + ":"
}

// Keys returns every key under prefix.
func Keys(ctx context.Context, rdb redis.UniversalClient, prefix string) ([]string, error) {
	var keys []string
	iter := rdb.Scan(ctx, 0, prefix+"*", 1000).Iterator()
	for iter.Next(ctx) {
		keys = append(keys, iter.Val())
	}
	if err := iter.Err(); err != nil {
		return nil, fmt.Errorf("scan %s*: %w", prefix, err)
	}
	return keys, nil
}

// DeletePrefix deletes every key under prefix.
func DeletePrefix(ctx context.Context, rdb redis.UniversalClient, prefix string) error {
	keys, err := Keys(ctx, rdb, prefix)
	if err != nil {
		return err
	}
	for len(keys) > 0 {
		n := min(len(keys), 500)
		if err := rdb.Del(ctx, keys[:n]...).Err(); err != nil {
			return fmt.Errorf("delete %s*: %w", prefix, err)
		}
		keys = keys[n:]
	}
	return nil
}

// Server is a redis-server process owned by a test.
type Server struct {
	// Dir is the server's working directory (RDB and AOF files, log).
	Dir  string
	args []string
	port int
	// conf, when set, is a Sentinel configuration file: the server runs
	// as a Sentinel (redis-server <conf> --sentinel).
	conf string
	// password is the server's requirepass, used by its own clients.
	password string

	mu     sync.Mutex
	proc   *os.Process   // nil when not running
	exited chan struct{} // closed when proc has exited
}

// StartServer starts a redis-server of t's own in t.TempDir(), with extra
// configuration args such as "--appendonly", "yes". It is stopped when t
// ends. Use it for tests that restart or kill the server; use Client for
// everything else.
func StartServer(t testing.TB, args ...string) *Server {
	t.Helper()
	s, err := start(t.TempDir(), args)
	if err != nil {
		t.Fatalf("redistest: %v", err)
	}
	t.Cleanup(func() { _ = s.stop() })
	return s
}

// Addr returns the server's host:port.
func (s *Server) Addr() string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(s.port)) }

// URL returns the server's redis:// URL.
func (s *Server) URL() string { return "redis://" + s.Addr() + "/0" }

// Client returns a client of the server, closed when t ends.
func (s *Server) Client(t testing.TB) redis.UniversalClient {
	t.Helper()
	rdb := redis.NewClient(&redis.Options{Addr: s.Addr(), Password: s.password})
	t.Cleanup(func() { _ = rdb.Close() })
	return rdb
}

// Stop shuts the server down cleanly (saving if persistence is configured).
func (s *Server) Stop(t testing.TB) {
	t.Helper()
	if err := s.stop(); err != nil {
		t.Fatalf("redistest: stop: %v", err)
	}
}

// Kill ends the server with SIGKILL, as a crash would.
func (s *Server) Kill(t testing.TB) {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.proc == nil {
		return
	}
	_ = s.proc.Kill()
	<-s.exited
	s.proc = nil
}

// Pause stops the server's process with SIGSTOP: it keeps its
// connections but answers nothing, neither clients nor its primary or
// replicas, until Resume.
func (s *Server) Pause(t testing.TB) {
	t.Helper()
	s.signal(t, sigStop)
}

// Resume continues a paused server (SIGCONT).
func (s *Server) Resume(t testing.TB) {
	t.Helper()
	s.signal(t, sigCont)
}

func (s *Server) signal(t testing.TB, sig os.Signal) {
	t.Helper()
	if sig == nil {
		t.Skip("redistest: pausing a process needs a Unix system")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.proc == nil {
		t.Fatalf("redistest: signal %v: the server on port %d is not running", sig, s.port)
	}
	if err := s.proc.Signal(sig); err != nil {
		t.Fatalf("redistest: signal %v: %v", sig, err)
	}
}

// Restart stops the server if it runs and starts it again on the same port
// and directory, so persisted data and clients' addresses survive.
func (s *Server) Restart(t testing.TB) {
	t.Helper()
	if err := s.stop(); err != nil {
		t.Fatalf("redistest: restart: %v", err)
	}
	if err := s.run(); err != nil {
		t.Fatalf("redistest: restart: %v", err)
	}
}

func (s *Server) stop() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.proc == nil {
		return nil
	}
	if sigCont != nil {
		_ = s.proc.Signal(sigCont) // a paused server could not shut down
	}
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	rdb := redis.NewClient(&redis.Options{Addr: s.Addr(), Password: s.password, MaxRetries: -1})
	defer rdb.Close()
	// SHUTDOWN closes the connection instead of replying when it succeeds.
	_ = rdb.Shutdown(ctx).Err()
	select {
	case <-s.exited:
	case <-ctx.Done():
		_ = s.proc.Kill()
		<-s.exited
	}
	s.proc = nil
	return nil
}

// start launches a server in dir on a free port, trying a few ports in case
// another process takes the one picked before redis-server binds it.
func start(dir string, args []string) (*Server, error) {
	return startWith(dir, args, nil)
}

// startWith is start with a hook that prepares each attempt (a Sentinel
// writes its configuration file, which names its own port).
func startWith(dir string, args []string, prepare func(s *Server) error) (*Server, error) {
	return startAuth(dir, args, "", prepare)
}

// startAuth is startWith for a server whose requirepass is password.
func startAuth(dir string, args []string, password string, prepare func(s *Server) error) (*Server, error) {
	var err error
	for range 5 {
		var port int
		port, err = freePort()
		if err != nil {
			return nil, err
		}
		s := &Server{Dir: dir, args: args, port: port, password: password}
		if prepare != nil {
			if err := prepare(s); err != nil {
				return nil, err
			}
		}
		if err = s.run(); err == nil {
			return s, nil
		}
	}
	return nil, err
}

func (s *Server) run() error {
	bin, err := binary()
	if err != nil {
		return err
	}
	logFile := filepath.Join(s.Dir, "redis.log")
	argv := []string{
		"--port", strconv.Itoa(s.port),
		"--bind", "127.0.0.1",
		"--dir", s.Dir,
		"--save", "",
		"--appendonly", "no",
		"--logfile", logFile,
	}
	argv = append(argv, s.args...)
	if s.conf != "" {
		argv = append([]string{s.conf, "--sentinel"}, argv...)
	}
	cmd := exec.Command(bin, argv...)
	cmd.SysProcAttr = sysProcAttr()
	var stderr bytes.Buffer
	cmd.Stdout = &stderr
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start %s: %w", bin, err)
	}
	exited := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(exited)
	}()
	rdb := redis.NewClient(&redis.Options{Addr: s.Addr(), Password: s.password, MaxRetries: -1, DialTimeout: time.Second})
	defer rdb.Close()
	deadline := time.Now().Add(startTimeout)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		err = rdb.Ping(ctx).Err()
		cancel()
		if err == nil {
			break
		}
		select {
		case <-exited:
			log, _ := os.ReadFile(logFile)
			return fmt.Errorf("redis-server on port %d exited at start: %s%s", s.port, stderr.String(), tail(log))
		case <-time.After(10 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			_ = cmd.Process.Kill()
			<-exited
			return fmt.Errorf("redis-server on port %d did not answer PING within %s: %w", s.port, startTimeout, err)
		}
	}
	s.mu.Lock()
	s.proc, s.exited = cmd.Process, exited
	s.mu.Unlock()
	return nil
}

func tail(b []byte) string {
	if len(b) > 2000 {
		b = b[len(b)-2000:]
	}
	return string(b)
}

// binary finds redis-server: $REDIS_SERVER, PATH, or /usr/bin/redis-server.
func binary() (string, error) {
	p, err := testbin.Lookup("redis-server")
	if err != nil {
		return "", fmt.Errorf("%w (or set %s to a running Redis)", err, EnvURL)
	}
	return p, nil
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("find a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
