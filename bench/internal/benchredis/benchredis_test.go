package benchredis

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"testing"

	"github.com/redis/go-redis/v9"
)

// TestStartStop: the server answers on loopback, and Stop ends it and
// removes the directory Start made.
func TestStartStop(t *testing.T) {
	if _, err := exec.LookPath("redis-server"); err != nil {
		t.Skip("redis-server not on PATH (scripts/test installs it)")
	}
	s, err := Start("")
	if err != nil {
		t.Fatal(err)
	}
	rdb := redis.NewClient(&redis.Options{Addr: s.Addr, MaxRetries: -1})
	defer rdb.Close()
	if err := rdb.Set(context.Background(), "k", "v", 0).Err(); err != nil {
		t.Fatalf("SET on %s: %v", s.URL(0), err)
	}
	dir := s.tmpDir
	s.Stop()
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the server's directory %s is still there after Stop: %v", dir, err)
	}
	if err := rdb.Ping(context.Background()).Err(); err == nil {
		t.Error("the server still answers after Stop")
	}
}
