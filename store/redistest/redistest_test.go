package redistest

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/slackapprove/slackbot/internal/testbin"
)

// REDIS_SERVER names the binary: scripts/test sets it to the redis-server it
// found or installed, so the tests use that one whatever PATH holds.
func TestBinaryFromVariable(t *testing.T) {
	bin, err := testbin.Lookup("redis-server")
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", t.TempDir())
	t.Setenv("REDIS_SERVER", bin)
	s, err := start(t.TempDir(), nil)
	if err != nil {
		t.Fatalf("start with REDIS_SERVER=%s and nothing on PATH: %v", bin, err)
	}
	defer s.stop()
	if err := s.Client(t).Ping(t.Context()).Err(); err != nil {
		t.Fatalf("PING: %v", err)
	}
}

func TestBinaryFromBadVariable(t *testing.T) {
	bad := filepath.Join(t.TempDir(), "redis-server")
	t.Setenv("REDIS_SERVER", bad)
	_, err := start(t.TempDir(), nil)
	if err == nil || !strings.Contains(err.Error(), "REDIS_SERVER="+bad) || !strings.Contains(err.Error(), EnvURL) {
		t.Fatalf("start with REDIS_SERVER=%s: %v, want an error naming REDIS_SERVER and %s", bad, err, EnvURL)
	}
}

// Embedded needs no redis-server, and gives each test its own Redis and
// key prefix: what one test writes, another does not see.
func TestEmbeddedNeedsNoServer(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	t.Setenv("REDIS_SERVER", filepath.Join(t.TempDir(), "redis-server"))
	a, prefixA := Embedded(t)
	b, prefixB := Embedded(t)
	if prefixA == prefixB || !strings.HasPrefix(prefixA, "test:TestEmbeddedNeedsNoServer:") {
		t.Fatalf("prefixes %q and %q; want two distinct ones naming the test", prefixA, prefixB)
	}
	if err := a.Set(t.Context(), prefixA+"k", "v", 0).Err(); err != nil {
		t.Fatalf("SET on the embedded Redis: %v", err)
	}
	if n, err := b.Exists(t.Context(), prefixA+"k").Result(); err != nil || n != 0 {
		t.Fatalf("the other test's Redis holds its key: %d, %v", n, err)
	}
}
