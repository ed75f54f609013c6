package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/slackapprove/slackbot/bench/internal/benchredis"
)

// process is a child process that serves HTTP on a loopback port and
// prints "listening on http://…" on stdout once it does.
type process struct {
	name string
	cmd  *exec.Cmd
	base string
	logs *tailBuffer
	done chan struct{}
}

var listenRE = regexp.MustCompile(`listening on (http://\S+)`)

// startProcess starts path with args and env and waits until it prints its
// address.
func startProcess(name, path string, args, env []string) (*process, error) {
	cmd := exec.Command(path, args...)
	cmd.Env = env
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	p := &process{name: name, cmd: cmd, logs: &tailBuffer{max: 64 << 10}, done: make(chan struct{})}
	cmd.Stderr = p.logs
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	addr := make(chan string, 1)
	go func() {
		defer close(p.done)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if m := listenRE.FindStringSubmatch(sc.Text()); m != nil {
				select {
				case addr <- m[1]:
				default:
				}
			}
		}
		_, _ = io.Copy(io.Discard, stdout)
		_ = cmd.Wait()
	}()
	select {
	case p.base = <-addr:
		return p, nil
	case <-p.done:
		return nil, fmt.Errorf("%s exited before listening:\n%s", name, p.logs.String())
	case <-time.After(30 * time.Second):
		p.stop()
		return nil, fmt.Errorf("%s did not start within 30s:\n%s", name, p.logs.String())
	}
}

// stop ends the process with SIGTERM, and SIGKILL after 10 seconds.
func (p *process) stop() {
	if p == nil {
		return
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(10 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.done
	}
}

// pid returns the process id.
func (p *process) pid() int { return p.cmd.Process.Pid }

// tailBuffer keeps the last max bytes written to it, for error messages.
type tailBuffer struct {
	mu  sync.Mutex
	max int
	b   []byte
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if len(t.b) > t.max {
		t.b = append([]byte(nil), t.b[len(t.b)-t.max:]...)
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.b)
}

// freePort is benchredis.FreePort.
var freePort = benchredis.FreePort

// moduleRoot returns the directory of the slackbot module's go.mod.
func moduleRoot() (string, error) {
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOMOD: %w", err)
	}
	gomod := strings.TrimSpace(string(out))
	if gomod == "" || gomod == os.DevNull {
		return "", errors.New("run the bench from inside the slackbot module (go run ./bench/clickbench)")
	}
	return filepath.Dir(gomod), nil
}

// pprofShim is added to package main of the slackbot build with -pprof, via
// go build -overlay, so the tree itself never serves pprof.
const pprofShim = `package main

import (
	"net/http"
	_ "net/http/pprof"
	"os"
)

func init() {
	if addr := os.Getenv("BENCH_PPROF_ADDR"); addr != "" {
		go func() { _ = http.ListenAndServe(addr, nil) }()
	}
}
`

// buildSlackbot builds cmd/slackbot into dir, with the pprof shim when
// withPprof is set.
func buildSlackbot(dir string, withPprof bool) (string, error) {
	root, err := moduleRoot()
	if err != nil {
		return "", err
	}
	bin := filepath.Join(dir, "slackbot")
	args := []string{"build", "-o", bin}
	if withPprof {
		shim := filepath.Join(dir, "pprof_shim.go")
		if err := os.WriteFile(shim, []byte(pprofShim), 0o600); err != nil {
			return "", err
		}
		overlay, _ := json.Marshal(map[string]any{"Replace": map[string]string{
			filepath.Join(root, "cmd", "slackbot", "zz_bench_pprof.go"): shim,
		}})
		ov := filepath.Join(dir, "overlay.json")
		if err := os.WriteFile(ov, overlay, 0o600); err != nil {
			return "", err
		}
		args = append(args, "-overlay", ov)
	}
	args = append(args, "./cmd/slackbot")
	cmd := exec.Command("go", args...)
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build ./cmd/slackbot: %w\n%s", err, out)
	}
	return bin, nil
}

// cpuSeconds returns the user+system CPU time a process has used, from
// /proc/<pid>/stat (Linux); 0 where that is not available.
func cpuSeconds(pid int) float64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	// Fields after the command name, which is in parentheses and may hold
	// spaces: utime and stime are fields 14 and 15 of the whole line.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 13 {
		return 0
	}
	ut, _ := strconv.ParseFloat(f[11], 64)
	st, _ := strconv.ParseFloat(f[12], 64)
	return (ut + st) / clockTicks
}

// clockTicks is USER_HZ, 100 on every Linux this runs on.
const clockTicks = 100

// waitHTTP polls url until it answers 200 or timeout passes.
func waitHTTP(ctx context.Context, client *http.Client, url string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		resp, err := client.Do(req)
		if err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			err = fmt.Errorf("status %d", resp.StatusCode)
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s did not answer 200 within %s: %w", url, timeout, err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}
