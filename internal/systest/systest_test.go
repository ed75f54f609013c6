package systest_test

import (
	"fmt"
	"log/slog"
	"slices"
	"testing"
	"time"

	"github.com/slackapprove/slackbot/approval"
	"github.com/slackapprove/slackbot/internal/approvaltest"
	"github.com/slackapprove/slackbot/internal/clocktest"
	"github.com/slackapprove/slackbot/internal/systest"
)

const routes = `
routes:
  - name: deletions
    when: {tools: ["delete_*"]}
    channel: C0APPROVALS
    approvers: {users: [U0ALICE]}
    timeout: 30m
`

// A request past its deadline expires by the system's own sweep, and its
// card says so, as the program's job would make it.
func TestSweepExpiresAndUpdatesTheCards(t *testing.T) {
	clock := &clocktest.Clock{}
	sys := systest.New(t, systest.Options{Routes: systest.ParseRoutes(t, routes), Now: clock.Now})
	f := approvaltest.Fixture{Svc: sys.Service, Store: sys.Store, Poster: sys.Cards}
	r := f.Open(t, "U0BOB", approvaltest.Call("c1", "delete_customer", `{"id":"a"}`))
	if n := sys.Cards.CardsIn("C0APPROVALS"); n != 1 {
		t.Fatalf("got %d cards in the route's channel, want 1", n)
	}
	clock.Add(31 * time.Minute)
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		if c, ok := sys.Cards.Shown(r.Token, "c1"); ok && c.Status == approval.CallExpired {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the card never showed the call expired")
		}
	}
	got, err := sys.Service.Get(t.Context(), r.Token)
	if err != nil {
		t.Fatal(err)
	}
	if s := got.Call("c1").Status; s != approval.CallExpired {
		t.Errorf("call status %q, want %q", s, approval.CallExpired)
	}
}

// recorder is a testing.TB whose failures and cleanups the test sees.
type recorder struct {
	testing.TB
	errors   []string
	cleanups []func()
}

func (r *recorder) Helper()          {}
func (r *recorder) Cleanup(f func()) { r.cleanups = append(r.cleanups, f) }
func (r *recorder) Errorf(format string, args ...any) {
	r.errors = append(r.errors, fmt.Sprintf(format, args...))
}
func (r *recorder) Failed() bool        { return len(r.errors) > 0 }
func (r *recorder) Logf(string, ...any) {}

func (r *recorder) end() {
	for _, f := range slices.Backward(r.cleanups) {
		f()
	}
}

// A secret in the log fails the test when it ends; a log without one
// does not.
func TestLogFailsOnASecret(t *testing.T) {
	for _, tt := range []struct {
		logged string
		fails  bool
	}{
		{"key=billing-key-0123456789abcdef", true},
		{"key=billing", false},
	} {
		r := &recorder{TB: t}
		log := systest.NewLog(r, slog.LevelInfo, "billing-key-0123456789abcdef")
		log.Info("authenticate", "header", tt.logged)
		r.end()
		if got := len(r.errors) > 0; got != tt.fails {
			t.Errorf("logged %q: failed %v, want %v (%q)", tt.logged, got, tt.fails, r.errors)
		}
	}
}
