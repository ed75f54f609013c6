package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/slackapprove/slackbot/approval"
	"github.com/slackapprove/slackbot/store"
	"github.com/slackapprove/slackbot/store/redistest"
)

// TestDecideNotAfter: a decision that reaches Redis after its NotAfter
// records nothing, returns ErrTooLate and is audited as refused; one in
// time is recorded.
func TestDecideNotAfter(t *testing.T) {
	e := newEnv(t)
	s := e.store()
	a := e.create(t, s, requests("c1"), 1)

	late := approve("c1", "U0ALICE")
	late.NotAfter = time.Now().Add(-time.Millisecond)
	_, err := s.Decide(t.Context(), a.Token, late)
	wantErr(t, "decide after NotAfter", err, approval.ErrTooLate)
	got, err := s.Get(t.Context(), a.Token)
	if err != nil {
		t.Fatal(err)
	}
	if c := got.Call("c1"); c.Status != approval.CallPending {
		t.Fatalf("call after a late decision: %s, want pending", c.Status)
	}
	events, err := s.ReadAudit(t.Context(), "", 0)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(events); n == 0 || events[n-1].Type != store.AuditRefused || events[n-1].Reason != "too late" {
		t.Errorf("last audit event: got %+v, want a refusal, too late", events[len(events)-1])
	}

	inTime := approve("c1", "U0ALICE")
	inTime.NotAfter = time.Now().Add(time.Minute)
	out, err := s.Decide(t.Context(), a.Token, inTime)
	if err != nil || !out.Changed || out.Call.Status != approval.CallApproved {
		t.Fatalf("decide in time: got %+v, %v; want approved", out, err)
	}
}

// TestDecideThatArrivesLateDecidesNothing: Redis stops answering (a proxy
// holds the bytes), the caller gives up once the decision's NotAfter has
// passed, and the decision reaches Redis afterwards: it must record
// nothing, so that the caller's "nothing changed" is true.
func TestDecideThatArrivesLateDecidesNothing(t *testing.T) {
	srv := redistest.StartServer(t)
	proxy := redistest.NewProxy(t, srv.Addr())
	rdb := redis.NewClient(&redis.Options{Addr: proxy.Addr(), MaxRetries: -1, ContextTimeoutEnabled: true})
	t.Cleanup(func() { _ = rdb.Close() })
	c := newClock()
	s := store.New(rdb, store.Options{Prefix: "late:", Now: c.Now})
	e := &env{rdb: rdb, prefix: "late:", clock: c}

	// The decide script is in Redis's cache, as it is in a running
	// deployment: the late command is the script itself.
	warm := e.create(t, s, requests("c1"), 1)
	if _, err := s.Decide(t.Context(), warm.Token, approve("c1", "U0ALICE")); err != nil {
		t.Fatal(err)
	}

	a := e.create(t, s, requests("c1"), 1)
	proxy.Freeze()
	d := approve("c1", "U0ALICE")
	d.NotAfter = time.Now().Add(200 * time.Millisecond)
	decided := make(chan error, 1)
	go func() {
		_, err := s.Decide(t.Context(), a.Token, d)
		decided <- err
	}()
	// Waited for, not timed: a context deadline would keep a decision
	// that a loaded host delays past it from being sent at all.
	select {
	case <-proxy.Held():
	case <-time.After(10 * time.Second):
		t.Fatal("the decision never left the caller")
	}
	time.Sleep(time.Until(d.NotAfter)) // the instant itself, by Redis's clock too
	_ = rdb.Close()                    // the caller gives up
	if err := <-decided; err == nil {
		t.Fatal("decide through a frozen Redis: got no error")
	}
	proxy.Thaw()
	select {
	case <-proxy.Late():
	case <-time.After(10 * time.Second):
		t.Fatal("the held decision never reached Redis")
	}

	direct := store.New(srv.Client(t), store.Options{Prefix: "late:", Now: c.Now})
	got, err := direct.Get(t.Context(), a.Token)
	if err != nil {
		t.Fatal(err)
	}
	if call := got.Call("c1"); call.Status != approval.CallPending {
		t.Errorf("call after a decision that arrived late: %s, want pending (nothing decided)", call.Status)
	}
}

// TestOpenHonoursContextDeadlines: a command on the client Open returns
// gives up at its context's deadline even when Redis never answers and the
// socket timeouts are far longer (here a 60 s read timeout).
func TestOpenHonoursContextDeadlines(t *testing.T) {
	srv := redistest.StartServer(t)
	proxy := redistest.NewProxy(t, srv.Addr())
	rdb, closeRedis, err := store.Open(t.Context(), proxy.URL()+"?read_timeout=60s&write_timeout=60s&max_retries=-1")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = closeRedis() })
	proxy.Freeze()
	done := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
		defer cancel()
		done <- rdb.Get(ctx, "k").Err()
	}()
	select {
	case err := <-done:
		if err == nil || err == redis.Nil {
			t.Errorf("GET through a frozen Redis: got %v, want a timeout", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("GET through a frozen Redis did not give up at its deadline")
	}
	proxy.Thaw()
}
