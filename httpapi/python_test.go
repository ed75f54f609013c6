package httpapi_test

import (
	"context"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/slackapprove/slackbot/internal/testbin"
)

// TestPythonExample runs clients/python's tests against this
// slackbot (fake Slack, real Redis), with an approver who clicks Approve
// on every card as it appears. Python is needed ($PYTHON3 or python3 on
// PATH): without it the test fails when python3 is required (scripts/test
// and CI=true require it, see internal/testbin) and is skipped otherwise.
func TestPythonExample(t *testing.T) {
	py := testbin.Find(t, "python3")
	dir, err := filepath.Abs(filepath.Join("..", "clients", "python"))
	if err != nil {
		t.Fatal(err)
	}
	e := newEnv(t, envOptions{})

	ctx, cancel := context.WithCancel(t.Context())
	var wg sync.WaitGroup
	clicks := 0
	wg.Go(func() { clicks = e.approveEverything(ctx, alice) })

	cmd := exec.CommandContext(t.Context(), py, "-m", "unittest", "-v", "test_slackbot_client")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(),
		"SLACKBOT_URL="+e.srv.URL,
		"SLACKBOT_API_KEY="+keyBilling,
		"SLACKBOT_LIVE_TIMEOUT=60",
		"PYTHONDONTWRITEBYTECODE=1",
		"PYTHONUNBUFFERED=1",
	)
	cmd.WaitDelay = 5 * time.Second
	out, err := cmd.CombinedOutput()
	cancel()
	wg.Wait()
	t.Logf("python3 -m unittest (%d cards approved):\n%s", clicks, out)
	if err != nil {
		t.Fatalf("the Python tests failed: %v", err)
	}
	got := string(out)
	for _, want := range []string{
		`LIVE handler results: {"calls":{},"approvals":{"call_live_1":true},"metadata":{},"answered_by":{"call_live_1":"U0ALICE"}}`,
		`LIVE stop-the-world results: {"calls":{"call_2":{"rows":3}},"approvals":{"call_1":true,"call_3":true},"metadata":{},"answered_by":{"call_1":"U0ALICE","call_2":"billing","call_3":"U0ALICE"}}`,
	} {
		if !strings.Contains(got, want) {
			t.Errorf("the Python output lacks %s", want)
		}
	}
	if strings.Contains(got, "skipped 'set SLACKBOT_URL") {
		t.Errorf("the live Python tests were skipped")
	}
}

// approveEverything clicks Approve, as user, on every card that offers it
// until ctx ends, and returns how many it clicked.
func (e *env) approveEverything(ctx context.Context, user string) int {
	clicked := map[string]bool{}
	for ctx.Err() == nil {
		for _, ch := range []string{approvals_, "C0GENERAL"} {
			for _, m := range e.slack.Messages(ch) {
				btn, ok := button(m, "approve")
				if !ok || clicked[m.TS] {
					continue
				}
				clicked[m.TS] = true
				if status, err := e.slackPost(ctx, e.clickPayload(user, m, btn)); err != nil || status != http.StatusOK {
					if ctx.Err() == nil {
						e.t.Errorf("approve %s: got %d, %v", m.TS, status, err)
					}
				}
			}
		}
		select {
		case <-ctx.Done():
		case <-time.After(10 * time.Millisecond):
		}
	}
	return len(clicked)
}
