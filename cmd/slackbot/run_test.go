package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/slackapprove/slackbot/bot"
	"github.com/slackapprove/slackbot/internal/slackfake"
	"github.com/slackapprove/slackbot/internal/slackfaketest"
	"github.com/slackapprove/slackbot/receipt"
	"github.com/slackapprove/slackbot/store/redistest"
)

// syncBuffer is an io.Writer safe for the program and the test at once.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

var listenRE = regexp.MustCompile(`listening on (http://\S+)`)

// getenvOf is the getenv of run over vars: the process's own environment
// (CI's REDIS_URL and the like) does not reach the program.
func getenvOf(vars map[string]string) func(string) string {
	return func(name string) string { return vars[name] }
}

// startRun starts the real program with args and the environment env in
// the background and waits until /healthz answers. It returns the base
// URL; the program stops when the test ends.
func startRun(t *testing.T, env map[string]string, args ...string) (string, *syncBuffer) {
	t.Helper()
	base, stderr, _ := startRunStop(t, env, args...)
	return base, stderr
}

// startRunStop is startRun that also returns stop, which stops the program
// as a SIGTERM would and returns once it has (an error if run failed or
// took more than 30s); the test's end stops it otherwise.
func startRunStop(t *testing.T, env map[string]string, args ...string) (string, *syncBuffer, func() error) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	stdout, stderr := &syncBuffer{}, &syncBuffer{}
	done := make(chan error, 1)
	go func() { done <- run(ctx, args, getenvOf(env), nil, stdout, stderr) }()
	stop := sync.OnceValue(func() error {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				return fmt.Errorf("run returned %v", err)
			}
			return nil
		case <-time.After(30 * time.Second):
			return errors.New("run did not stop within 30s of cancellation")
		}
	})
	t.Cleanup(func() {
		if err := stop(); err != nil {
			t.Error(err)
		}
	})
	var base string
	deadline := time.Now().Add(20 * time.Second)
	for {
		if m := listenRE.FindStringSubmatch(stdout.String()); m != nil {
			base = m[1]
			break
		}
		select {
		case err := <-done:
			t.Fatalf("run ended before listening: %v\nstderr: %s", err, stderr.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("run did not print its address; stderr: %s", stderr.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	for {
		resp, err := http.Get(base + "/healthz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return base, stderr, stop
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("/healthz never answered: %v", err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// receiptSeed is a RECEIPT_KEY made of one repeated letter.
func receiptSeed(letter string) string {
	return receipt.EncodeSeed([]byte(strings.Repeat(letter, receipt.SeedSize)))
}

func receiptKeyID(t *testing.T, letter string) string {
	t.Helper()
	k, err := receipt.ParseSeed(receiptSeed(letter))
	if err != nil {
		t.Fatal(err)
	}
	return k.ID()
}

// TestServeEndToEnd runs `slackbot serve` as an operator would, against a
// fake Slack and a real redis-server: a signed app_mention starts a run,
// the approval card appears, an authorized approver clicks Approve, and the
// tool's result is answered in the thread.
func TestServeEndToEnd(t *testing.T) {
	t.Parallel()
	fake, fakeSrv := slackfaketest.NewTestServer(t, slackfake.WithDemoWorkspace())
	rs := redistest.StartServer(t)
	routes := filepath.Join(t.TempDir(), "routes.yaml")
	if err := os.WriteFile(routes, []byte(testRoutes), 0o600); err != nil {
		t.Fatal(err)
	}
	vars := map[string]string{
		"SLACK_BOT_TOKEN": fake.Token(), "SLACK_SIGNING_SECRET": testSecret,
		"SLACK_API_URL": slackfaketest.APIURL(fakeSrv), "REDIS_URL": rs.URL(), "ROUTES_FILE": routes,
		"ADDR": "127.0.0.1:0", "MODEL": "test:delete_customer", "TOOLS": "demo", "LOG_FORMAT": "text",
		"RECEIPT_KEY": receiptSeed("n"), "RECEIPT_KEY_PREVIOUS": receiptSeed("o"),
	}
	base, stderr := startRun(t, vars, "serve")
	// The JWKS holds RECEIPT_KEY, then RECEIPT_KEY_PREVIOUS; the approval
	// below runs only if its receipt, signed with RECEIPT_KEY, verifies.
	if got, want := jwks(t, base).IDs(), []string{receiptKeyID(t, "n"), receiptKeyID(t, "o")}; strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("JWKS key ids %v, want %v", got, want)
	}

	resp, err := http.Get(base + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("/readyz: got %d, want 200", resp.StatusCode)
	}

	full := "<@" + fake.BotUserID() + "> please delete customer a"
	msg, err := fake.PostAsUser(general, carol, full, "")
	if err != nil {
		t.Fatal(err)
	}
	event, _ := json.Marshal(map[string]any{
		"type": "event_callback", "team_id": "T0FAKE", "event_id": "Ev0001", "event_time": time.Now().Unix(),
		"event": map[string]any{"type": "app_mention", "user": carol, "text": full, "ts": msg.TS, "channel": general},
	})
	postSigned(t, base+"/slack/events", "application/json", event)
	postSigned(t, base+"/slack/events", "application/json", event) // Slack's retry: one run only

	e := &env{t: t, slack: fake}
	card := e.waitCards(1)[0]
	body := (&env{t: t, slack: fake}).clickPayload(alice, "T0FAKE", card, bot.ActionIDApprove)
	postSigned(t, base+"/slack/interactivity", "application/x-www-form-urlencoded", body)

	if got, want := e.waitReply(general, msg.TS), `{"delete_customer":"deleted a"}`; got != want {
		t.Errorf("thread answer: got %q, want %q", got, want)
	}
	if n := len(e.cards()); n != 1 {
		t.Errorf("got %d cards, want 1: the retried event started a second run", n)
	}
	resp, err = http.Get(base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	var metrics bytes.Buffer
	_, _ = metrics.ReadFrom(resp.Body)
	resp.Body.Close()
	for _, want := range []string{`slackbot_decisions_total{outcome="approved",route="deletions"} 1`, "slackbot_webhook_duration_seconds_bucket", "slackbot_pending_approvals"} {
		if !strings.Contains(metrics.String(), want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
	for _, secret := range []string{vars["RECEIPT_KEY"], vars["RECEIPT_KEY_PREVIOUS"], testSecret, fake.Token()} {
		if strings.Contains(metrics.String(), secret) {
			t.Error("a secret appears in /metrics")
		}
	}
	if strings.Contains(stderr.String(), testSecret) || strings.Contains(stderr.String(), fake.Token()) ||
		strings.Contains(stderr.String(), vars["RECEIPT_KEY"]) || strings.Contains(stderr.String(), vars["RECEIPT_KEY_PREVIOUS"]) {
		t.Error("a secret appears in the logs")
	}
}

func postSigned(t *testing.T, url, contentType string, body []byte) {
	t.Helper()
	if err := postSignedErr(t.Context(), url, contentType, body); err != nil {
		t.Fatal(err)
	}
}

// postSignedErr is postSigned for any goroutine: it returns what went
// wrong, an answer other than 200 included.
func postSignedErr(ctx context.Context, url, contentType string, body []byte) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", contentType)
	bot.SignSlackRequest(req.Header, testSecret, time.Now(), body)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("POST %s: got %d", url, resp.StatusCode)
	}
	return nil
}

// TestServeRefusesBadConfiguration: one start-up names every problem.
func TestServeRefusesBadConfiguration(t *testing.T) {
	t.Parallel()
	vars := map[string]string{
		"SLACK_BOT_TOKEN": "", "SLACK_SIGNING_SECRET": "", "SLACK_APP_TOKEN": "",
		"SLACK_API_URL": "ftp://nowhere", "REDIS_URL": "http://localhost", "ADDR": "nonsense",
		"MODEL": "gpt-4", "LOG_LEVEL": "loud", "LOG_FORMAT": "xml", "TLS_CERT_FILE": "/nonexistent.pem",
		"TOOLS": "everything", "API_KEYS": "short", "API_MAX_OPEN": "0", "API_RATE": "-1",
	}
	err := run(t.Context(), []string{"serve"}, getenvOf(vars), nil, &bytes.Buffer{}, &bytes.Buffer{})
	if err == nil {
		t.Fatal("serve started with a broken configuration")
	}
	for _, name := range []string{"SLACK_BOT_TOKEN", "SLACK_SIGNING_SECRET", "SLACK_API_URL", "REDIS_URL", "ADDR",
		"MODEL", "LOG_LEVEL", "LOG_FORMAT", "TLS_CERT_FILE", "TLS_KEY_FILE", "TOOLS", "API_KEYS", "API_MAX_OPEN", "API_RATE"} {
		if !strings.Contains(err.Error(), name) {
			t.Errorf("error does not name %s:\n%v", name, err)
		}
	}
}

func TestRoutesCheck(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	good := filepath.Join(dir, "good.yaml")
	bad := filepath.Join(dir, "bad.yaml")
	if err := os.WriteFile(good, []byte(testRoutes), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bad, []byte("routes:\n  - name: x\n    chanel: C1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := run(t.Context(), []string{"routes", "check", good}, getenvOf(nil), nil, &out, &bytes.Buffer{}); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"3 routes", "deploys", "refunds", "deletions", "C0APPROVALS"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("routes check output lacks %q:\n%s", want, out.String())
		}
	}
	err := run(t.Context(), []string{"routes", "check", bad}, getenvOf(nil), nil, &out, &bytes.Buffer{})
	if err == nil || !strings.Contains(err.Error(), "bad.yaml:3") {
		t.Errorf("bad file: got %v, want an error at bad.yaml:3", err)
	}
}

func TestVersionAndUsage(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	if err := run(t.Context(), []string{"version"}, getenvOf(nil), nil, &out, &bytes.Buffer{}); err != nil || !strings.HasPrefix(out.String(), "slackbot ") {
		t.Errorf("version: got %q, %v", out.String(), err)
	}
	if err := run(t.Context(), nil, getenvOf(nil), nil, &out, &bytes.Buffer{}); err == nil || !strings.Contains(err.Error(), "usage") {
		t.Errorf("no args: got %v, want usage", err)
	}
	if err := run(t.Context(), []string{"launch"}, getenvOf(nil), nil, &out, &bytes.Buffer{}); err == nil {
		t.Error("unknown command accepted")
	}
}
