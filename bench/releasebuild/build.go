package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/slackapprove/slackbot/bench/internal/benchredis"
)

// pkg is what both builds compile.
const pkg = "./cmd/slackbot"

// build is one way of building cmd/slackbot, and what it measured.
type build struct {
	name     string
	env      []string // NAME=value added to the go command's environment
	flags    []string // go build flags, -o excepted
	path     string
	startups []startupResult
}

func (b *build) command() string {
	parts := append(append([]string{}, b.env...), "go", "build")
	for _, f := range b.flags {
		if strings.ContainsAny(f, " \t") {
			f = strconv.Quote(f)
		}
		parts = append(parts, f)
	}
	return strings.Join(append(parts, pkg), " ")
}

func (b *build) compile(ctx context.Context) error {
	args := append(append([]string{"build"}, b.flags...), "-o", b.path, pkg)
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Env = append(os.Environ(), b.env...)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("%s: %w\n%s", b.command(), err, out)
	}
	return nil
}

// dockerBuild reads the release build from a Dockerfile: the RUN
// instruction that runs `go build`, its environment assignments that do not
// depend on build arguments (CGO_ENABLED=0; GOOS and GOARCH name the
// target platform, here the host's) and its flags, ${VERSION} set to
// "bench" and -o left out.
func dockerBuild(file string) (*build, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var ins, cur strings.Builder
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if strings.HasPrefix(line, "#") {
			continue
		}
		if cont, ok := strings.CutSuffix(line, `\`); ok {
			cur.WriteString(cont + " ")
			continue
		}
		cur.WriteString(line)
		if strings.HasPrefix(cur.String(), "RUN ") && strings.Contains(cur.String(), "go build") {
			ins.WriteString(cur.String())
			break
		}
		cur.Reset()
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if ins.Len() == 0 {
		return nil, fmt.Errorf("%s: no RUN … go build", file)
	}
	words, err := shellWords(strings.TrimPrefix(ins.String(), "RUN "))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	b := &build{}
	i := 0
	for ; i+1 < len(words) && (words[i] != "go" || words[i+1] != "build"); i++ {
		name, value, ok := strings.Cut(words[i], "=")
		if ok && !strings.HasPrefix(name, "-") && !strings.Contains(value, "$") {
			b.env = append(b.env, words[i])
		}
	}
	rest := words[min(i+2, len(words)):]
	if len(rest) == 0 || rest[len(rest)-1] != pkg {
		return nil, fmt.Errorf("%s: go build of %v, want %s last", file, rest, pkg)
	}
	for j := 0; j < len(rest)-1; j++ {
		if rest[j] == "-o" {
			j++
			continue
		}
		b.flags = append(b.flags, strings.ReplaceAll(rest[j], "${VERSION}", "bench"))
	}
	return b, nil
}

// shellWords splits s as a POSIX shell splits a simple command with double
// quotes and no other quoting, which is all a Dockerfile's go build needs.
func shellWords(s string) ([]string, error) {
	var (
		words  []string
		cur    strings.Builder
		quoted bool
		inWord bool
	)
	for _, r := range s {
		switch {
		case r == '"':
			quoted = !quoted
			inWord = true
		case !quoted && (r == ' ' || r == '\t'):
			if inWord {
				words = append(words, cur.String())
				cur.Reset()
				inWord = false
			}
		default:
			cur.WriteRune(r)
			inWord = true
		}
	}
	if quoted {
		return nil, errors.New("unterminated double quote")
	}
	if inWord {
		words = append(words, cur.String())
	}
	return words, nil
}

// startupResult is one start-up: exec to the first 200 from /healthz, and
// the process's resident memory then.
type startupResult struct {
	ready time.Duration
	rssKB int
}

// startup runs bin as `slackbot dev` on a free loopback port (against
// redisURL, or the embedded Redis when it is empty), polls /healthz every
// millisecond until it answers 200, then stops the process with SIGTERM and
// waits for it.
func startup(ctx context.Context, bin, redisURL string) (startupResult, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return startupResult{}, err
	}
	addr := ln.Addr().String()
	ln.Close()
	cmd := exec.Command(bin, "dev")
	cmd.Env = []string{"ADDR=" + addr, "REDIS_URL=" + redisURL, "LOG_LEVEL=warn", "PATH=" + os.Getenv("PATH")}
	var stderr strings.Builder
	cmd.Stdout, cmd.Stderr = io.Discard, &stderr
	client := &http.Client{Timeout: time.Second}
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return startupResult{}, err
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	stop := func() error {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
			return nil
		case <-time.After(30 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
			return errors.New("did not stop within 30s of SIGTERM")
		}
	}
	url := "http://" + addr + "/healthz"
	for deadline := start.Add(30 * time.Second); ; {
		resp, err := client.Get(url)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				res := startupResult{ready: time.Since(start), rssKB: rssKB(cmd.Process.Pid)}
				return res, stop()
			}
		}
		select {
		case err := <-exited:
			return startupResult{}, fmt.Errorf("exited before /healthz answered (%v): %s", err, stderr.String())
		case <-ctx.Done():
			_ = stop()
			return startupResult{}, ctx.Err()
		case <-time.After(time.Millisecond):
		}
		if time.Now().After(deadline) {
			_ = stop()
			return startupResult{}, fmt.Errorf("/healthz did not answer 200 within 30s: %s", stderr.String())
		}
	}
}

// rssKB is a process's resident set (VmRSS) in KiB, or 0 where /proc has
// none (not Linux).
func rssKB(pid int) int {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for line := range strings.SplitSeq(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			n, _ := strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(v), " kB"))
			return n
		}
	}
	return 0
}

// startRedis starts the redis-server the starts are measured against.
func startRedis(ctx context.Context) (*benchredis.Server, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return benchredis.Start("")
}
