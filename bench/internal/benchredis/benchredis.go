// Package benchredis starts the redis-server a bench command measures
// against: a process of its own on a free loopback port, without
// persistence, stopped (and its directory removed) when the bench ends.
// The tests start theirs with store/redistest, which needs a testing.TB.
package benchredis

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

// ErrNoRedis says what to install when redis-server is missing.
var ErrNoRedis = errors.New("redis-server not found on PATH: install it (apt-get install redis-server) to run the bench")

// Server is a running redis-server.
type Server struct {
	// Addr is its loopback host:port.
	Addr string

	cmd    *exec.Cmd
	done   chan struct{}
	tmpDir string // removed by Stop: the directory Start made
}

// Start starts redis-server in dir (its log goes to dir/redis.log), or
// in a directory of its own when dir is "", and returns once it answers
// PING (at most 10 s).
func Start(dir string) (*Server, error) {
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		return nil, ErrNoRedis
	}
	s := &Server{done: make(chan struct{})}
	if dir == "" {
		if dir, err = os.MkdirTemp("", "bench-redis-"); err != nil {
			return nil, err
		}
		s.tmpDir = dir
	}
	port, err := FreePort()
	if err != nil {
		s.removeDir()
		return nil, err
	}
	s.Addr = net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	s.cmd = exec.Command(bin, "--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--dir", dir,
		"--save", "", "--appendonly", "no", "--logfile", filepath.Join(dir, "redis.log"))
	var out bytes.Buffer
	s.cmd.Stdout, s.cmd.Stderr = &out, &out
	if err := s.cmd.Start(); err != nil {
		s.removeDir()
		return nil, fmt.Errorf("start redis-server: %w", err)
	}
	go func() {
		_ = s.cmd.Wait()
		close(s.done)
	}()
	rdb := redis.NewClient(&redis.Options{Addr: s.Addr, MaxRetries: -1})
	defer rdb.Close()
	deadline := time.Now().Add(10 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		err := rdb.Ping(ctx).Err()
		cancel()
		if err == nil {
			return s, nil
		}
		select {
		case <-s.done:
			s.removeDir()
			return nil, fmt.Errorf("redis-server exited at start: %s", out.String())
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			s.Stop()
			return nil, fmt.Errorf("redis-server did not answer PING within 10s: %w", err)
		}
	}
}

// URL is the server's URL for database db.
func (s *Server) URL(db int) string { return fmt.Sprintf("redis://%s/%d", s.Addr, db) }

// Stop kills the server, waits for it to exit and removes the directory
// Start made.
func (s *Server) Stop() {
	_ = s.cmd.Process.Kill()
	<-s.done
	s.removeDir()
}

func (s *Server) removeDir() {
	if s.tmpDir != "" {
		_ = os.RemoveAll(s.tmpDir)
	}
}

// FreePort returns a loopback TCP port nothing listened on a moment ago.
func FreePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("find a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
