package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/slack-go/slack"

	"github.com/slackapprove/slackbot/agentrunner"
	"github.com/slackapprove/slackbot/approval"
	"github.com/slackapprove/slackbot/bot"
	"github.com/slackapprove/slackbot/routing"
	"github.com/slackapprove/slackbot/store"
)

// heapResult is what the heap child measured for n waiting runs.
type heapResult struct {
	Runs int `json:"runs"`
	// HeapPerRun and StackPerRun are the growth of the live heap (after a
	// GC) and of goroutine stacks, per waiting run.
	HeapPerRun  float64 `json:"heap_per_run"`
	StackPerRun float64 `json:"stack_per_run"`
	// FloorHeap and FloorStack are the same for a bare goroutine blocked
	// on a channel: the least any goroutine-per-run design can cost.
	FloorHeap  float64 `json:"floor_heap"`
	FloorStack float64 `json:"floor_stack"`
	// Seconds is how long starting and parking the runs took.
	Seconds float64 `json:"seconds"`
}

// heapRoutes sends every call to one channel.
const heapRoutes = `
routes:
  - name: bench
    channel: C0HEAP
    approvers: {users: [U0ALICE, U0BOB]}
`

// heapWarmup runs are parked before the first measurement, so pools,
// caches and connections that fill on first use are not counted per run.
const heapWarmup = 256

// runHeapChild is the heap measurement, run as a child process (clickbench
// heap-child) so the fake Slack, the load generator and the parent's
// bookkeeping stay out of the heap it measures. It parks -n runs the way
// slackbot does — agentrunner.Runner with the Slack ask (bot.Bot.Ask on the
// store (package store is its approval.Store and RunSaver), saving each run's state and posting
// its card to the fake Slack at -slack) and store.Tokens on the Redis at
// -redis — then prints a heapResult as JSON.
func runHeapChild(args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("heap-child", flag.ContinueOnError)
	n := fs.Int("n", 10000, "waiting runs to park")
	redisURL := fs.String("redis", "", "Redis URL")
	slackURL := fs.String("slack", "", "fake Slack API URL")
	token := fs.String("token", "", "bot token")
	if err := fs.Parse(args); err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	opt, err := redis.ParseURL(*redisURL)
	if err != nil {
		return err
	}
	opt.PoolSize = 64
	rdb := redis.NewClient(opt)
	defer rdb.Close()
	st := store.New(rdb, store.Options{Prefix: "bench-heap:" + agentrunner.NewToken()[:8] + ":"})
	ev := store.NewTokens(st, store.TokensOptions{Owner: "heap-child", SweepEvery: time.Minute})
	go func() { _ = ev.Run(ctx) }()
	select {
	case <-ev.Ready():
	case <-time.After(10 * time.Second):
		return errors.New("events subscriber not ready")
	}
	ask, parked, sem, err := heapAsk(st, ev, *slackURL, *token, *n)
	if err != nil {
		return err
	}
	tool := agentrunner.NewTool(benchTool, "Delete a file.",
		func(context.Context, *agentrunner.ToolContext, struct {
			Path string `json:"path"`
		}) (any, error) {
			return "deleted", nil
		}, agentrunner.RequiresApproval())
	runner, err := agentrunner.NewRunner(agentrunner.TestModel{CallTools: []string{benchTool}},
		[]*agentrunner.Tool{tool}, agentrunner.WithHandlers(ask))
	if err != nil {
		return err
	}
	start := func(count int) {
		for range count {
			sem <- struct{}{}
			go func() {
				deps := &bot.RunDeps{Origin: approval.Origin{Team: teamID, Channel: general, User: carol}}
				_, _ = runner.Run(ctx, agentrunner.RunInput{Prompt: "delete it", Deps: deps})
			}()
		}
		for range count {
			<-parked
		}
		// A run registers as a waiter just after its ask returns.
		time.Sleep(500 * time.Millisecond)
	}
	start(heapWarmup)

	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	t0 := time.Now()
	start(*n)
	secs := time.Since(t0).Seconds()
	runtime.GC()
	runtime.ReadMemStats(&after)
	res := heapResult{
		Runs:        *n,
		HeapPerRun:  float64(int64(after.HeapAlloc)-int64(before.HeapAlloc)) / float64(*n),
		StackPerRun: float64(int64(after.StackInuse)-int64(before.StackInuse)) / float64(*n),
		Seconds:     secs,
	}

	res.FloorHeap, res.FloorStack = floorPerGoroutine(*n)
	return json.NewEncoder(stdout).Encode(res)
}

// floorPerGoroutine is the floor a waiting run is compared with: the heap
// and stack of as many bare goroutines, each blocked on a channel.
func floorPerGoroutine(n int) (heap, stack float64) {
	var before, after runtime.MemStats
	block := make(chan struct{})
	defer close(block)
	runtime.GC()
	runtime.ReadMemStats(&before)
	for range n {
		go func() { <-block }()
	}
	for runtime.NumGoroutine() < n {
		time.Sleep(time.Millisecond)
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	return float64(int64(after.HeapAlloc)-int64(before.HeapAlloc)) / float64(n),
		float64(int64(after.StackInuse)-int64(before.StackInuse)) / float64(n)
}

// heapAsk is the ask of the parked runs: slackbot's, through the Service
// and bot's Cards to the fake Slack, admitting at most 64 runs between
// start and parked at once (each holds a Redis and an HTTP connection
// while it asks); parked is told of each run parked.
func heapAsk(st *store.Store, ev *store.Tokens, slackURL, token string, n int) (ask *agentrunner.AskHandler, parked, sem chan struct{}, err error) {
	routes, err := routing.ParseRoutes([]byte(heapRoutes), "heap-routes.yaml")
	if err != nil {
		return nil, nil, nil, err
	}
	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64, MaxConnsPerHost: 64}}
	api := slack.New(token, slack.OptionAPIURL(slackURL), slack.OptionHTTPClient(hc))
	svc := approval.New(approval.Config{
		Store: st, Poster: bot.NewCards(bot.CardsConfig{Slack: api, Routes: routes}),
		Directory: &bot.Usergroups{Slack: api}, Routes: routes,
	})
	askRun := svc.Ask(st)
	sem = make(chan struct{}, 64)
	parked = make(chan struct{}, n+heapWarmup)
	ask = &agentrunner.AskHandler{
		Tokens: ev, Deadline: svc.Deadline,
		Ask: func(ctx context.Context, rc *agentrunner.RunContext, req agentrunner.DeferredToolRequests, token string) (*agentrunner.DeferredToolResults, error) {
			res, err := askRun(ctx, rc, req, token)
			<-sem
			parked <- struct{}{}
			return res, err
		},
	}
	return ask, parked, sem, nil
}

// measureHeap runs the heap child for n runs against a fake Slack of its
// own (served by this process) and the bench's Redis.
func (b *bench) measureHeap(ctx context.Context, n int) (heapResult, error) {
	fake, url, closeFake, err := serveFake()
	if err != nil {
		return heapResult{}, err
	}
	defer closeFake()
	self, err := os.Executable()
	if err != nil {
		return heapResult{}, err
	}
	cmd := exec.CommandContext(ctx, self, "heap-child", "-n", strconv.Itoa(n),
		"-redis", b.redis.url(2), "-slack", url, "-token", fake.Token())
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return heapResult{}, fmt.Errorf("heap child (%d runs): %w\n%s", n, err, stderr.String())
	}
	var res heapResult
	if err := json.Unmarshal(out, &res); err != nil {
		return heapResult{}, fmt.Errorf("heap child output %q: %w", out, err)
	}
	// The parked runs' records are not needed any more.
	rdb := redis.NewClient(&redis.Options{Addr: b.redis.addr, DB: 2})
	defer rdb.Close()
	if err := rdb.FlushDB(ctx).Err(); err != nil {
		return res, fmt.Errorf("flush the heap measurement's records: %w", err)
	}
	return res, nil
}

// listenLoopback listens on a free loopback port.
func listenLoopback() (net.Listener, string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, "", err
	}
	return ln, "http://" + ln.Addr().String(), nil
}
