package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/slackapprove/slackbot/agentrunner"
	"github.com/slackapprove/slackbot/approval"
	"github.com/slackapprove/slackbot/routing"
	"github.com/slackapprove/slackbot/runs"
	"github.com/slackapprove/slackbot/store"
)

// The heap phase measures what a waiting run costs where it waits. A
// Slack-started run hibernates (issue 13): once its card is posted and
// its state saved it returns, so a waiting run should cost no goroutine
// and no heap in any slackbot process, only its keys in Redis.
//
// It creates N pending approvals of Slack-started runs through the code
// slackbot runs for them (agentrunner.Runner with the suspending
// AskHandler, approval.Service's Ask, package store), in a child process
// (clickbench heap-child), many at once, while two slackbot processes
// (the real serve binary) run on the same Redis database, and reads from
// each of them, before and after, goroutines and the live heap after a
// GC (its pprof endpoints), and Redis' used_memory. The cards go to a
// poster that only numbers them: posting 1,000,000 messages to the fake
// Slack would measure the fake.

// heapChildResult is what the heap child reports.
type heapChildResult struct {
	Runs    int     `json:"runs"`
	Seconds float64 `json:"seconds"`
	// Suspended counts the runs that returned suspended; every run must.
	Suspended int `json:"suspended"`
	// HeapPerRun and GoroutinesPerRun are the child's own growth once
	// every run returned: what the ask path keeps of a suspended run.
	HeapPerRun       float64 `json:"heap_per_run"`
	GoroutinesPerRun float64 `json:"goroutines_per_run"`
}

// heapWorkers is how many runs the heap child asks at once, and
// heapChildWarmup how many it asks before it measures.
const (
	heapWorkers     = 64
	heapChildWarmup = 1024
)

// heapRoutes sends every call to one channel.
const heapRoutes = `
routes:
  - name: bench
    channel: C0HEAP
    approvers: {users: [U0ALICE, U0BOB]}
`

// runHeapChild creates -n pending approvals of Slack-started runs on the
// Redis at -redis, -workers at once, and prints a heapChildResult.
func runHeapChild(args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("heap-child", flag.ContinueOnError)
	n := fs.Int("n", 100000, "pending approvals to create")
	workers := fs.Int("workers", heapWorkers, "runs asked at once")
	redisURL := fs.String("redis", "", "Redis URL")
	if err := fs.Parse(args); err != nil {
		return err
	}
	opt, err := redis.ParseURL(*redisURL)
	if err != nil {
		return err
	}
	opt.PoolSize = *workers
	rdb := redis.NewClient(opt)
	defer rdb.Close()
	// slackbot's own prefix: its processes see these as their own.
	st := store.New(rdb, store.Options{})
	runner, err := heapRunner(st)
	if err != nil {
		return err
	}
	runOne := func(ctx context.Context) bool {
		deps := &runs.Deps{Origin: approval.Origin{Team: teamID, Channel: general, User: carol}}
		res, err := runner.Run(ctx, agentrunner.RunInput{Prompt: "delete it", Deps: deps})
		return err == nil && res.Status == agentrunner.StatusSuspended
	}
	ctx := context.Background()
	// Pools and caches that fill on first use (a Redis connection per
	// worker) are the process's, not a run's.
	var warm sync.WaitGroup
	for range *workers {
		warm.Go(func() {
			for range heapChildWarmup / *workers {
				runOne(ctx)
			}
		})
	}
	warm.Wait()
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	g0 := runtime.NumGoroutine()
	t0 := time.Now()
	var next, suspended atomic.Int64
	var wg sync.WaitGroup
	for range *workers {
		wg.Go(func() {
			for next.Add(1) <= int64(*n) {
				if runOne(ctx) {
					suspended.Add(1)
				}
			}
		})
	}
	wg.Wait()
	res := heapChildResult{Runs: *n, Seconds: time.Since(t0).Seconds(), Suspended: int(suspended.Load())}
	runtime.GC()
	runtime.ReadMemStats(&after)
	res.HeapPerRun = float64(int64(after.HeapAlloc)-int64(before.HeapAlloc)) / float64(*n)
	res.GoroutinesPerRun = float64(runtime.NumGoroutine()-g0) / float64(*n)
	return json.NewEncoder(stdout).Encode(res)
}

// heapRunner is slackbot's runner for Slack-started runs, on st: the
// suspending ask of approval.Service, which records the request, saves
// the run and posts its card.
func heapRunner(st *store.Store) (*agentrunner.Runner, error) {
	routes, err := routing.ParseRoutes([]byte(heapRoutes), "heap-routes.yaml")
	if err != nil {
		return nil, err
	}
	svc := approval.New(approval.Config{Store: st, Poster: &numberedPoster{}, Routes: routes})
	tokens := store.NewTokens(st, store.TokensOptions{Owner: "heap-child", SweepEvery: -1})
	ask := &agentrunner.AskHandler{Asker: svc.Asker(st), Waiter: approval.RunTokens{TokenStore: tokens}, Deadline: svc.Deadline, Suspend: true}
	tool := agentrunner.NewTool(benchTool, "Delete a file.",
		func(context.Context, *agentrunner.ToolContext, struct {
			Path string `json:"path"`
		}) (any, error) {
			return "deleted", nil
		}, agentrunner.RequiresApproval())
	return agentrunner.NewRunner(agentrunner.TestModel{CallTools: []string{benchTool}},
		[]*agentrunner.Tool{tool}, agentrunner.WithHandlers(&approval.Policy{Routes: routes}, ask))
}

// numberedPoster "posts" each card as the next message of its channel.
type numberedPoster struct{ n atomic.Int64 }

func (p *numberedPoster) Post(_ context.Context, _ *approval.Request, c *approval.Call) (approval.MessageRef, error) {
	return approval.MessageRef{Channel: "C0HEAP", ID: fmt.Sprintf("1700000000.%06d", p.n.Add(1))}, nil
}

func (p *numberedPoster) Update(_ context.Context, _ *approval.Request, c *approval.Call) (approval.MessageRef, error) {
	return c.Message, nil
}

// procStats is what one slackbot process holds: goroutines and the live
// heap after a GC, read from its pprof endpoints.
type procStats struct {
	Goroutines int
	HeapAlloc  int64
	StackInuse int64
}

// readProcStats forces a GC in the process serving pprof at addr and
// reads its goroutines and live heap.
func (b *bench) readProcStats(ctx context.Context, addr string) (procStats, error) {
	get := func(path string) (string, error) {
		body, err := httpGet(ctx, b.client, "http://"+addr+path)
		return string(body), err
	}
	heap, err := get("/debug/pprof/heap?gc=1&debug=1")
	if err != nil {
		return procStats{}, err
	}
	g, err := get("/debug/pprof/goroutine?debug=1")
	if err != nil {
		return procStats{}, err
	}
	var s procStats
	if s.HeapAlloc, err = statLine(heap, "# HeapAlloc = "); err != nil {
		return s, err
	}
	if s.StackInuse, err = statLine(heap, "# Stack = "); err != nil {
		return s, err
	}
	n, err := statLine(g, "goroutine profile: total ")
	s.Goroutines = int(n)
	return s, err
}

// statLine parses the number after prefix on its line of text.
func statLine(text, prefix string) (int64, error) {
	i := strings.Index(text, prefix)
	if i < 0 {
		return 0, fmt.Errorf("no %q in the profile", strings.TrimSpace(prefix))
	}
	rest := text[i+len(prefix):]
	if j := strings.IndexAny(rest, " \r\n"); j >= 0 {
		rest = rest[:j]
	}
	return strconv.ParseInt(rest, 10, 64)
}

// usedMemory is Redis' used_memory.
func usedMemory(ctx context.Context, rdb *redis.Client) (int64, error) {
	info, err := rdb.Info(ctx, "memory").Result()
	if err != nil {
		return 0, err
	}
	return statLine(info, "used_memory:")
}

// pendingResult is what the heap phase measured for n pending approvals.
type pendingResult struct {
	child heapChildResult
	// per slackbot process: goroutines and heap per pending approval
	goroutines, heap []float64
	redisPerPending  float64
}

// measurePending creates n pending approvals on database db while the
// slackbot processes serving pprof at addrs run on it.
func (b *bench) measurePending(ctx context.Context, db int, addrs []string, n int) (pendingResult, error) {
	var res pendingResult
	rdb := redis.NewClient(&redis.Options{Addr: b.redis.Addr, DB: db, ReadTimeout: time.Minute})
	defer rdb.Close()
	before := make([]procStats, len(addrs))
	for i, a := range addrs {
		var err error
		if before[i], err = b.readProcStats(ctx, a); err != nil {
			return res, err
		}
	}
	mem0, err := usedMemory(ctx, rdb)
	if err != nil {
		return res, err
	}
	self, err := os.Executable()
	if err != nil {
		return res, err
	}
	cmd := exec.CommandContext(ctx, self, "heap-child", "-n", strconv.Itoa(n), "-redis", b.redis.URL(db))
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return res, fmt.Errorf("heap child (%d runs): %w\n%s", n, err, stderr.String())
	}
	if err := json.Unmarshal(out, &res.child); err != nil {
		return res, fmt.Errorf("heap child output %q: %w", out, err)
	}
	if res.child.Suspended != n {
		return res, fmt.Errorf("heap child: %d of %d runs suspended", res.child.Suspended, n)
	}
	mem1, err := usedMemory(ctx, rdb)
	if err != nil {
		return res, err
	}
	// The child's warm-up runs are pending too.
	res.redisPerPending = float64(mem1-mem0) / float64(n+heapChildWarmup/heapWorkers*heapWorkers)
	time.Sleep(2 * time.Second) // the processes' loops look at the new keys (gauge, sweep)
	for i, a := range addrs {
		after, err := b.readProcStats(ctx, a)
		if err != nil {
			return res, err
		}
		res.goroutines = append(res.goroutines, float64(after.Goroutines-before[i].Goroutines)/float64(n))
		res.heap = append(res.heap, float64(after.HeapAlloc-before[i].HeapAlloc)/float64(n))
	}
	return res, nil
}

// mentionWarmup runs are started by mentions before the measured ones.
const mentionWarmup = 200

// mentionedResult is what m runs started by mentions cost their process
// while they wait.
type mentionedResult struct {
	Runs                          int
	GoroutinesPerRun, Heap, Stack float64
}

// measureMentioned starts m runs by mentions in the slackbot at base
// (pprof at addr), waits for their cards, and reads what the process
// holds for them.
func (b *bench) measureMentioned(ctx context.Context, base, addr string, st *store.Store, m int, tag string) (mentionedResult, error) {
	batch := func(n int, tag string) error {
		texts := make([]string, n)
		for i := range texts {
			texts[i] = fmt.Sprintf("delete the file %s%05d", tag, i)
		}
		skip := len(b.fake.Messages(cardsChan))
		if _, err := b.mentions.mentionAll(ctx, base, general, texts); err != nil {
			return err
		}
		if _, err := waitCards(ctx, b.fake, st, cardsChan, skip, n, 120*time.Second); err != nil {
			return err
		}
		time.Sleep(time.Second) // the last runs return (or park) after their cards
		return nil
	}
	// A first batch opens the connections, fills the pools and caches
	// that later runs reuse: they are the process's, not a run's.
	if err := batch(mentionWarmup, tag+"w"); err != nil {
		return mentionedResult{}, err
	}
	b.saveHeapProfile(ctx, addr, "heap-"+tag+"-before.pb.gz")
	before, err := b.readProcStats(ctx, addr)
	if err != nil {
		return mentionedResult{}, err
	}
	if err := batch(m, tag); err != nil {
		return mentionedResult{}, err
	}
	b.saveHeapProfile(ctx, addr, "heap-"+tag+"-after.pb.gz")
	after, err := b.readProcStats(ctx, addr)
	if err != nil {
		return mentionedResult{}, err
	}
	return mentionedResult{Runs: m,
		GoroutinesPerRun: float64(after.Goroutines-before.Goroutines) / float64(m),
		Heap:             float64(after.HeapAlloc-before.HeapAlloc) / float64(m),
		Stack:            float64(after.StackInuse-before.StackInuse) / float64(m),
	}, nil
}

// saveHeapProfile saves the heap profile (after a GC) of the process
// serving pprof at addr as name in the -pprof directory, if one is set:
// go tool pprof -base before after shows what the waiting runs hold.
func (b *bench) saveHeapProfile(ctx context.Context, addr, name string) {
	if b.cfg.pprof == "" {
		return
	}
	body, err := httpGet(ctx, b.client, "http://"+addr+"/debug/pprof/heap?gc=1")
	if err == nil {
		err = os.MkdirAll(b.cfg.pprof, 0o755)
	}
	if err == nil {
		err = os.WriteFile(filepath.Join(b.cfg.pprof, name), body, 0o644)
	}
	if err != nil {
		b.logf("heap profile %s: %v", name, err)
	}
}

// httpGet returns the body of a GET of url.
func httpGet(ctx context.Context, c *http.Client, url string) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := c.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: status %d", url, resp.StatusCode)
	}
	return body, nil
}

// listenLoopback listens on a free loopback port.
func listenLoopback() (net.Listener, string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, "", err
	}
	return ln, "http://" + ln.Addr().String(), nil
}
