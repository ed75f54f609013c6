package store_test

import (
	"context"
	"errors"
	"net"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/slackapprove/slackbot/agentrunner"
	"github.com/slackapprove/slackbot/approval"
	"github.com/slackapprove/slackbot/store"
	"github.com/slackapprove/slackbot/store/redistest"
)

// meter counts a client's round trips (commands and pipelines sent) and
// the bytes its connections write and read.
type meter struct {
	trips, written, read atomic.Int64
}

func (m *meter) DialHook(next redis.DialHook) redis.DialHook { return next }

func (m *meter) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		m.trips.Add(1)
		return next(ctx, cmd)
	}
}

func (m *meter) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		m.trips.Add(1)
		return next(ctx, cmds)
	}
}

func (m *meter) reset() { m.trips.Store(0); m.written.Store(0); m.read.Store(0) }

type meteredConn struct {
	net.Conn
	m *meter
}

func (c meteredConn) Read(b []byte) (int, error) {
	n, err := c.Conn.Read(b)
	c.m.read.Add(int64(n))
	return n, err
}

func (c meteredConn) Write(b []byte) (int, error) {
	n, err := c.Conn.Write(b)
	c.m.written.Add(int64(n))
	return n, err
}

// meteredClient returns a client of the shared test Redis whose traffic m
// counts.
func meteredClient(b testing.TB, m *meter) redis.UniversalClient {
	b.Helper()
	opt, err := redis.ParseURL(redistest.URL(b))
	if err != nil {
		b.Fatal(err)
	}
	var d net.Dialer
	opt.Dialer = func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := d.DialContext(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return meteredConn{c, m}, nil
	}
	rdb := redis.NewClient(opt)
	rdb.AddHook(m)
	b.Cleanup(func() { _ = rdb.Close() })
	return rdb
}

func benchStores(b *testing.B) (a, bb *store.Store, ma, mb *meter, prefix string) {
	b.Helper()
	_, prefix = redistest.Client(b)
	ma, mb = &meter{}, &meter{}
	opts := store.Options{Prefix: prefix}
	return store.New(meteredClient(b, ma), opts), store.New(meteredClient(b, mb), opts), ma, mb, prefix
}

// benchHistory is the history of a run that waits on the approval of
// call c1, as requests("c1") asks for it.
var benchHistory = []agentrunner.Message{
	{Kind: agentrunner.KindRequest, Parts: []agentrunner.Part{agentrunner.UserPrompt("delete the temp file")}},
	{Kind: agentrunner.KindResponse, Parts: []agentrunner.Part{agentrunner.ToolCall("delete_file", []byte(`{"path":"c1.txt"}`), "c1")}},
}

// benchTokens returns s's Tokens, without sweeps, running until the
// benchmark ends.
func benchTokens(b *testing.B, s *store.Store) *store.Tokens {
	b.Helper()
	ev := store.NewTokens(s, store.TokensOptions{SweepEvery: -1})
	runTokens(b, ev)
	return ev
}

// createTokens creates n tokens, each with the one pending call c1.
func createTokens(b *testing.B, s *store.Store, n int) []string {
	b.Helper()
	tokens := make([]string, n)
	for i := range tokens {
		a := &approval.Request{Token: agentrunner.NewToken(), Requests: requests("c1")}
		if err := s.Create(b.Context(), a); err != nil {
			b.Fatal(err)
		}
		tokens[i] = a.Token
	}
	return tokens
}

// parkWaiter starts a Wait on token in ev and returns its result channel
// once the waiter is parked. It spins rather than sleeps, so as not to add
// a sleep to what a benchmark measures.
func parkWaiter(ctx context.Context, ev *store.Tokens, token string) <-chan waitResult {
	waited := waitAsync(ctx, ev, token)
	for ev.Waiting() == 0 {
		runtime.Gosched()
	}
	return waited
}

func memoryUsage(b *testing.B, rdb redis.UniversalClient, key string) int64 {
	b.Helper()
	n, err := rdb.MemoryUsage(context.Background(), key, 0).Result()
	if err != nil {
		b.Fatalf("memory usage %s: %v", key, err)
	}
	return n
}

// BenchmarkLifecycle is one approval with one call, as the bot and a
// waiting run use the store: Open, Create, SaveRun, SetMessage and Wait in
// the run's process A; the click's Decide in process B; DeleteRun in A.
// It reports round trips and bytes on the wire per lifecycle for each
// process, and the Redis memory of the record after resolution.
func BenchmarkLifecycle(b *testing.B) {
	sA, sB, mA, mB, prefix := benchStores(b)
	ctx := context.Background()
	ev := benchTokens(b, sA)
	one := func() string {
		token := agentrunner.NewToken()
		runID := "run-" + token[:8]
		a := &approval.Request{Token: token, RunID: runID,
			Origin: approval.Origin{Team: "T0", Channel: "C0SUPPORT", ThreadTS: "1700000000.000100", User: "U0ALICE"}, Requests: requests("c1"),
			Calls: []approval.Call{{ID: "c1", Route: "files"}}}
		if err := sA.Create(ctx, a); err != nil {
			b.Fatal(err)
		}
		if err := ev.Watch(ctx, token); err != nil {
			b.Fatal(err)
		}
		if err := sA.SaveRun(ctx, store.RunState{RunID: runID, Token: token, Messages: benchHistory, Pending: a.Requests, ExpiresAt: a.ExpiresAt}); err != nil {
			b.Fatal(err)
		}
		if err := sA.SetMessage(ctx, token, "c1", approval.MessageRef{Channel: "C0APPROVALS", ID: "1700000001.000200"}); err != nil {
			b.Fatal(err)
		}
		waited := parkWaiter(ctx, ev, token)
		if _, err := sB.Decide(ctx, token, approve("c1", "U0BOB")); err != nil {
			b.Fatal(err)
		}
		if r := <-waited; r.err != nil {
			b.Fatal(r.err)
		}
		if err := sA.DeleteRun(ctx, runID); err != nil {
			b.Fatal(err)
		}
		return token
	}
	token := one() // loads the scripts
	mA.reset()
	mB.reset()
	b.ResetTimer()
	for b.Loop() {
		token = one()
	}
	b.StopTimer()
	n := float64(b.N)
	b.ReportMetric(float64(mA.trips.Load())/n, "trips-A/op")
	b.ReportMetric(float64(mB.trips.Load())/n, "trips-B/op")
	b.ReportMetric(float64(mA.written.Load()+mA.read.Load())/n, "wire-B-A/op")
	b.ReportMetric(float64(mB.written.Load()+mB.read.Load())/n, "wire-B-B/op")
	b.ReportMetric(float64(memoryUsage(b, sA.Client(), prefix+"a:"+token)), "record-B")
}

// BenchmarkRecordMemory reports the Redis memory of a pending record, a
// saved run and an audit entry.
func BenchmarkRecordMemory(b *testing.B) {
	s, _, _, _, prefix := benchStores(b)
	ctx := context.Background()
	var token string
	for b.Loop() {
		a := &approval.Request{Token: agentrunner.NewToken(), RunID: "run-1",
			Origin: approval.Origin{Team: "T0", Channel: "C0SUPPORT", ThreadTS: "1700000000.000100", User: "U0ALICE"}, Requests: requests("c1"),
			Calls: []approval.Call{{ID: "c1", Route: "files", Message: approval.MessageRef{Channel: "C0APPROVALS", ID: "1700000001.000200"}}}}
		if err := s.Create(ctx, a); err != nil {
			b.Fatal(err)
		}
		token = a.Token
	}
	b.StopTimer()
	rdb := s.Client()
	rs := store.RunState{RunID: "run-1", Token: token, Pending: requests("c1"), Origin: []byte(`{"channel":"C0SUPPORT","thread_ts":"1700000000.000100","user":"U0ALICE"}`),
		Messages: benchHistory}
	if err := s.SaveRun(ctx, rs); err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(memoryUsage(b, rdb, prefix+"a:"+token)), "pending-record-B")
	b.ReportMetric(float64(memoryUsage(b, rdb, prefix+"run:run-1")), "run-state-B")
	auditLen := rdb.XLen(ctx, prefix+"audit").Val()
	b.ReportMetric(float64(memoryUsage(b, rdb, prefix+"audit"))/float64(auditLen), "audit-B/entry")
}

// BenchmarkDecide measures decisions per second: each decision resolves a
// token of its own, from 32 goroutines on one client.
func BenchmarkDecide(b *testing.B) {
	s, _, _, _, _ := benchStores(b)
	ctx := context.Background()
	// Tokens are created before the timer starts.
	n := b.N
	tokens := createTokens(b, s, n)
	var next atomic.Int64
	b.SetParallelism(16) // 16 × GOMAXPROCS goroutines
	b.ResetTimer()
	start := time.Now()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			i := next.Add(1) - 1
			if _, err := s.Decide(ctx, tokens[i%int64(n)], approve("c1", "UA")); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "decisions/s")
}

// BenchmarkWake measures how long after a Decide in process B the run
// waiting in process A wakes with the answer.
func BenchmarkWake(b *testing.B) {
	sA, sB, _, _, _ := benchStores(b)
	ctx := context.Background()
	ev := benchTokens(b, sA)
	var lat []time.Duration
	for b.Loop() {
		b.StopTimer()
		token := createTokens(b, sA, 1)[0]
		waited := parkWaiter(ctx, ev, token)
		b.StartTimer()
		t0 := time.Now()
		if _, err := sB.Decide(ctx, token, approve("c1", "UA")); err != nil {
			b.Fatal(err)
		}
		if r := <-waited; r.err != nil {
			b.Fatal(r.err)
		}
		lat = append(lat, time.Since(t0))
	}
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs")
}

// BenchmarkWaiters parks 10,000 waiters in one process and reports the
// connections they use and the Go heap per waiter.
func BenchmarkWaiters(b *testing.B) {
	const n = 10_000
	s, _, _, _, _ := benchStores(b)
	ctx := context.Background()
	ev := benchTokens(b, s)
	tokens := createTokens(b, s, n)
	for b.Loop() {
		runtime.GC()
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		wctx, stop := context.WithCancel(ctx)
		var wg sync.WaitGroup
		for _, tok := range tokens {
			wg.Go(func() { _, _ = ev.WaitEnded(wctx, tok) })
		}
		for ev.Waiting() < n {
			time.Sleep(time.Millisecond)
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		stats := s.Client().PoolStats()
		b.ReportMetric(float64(stats.PubSubStats.Active), "pubsub-conns")
		b.ReportMetric(float64(n)/float64(stats.PubSubStats.Active), "waiters/conn")
		b.ReportMetric(float64(stats.TotalConns), "cmd-conns")
		b.ReportMetric(float64(after.HeapInuse-before.HeapInuse)/n, "heap-B/waiter")
		b.ReportMetric(float64(after.StackInuse-before.StackInuse)/n, "stack-B/waiter")
		stop()
		wg.Wait()
	}
}

// BenchmarkOwnership shows what the HTTP API's ownership check costs: the
// owner of a 900 KB record, an unknown token, and (what the check did
// before) loading the whole record.
func BenchmarkOwnership(b *testing.B) {
	_, prefix := redistest.Client(b)
	m := &meter{}
	s := store.New(meteredClient(b, m), store.Options{Prefix: prefix})
	token := bigAPIApproval(b, s)
	for _, bc := range []struct {
		name string
		f    func() error
	}{
		{"owner_of_900KB_record", func() error { _, err := s.Owner(b.Context(), token); return err }},
		{"owner_of_unknown_token", func() error { _, err := s.Owner(b.Context(), agentrunner.NewToken()); return err }},
		{"get_900KB_record", func() error { _, err := s.Get(b.Context(), token); return err }},
	} {
		b.Run(bc.name, func(b *testing.B) {
			m.reset()
			for b.Loop() {
				if err := bc.f(); err != nil && !errors.Is(err, approval.ErrNotFound) {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(m.read.Load())/float64(b.N), "read-B/op")
		})
	}
}
