package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/slackapprove/slackbot/bot"
	"github.com/slackapprove/slackbot/internal/slackfake"
	"github.com/slackapprove/slackbot/internal/slackfaketest"
	"github.com/slackapprove/slackbot/store/redistest"
)

// The durable-resume tests run the real slackbot binary as separate
// processes sharing one redis-server and one fake Slack, and kill them with
// SIGKILL, as a crash or an OOM kill would.

var (
	binOnce sync.Once
	binPath string
	binDir  string
	binErr  error
)

// slackbotBinary builds the program once per test binary.
func slackbotBinary(t *testing.T) string {
	t.Helper()
	buildSlackbot()
	if binErr != nil {
		t.Fatal(binErr)
	}
	return binPath
}

// buildSlackbot builds the program, once: TestMain starts it early for a
// whole run, so that the build overlaps the first tests.
// pkgDir is this package's directory, the working directory the tests
// started in (TestMain).
var pkgDir string

func buildSlackbot() {
	binOnce.Do(func() {
		dir, err := os.MkdirTemp("", "slackbot-bin-")
		if err != nil {
			binErr = err
			return
		}
		binDir = dir
		binPath = filepath.Join(dir, "slackbot")
		// -buildvcs=false: the binary needs no VCS stamp, and reading the
		// repository's status would fail while a git command holds its lock.
		// The package is named by its directory, taken before any test ran:
		// the build may start beside a test that changes the working
		// directory (t.Chdir).
		cmd := exec.Command("go", "build", "-buildvcs=false", "-o", binPath, ".")
		cmd.Dir = pkgDir
		out, err := cmd.CombinedOutput()
		if err != nil {
			binErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
}

// removeSlackbot removes the built program's directory once the tests
// are done (each run's build is ~100 MB; a CI machine that runs the suite
// again and again must not fill its disk). A build still under way is
// waited for; one never started is not started.
func removeSlackbot() {
	binOnce.Do(func() {})
	if binDir != "" {
		_ = os.RemoveAll(binDir)
	}
}

// proc is one slackbot process.
type proc struct {
	cmd  *exec.Cmd
	base string
	logs *syncBuffer
	done chan struct{}
}

// cluster is what the processes share: Redis, the fake Slack, the demo
// sandbox, the routing file.
type cluster struct {
	t       *testing.T
	slack   *slackfake.Server
	env     []string
	sandbox string
	redis   *redistest.Server
}

func newCluster(t *testing.T, routes string) *cluster {
	t.Helper()
	rs := redistest.StartServer(t)
	c := newClusterOn(t, routes, rs.URL())
	c.redis = rs
	return c
}

// newClusterOn is newCluster with the processes on redisURL (a Redis the
// caller started, such as a Sentinel topology); c.redis is nil.
func newClusterOn(t *testing.T, routes, redisURL string) *cluster {
	t.Helper()
	fake, fakeSrv := slackfaketest.NewTestServer(t, slackfake.WithDemoWorkspace())
	tmp := t.TempDir()
	routesFile := filepath.Join(tmp, "routes.yaml")
	if err := os.WriteFile(routesFile, []byte(routes), 0o600); err != nil {
		t.Fatal(err)
	}
	// The demo tools' sandbox lives under TMPDIR; delete_file("a") deletes
	// this file, so whether and how often the tool ran can be seen from
	// outside the processes.
	sandbox := filepath.Join(tmp, "slackbot-demo-sandbox")
	if err := os.MkdirAll(sandbox, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(sandbox, "a"), []byte("precious"), 0o644); err != nil {
		t.Fatal(err)
	}
	env := append(os.Environ(),
		"SLACK_BOT_TOKEN="+fake.Token(), "SLACK_SIGNING_SECRET="+testSecret,
		"SLACK_API_URL="+slackfaketest.APIURL(fakeSrv), "REDIS_URL="+redisURL, "ROUTES_FILE="+routesFile,
		"ADDR=127.0.0.1:0", "MODEL=test:delete_file", "TOOLS=demo", "LOG_FORMAT=text", "LOG_LEVEL=debug",
		"TMPDIR="+tmp,
	)
	return &cluster{t: t, slack: fake, env: env, sandbox: sandbox}
}

// start starts a slackbot process and waits until it serves.
func (c *cluster) start(name string) *proc {
	c.t.Helper()
	cmd := exec.Command(slackbotBinary(c.t), "serve")
	cmd.Env = c.env
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		c.t.Fatal(err)
	}
	p := &proc{cmd: cmd, logs: &syncBuffer{}, done: make(chan struct{})}
	cmd.Stderr = p.logs
	if err := cmd.Start(); err != nil {
		c.t.Fatal(err)
	}
	c.t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-p.done
		if c.t.Failed() {
			c.t.Logf("logs of %s:\n%s", name, p.logs.String())
		}
	})
	addr := make(chan string, 1)
	go func() {
		defer close(p.done)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if m := listenRE.FindStringSubmatch(sc.Text()); m != nil {
				addr <- m[1]
			}
		}
		_, _ = io.Copy(io.Discard, stdout)
		_ = cmd.Wait()
	}()
	select {
	case p.base = <-addr:
	case <-p.done:
		c.t.Fatalf("%s exited before listening:\n%s", name, p.logs.String())
	case <-time.After(30 * time.Second):
		c.t.Fatalf("%s did not start:\n%s", name, p.logs.String())
	}
	return p
}

// kill ends a process with SIGKILL: no shutdown, no goodbye to Redis.
func (p *proc) kill(t *testing.T) {
	t.Helper()
	if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-p.done
}

// mention posts a signed app_mention to p and returns the thread.
func (c *cluster) mention(p *proc) string {
	c.t.Helper()
	full := "<@" + c.slack.BotUserID() + "> delete the file a"
	msg, err := c.slack.PostAsUser(general, carol, full, "")
	if err != nil {
		c.t.Fatal(err)
	}
	body, _ := json.Marshal(map[string]any{
		"type": "event_callback", "team_id": "T0FAKE", "event_id": "Ev" + msg.TS, "event_time": time.Now().Unix(),
		"event": map[string]any{"type": "app_mention", "user": carol, "text": full, "ts": msg.TS, "channel": general},
	})
	postSigned(c.t, p.base+"/slack/events", "application/json", body)
	return msg.TS
}

func (c *cluster) fileExists() bool {
	_, err := os.Stat(filepath.Join(c.sandbox, "a"))
	return err == nil
}

// waitAnswer waits for the thread's answer and checks that exactly one
// arrives.
func (c *cluster) waitAnswer(thread string, timeout time.Duration) string {
	c.t.Helper()
	e := &env{t: c.t, slack: c.slack}
	deadline := time.Now().Add(timeout)
	for len(e.replies(general, thread)) == 0 {
		if time.Now().After(deadline) {
			c.t.Fatalf("no answer in the thread after %s", timeout)
		}
		time.Sleep(20 * time.Millisecond)
	}
	// A second resume would post a second answer: give it the time a
	// reclaim takes to show up before counting.
	time.Sleep(500 * time.Millisecond)
	if got := e.replies(general, thread); len(got) != 1 {
		c.t.Errorf("got %d answers in the thread, want exactly 1: %q", len(got), got)
	}
	return e.replies(general, thread)[0]
}

// approveOn clicks Approve on the card as user through process p and checks
// that the run answers once with the tool's result and the file is gone.
func (c *cluster) approveOn(p *proc, e *env, card slackfake.Message, user, thread string) {
	c.t.Helper()
	postSigned(c.t, p.base+"/slack/interactivity", "application/x-www-form-urlencoded", e.clickPayload(user, "T0FAKE", card, bot.ActionIDApprove))
	if got, want := c.waitAnswer(thread, 40*time.Second), `{"delete_file":"deleted a"}`; got != want {
		c.t.Errorf("answer: got %q, want %q", got, want)
	}
	if c.fileExists() {
		c.t.Error("the file still exists: the approved tool did not run")
	}
}

// waitingRun starts process A, starts a run on it from a mention, and
// waits for the run's approval card: the run now waits on A.
func (c *cluster) waitingRun() (a *proc, thread string, card slackfake.Message, e *env) {
	c.t.Helper()
	a = c.start("A")
	thread = c.mention(a)
	e = &env{t: c.t, slack: c.slack}
	return a, thread, e.waitCards(1)[0], e
}

const durableRoutes = `
routes:
  - name: deletions
    channel: C0APPROVALS
    approvers: {users: [U0ALICE, U0BOB]}
    timeout: 1h
`

// A run waits on A; A is killed; the click lands on B; B resumes the run
// from Redis: the tool runs once and the answer appears once.
func TestDurableResumeOnAnotherProcess(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("starts processes")
	}
	c := newCluster(t, durableRoutes)
	a, thread, card, e := c.waitingRun()
	a.kill(t)

	c.approveOn(c.start("B"), e, card, alice, thread)
	e.waitFor("the card to show the outcome", func() bool { return strings.Contains(cardText(e.latest(card)), "deleted a") })
	// B, which resumed the run, kept the thread's history for its next
	// message: the tool's result is in it.
	history := c.redis.Client(t).Get(t.Context(), "slackbot:thread:T0FAKE/"+general+"/"+thread+":h").Val()
	if !strings.Contains(history, `"tool_name":"delete_file"`) || !strings.Contains(history, "deleted a") {
		t.Errorf("the thread's history after the resume on B: got %s", history)
	}
}

// The same with A restarted instead of another process.
func TestDurableResumeAfterRestart(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("starts processes")
	}
	c := newCluster(t, durableRoutes)
	a, thread, card, e := c.waitingRun()
	a.kill(t)

	c.approveOn(c.start("A restarted"), e, card, bob, thread)
}

// Expiry while no process holds the run: B, started later, expires the
// token once, resumes the run with the timeout denial, and the card says
// expired. The tool never runs.
func TestDurableExpiryWhileNoProcessHoldsTheRun(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("starts processes")
	}
	c := newCluster(t, strings.Replace(durableRoutes, "timeout: 1h", "timeout: 2s", 1))
	a, thread, card, e := c.waitingRun()
	a.kill(t)
	time.Sleep(2 * time.Second) // let the deadline pass while nobody runs

	c.start("B")
	want := `{"delete_file":"No decision on this tool call arrived: the request expired"}`
	if got := c.waitAnswer(thread, 40*time.Second); got != want {
		t.Errorf("answer: got %q, want %q", got, want)
	}
	e.waitFor("the card to say expired", func() bool { return strings.Contains(cardText(e.latest(card)), "Expired") })
	if !c.fileExists() {
		t.Error("the file is gone: a tool ran without approval")
	}
}

// SIGTERM (a rolling deploy) leaves the waiting run in Redis, not
// cancelled: the click lands on another replica, which resumes it.
func TestGracefulShutdownLeavesRunsToOtherReplicas(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("starts processes")
	}
	c := newCluster(t, durableRoutes)
	a, thread, card, e := c.waitingRun()
	if err := a.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-a.done:
	case <-time.After(30 * time.Second):
		t.Fatal("A did not stop within 30s of SIGTERM")
	}
	if code := a.cmd.ProcessState.ExitCode(); code != 0 {
		t.Errorf("A exited with %d after SIGTERM, want 0", code)
	}
	if n := len(e.replies(general, thread)); n != 0 {
		t.Fatalf("A answered in the thread on shutdown: %q", e.replies(general, thread))
	}
	c.approveOn(c.start("B"), e, card, alice, thread)
}
