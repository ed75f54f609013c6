package store_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/redis/go-redis/v9"

	"github.com/slackapprove/slackbot/agentrunner"
	"github.com/slackapprove/slackbot/approval"
	"github.com/slackapprove/slackbot/store"
	"github.com/slackapprove/slackbot/store/redistest"
)

func TestMain(m *testing.M) { redistest.Main(m) }

// clock is an injectable clock that moves only when told.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock() *clock { return &clock{t: time.Now().Truncate(time.Millisecond)} }

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// env is one test's Redis: a client, its key prefix, a clock, and stores
// made on them as separate processes would make them.
type env struct {
	rdb    redis.UniversalClient
	prefix string
	clock  *clock
	opts   store.Options
}

func newEnv(t *testing.T) *env {
	t.Helper()
	rdb, prefix := redistest.Client(t)
	c := newClock()
	return &env{rdb: rdb, prefix: prefix, clock: c, opts: store.Options{Prefix: prefix, Now: c.Now}}
}

// store returns a store on the env's client.
func (e *env) store() *store.Store { return store.New(e.rdb, e.opts) }

// otherProcess returns a store on a client of its own (its own pool and
// connections), sharing the Redis and prefix: another replica.
func (e *env) otherProcess(t *testing.T) *store.Store {
	t.Helper()
	opt, err := redis.ParseURL(redistest.URL(t))
	if err != nil {
		t.Fatal(err)
	}
	rdb := redis.NewClient(opt)
	t.Cleanup(func() { _ = rdb.Close() })
	return store.New(rdb, e.opts)
}

// runTokens starts e.Run and waits until it has subscribed; it is stopped
// when the test ends.
func runTokens(t testing.TB, ev *store.Tokens) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- ev.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("events run: %v", err)
		}
	})
	select {
	case <-ev.Ready():
	case err := <-done:
		t.Fatalf("events run ended before subscribing: %v", err)
	}
}

// requests returns pending requests with the given approval ids, each a
// call of delete_file with a path argument.
func requests(ids ...string) agentrunner.DeferredToolRequests {
	var r agentrunner.DeferredToolRequests
	for _, id := range ids {
		r.Approvals = append(r.Approvals, agentrunner.ToolCallPart{
			ToolName:   "delete_file",
			Args:       json.RawMessage(`{"path":"` + id + `.txt"}`),
			ToolCallID: id,
		})
	}
	return r
}

// create stores an approval for reqs with deadline one hour from the
// env's clock, needing required approvals per call, and returns it.
func (e *env) create(t *testing.T, s *store.Store, reqs agentrunner.DeferredToolRequests, required int) *approval.Request {
	t.Helper()
	a := &approval.Request{
		Token:     agentrunner.NewToken(),
		RunID:     "run-" + agentrunner.NewToken()[:8],
		Origin:    approval.Origin{Team: "T0", Channel: "C0SUPPORT", ThreadTS: "1700000000.000100", User: "U0REQUESTER"},
		Requests:  reqs,
		ExpiresAt: e.clock.Now().Add(time.Hour),
	}
	for _, id := range reqs.IDs() {
		a.Calls = append(a.Calls, approval.Call{ID: id, Route: "files", Required: required})
	}
	if err := s.Create(t.Context(), a); err != nil {
		t.Fatalf("create: %v", err)
	}
	return a
}

func approve(callID, by string) approval.Decision {
	return approval.Decision{CallID: callID, By: by, Action: approval.ActionApprove}
}

func deny(callID, by, msg string) approval.Decision {
	return approval.Decision{CallID: callID, By: by, Action: approval.ActionDeny, Reason: msg}
}

// wantErr fails t unless errors.Is(err, want) (or both are nil).
func wantErr(t *testing.T, what string, err, want error) {
	t.Helper()
	if want == nil && err != nil || want != nil && !errors.Is(err, want) {
		t.Fatalf("%s: got error %v, want %v", what, err, want)
	}
}

// jsonEqual fails t unless got and want are the same JSON value; object
// key order does not matter, number literals do.
func jsonEqual(t *testing.T, what, got, want string) {
	t.Helper()
	dec := func(s string) any {
		d := json.NewDecoder(strings.NewReader(s))
		d.UseNumber()
		var v any
		if err := d.Decode(&v); err != nil {
			t.Fatalf("%s: %v in %s", what, err, s)
		}
		return v
	}
	if diff := cmp.Diff(dec(want), dec(got)); diff != "" {
		t.Errorf("%s (-want +got):\n%s\n got %s", what, diff, got)
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
