// Command clickbench measures slackbot end to end, on loopback only: it
// starts a redis-server, a fake Slack Web API (internal/slackfake) and the real
// slackbot binary, drives signed clicks and app_mention events at it, and
// prints a markdown table in which every figure stands beside a baseline
// measured in the same run with the same load generator: a bare handler
// that only verifies the Slack signature (bot.VerifySlack) and does one
// Redis GET, run as a process of its own.
//
//	go run ./bench/clickbench            # the whole table, in under 5 minutes
//	go run ./bench/clickbench -h         # phases, loads and durations
//	go run ./bench/clickbench -pprof DIR # also save slackbot's CPU profile at saturation
//
// It measures clicks per second and acknowledgement latency at fixed
// offered loads (open loop: requests are sent on the clock and latency
// counts from when each was due) and at saturation (closed loop); click →
// waiting run resumed; Redis round trips and bytes per approval lifecycle
// (through a counting proxy); what a waiting run costs where it waits
// (goroutines and Go heap in every slackbot process, Redis memory) for
// runs started by mentions and for 100,000 pending approvals created
// through the ask path, beside an older commit's build with -before; and
// posting cards under Slack's rate limit.
// It needs redis-server on PATH and the Go toolchain (it builds
// cmd/slackbot).
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/slackapprove/slackbot/bench/internal/benchredis"

	"github.com/redis/go-redis/v9"
	"github.com/slack-go/slack"

	"github.com/slackapprove/slackbot/internal/slackfake"
	"github.com/slackapprove/slackbot/store"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := dispatch(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "clickbench:", err)
		os.Exit(1)
	}
}

// dispatch runs the bench, or one of the child processes it starts of
// itself: the baseline server and the heap measurement.
func dispatch(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) > 0 {
		switch args[0] {
		case "baseline-serve":
			return serveBaseline(stdout)
		case "minimal-serve":
			return serveMinimal(stdout)
		case "heap-child":
			return runHeapChild(args[1:], stdout)
		}
	}
	return run(ctx, args, stdout, stderr)
}

// config is what the flags set.
type config struct {
	duration     time.Duration
	rates        []float64
	satConns     int
	satDuration  time.Duration
	resumeRuns   int
	resumeRate   float64
	lifecycles   int
	lcClicks     int
	heap         []int
	heapMentions int
	heapRounds   int
	before       string
	rlChannels   int
	rlPerChannel int
	pprof        string
	bin          string
	phases       map[string]bool
}

func parseFlags(args []string, stderr io.Writer) (config, error) {
	fs := flag.NewFlagSet("clickbench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var c config
	rates := fs.String("rates", "100,1000,5000", "offered click loads, per second (open loop)")
	heap := fs.String("heap", "100000", "pending approvals to create through the ask path for the heap measurement (e.g. 100000,1000000)")
	phases := fs.String("phases", "clicks,resume,lifecycle,heap,ratelimit", "phases to run")
	fs.DurationVar(&c.duration, "duration", 4*time.Second, "length of each offered-load phase")
	fs.IntVar(&c.satConns, "conns", 64, "concurrent connections at saturation (closed loop)")
	fs.DurationVar(&c.satDuration, "sat-duration", 4*time.Second, "length of the saturation phase")
	fs.IntVar(&c.resumeRuns, "resume-runs", 200, "waiting runs clicked in the resume phase")
	fs.Float64Var(&c.resumeRate, "resume-rate", 50, "clicks per second in the resume phase")
	fs.IntVar(&c.lifecycles, "lifecycles", 100, "approval lifecycles counted through the Redis proxy")
	fs.IntVar(&c.lcClicks, "lifecycle-clicks", 500, "clicks counted through the Redis proxy")
	fs.IntVar(&c.rlChannels, "rl-channels", 10, "channels in the rate-limit phase")
	fs.IntVar(&c.rlPerChannel, "rl-per-channel", 10, "cards per channel in the rate-limit phase")
	fs.StringVar(&c.pprof, "pprof", "", "directory to save slackbot's CPU profile of the saturation phase in")
	fs.IntVar(&c.heapMentions, "heap-mentions", 500, "runs started by mentions in the heap phase, per round")
	fs.IntVar(&c.heapRounds, "heap-rounds", 1, "rounds of the heap phase's per-build measurements, alternating the builds")
	fs.StringVar(&c.before, "before", "", "a commit to build and measure beside this tree in the heap phase (hibernation before/after)")
	fs.StringVar(&c.bin, "bin", "", "a slackbot binary to measure instead of building cmd/slackbot (e.g. an older commit's, to compare)")
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	for _, s := range strings.Split(*rates, ",") {
		r, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
		if err != nil || r <= 0 {
			return c, fmt.Errorf("-rates: bad rate %q", s)
		}
		c.rates = append(c.rates, r)
	}
	for _, s := range strings.Split(*heap, ",") {
		if s = strings.TrimSpace(s); s == "" {
			continue
		}
		n, err := strconv.Atoi(s)
		if err != nil || n <= 0 {
			return c, fmt.Errorf("-heap: bad count %q", s)
		}
		c.heap = append(c.heap, n)
	}
	c.phases = map[string]bool{}
	for _, p := range strings.Split(*phases, ",") {
		c.phases[strings.TrimSpace(p)] = true
	}
	return c, nil
}

// bench is what the phases share.
type bench struct {
	cfg      config
	dir      string
	sandbox  string
	redis    *benchredis.Server
	fake     *slackfake.Server
	fakeURL  string
	api      *slack.Client
	slots    slots
	client   *http.Client
	secret   string
	mentions *mentioner
	bin      string
	env      []string
	progress io.Writer
}

const benchSecret = "clickbench-signing-secret-0123456789"

func (b *bench) logf(format string, args ...any) {
	fmt.Fprintf(b.progress, "clickbench: "+format+"\n", args...)
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	cfg, err := parseFlags(args, stderr)
	if err != nil {
		return err
	}
	began := time.Now()
	dir, err := os.MkdirTemp("", "clickbench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	b := &bench{cfg: cfg, dir: dir, client: newClient(), secret: benchSecret, progress: stderr}

	if b.redis, err = benchredis.Start(dir); err != nil {
		return err
	}
	defer b.redis.Stop()
	fake, fakeURL, closeFake, err := serveFake()
	if err != nil {
		return err
	}
	defer closeFake()
	b.fake, b.fakeURL = fake, fakeURL
	b.api = slack.New(fake.Token(), slack.OptionAPIURL(fakeURL), slack.OptionHTTPClient(b.client))
	b.mentions = &mentioner{client: b.client, fake: fake, secret: b.secret}
	if b.slots, err = postSlots(ctx, b.api); err != nil {
		return err
	}

	if cfg.bin != "" {
		b.bin = cfg.bin
	} else {
		b.logf("building cmd/slackbot")
		if b.bin, err = buildSlackbot(dir, cfg.pprof != ""); err != nil {
			return err
		}
	}
	tmp := filepath.Join(dir, "tmp")
	b.sandbox = filepath.Join(tmp, "slackbot-demo-sandbox")
	if err := os.MkdirAll(b.sandbox, 0o755); err != nil {
		return err
	}
	routes := filepath.Join(dir, "routes.yaml")
	routesYAML := "default_timeout: 1h\nroutes:\n" + rateLimitRoutes(cfg.rlChannels) +
		"  - name: bench\n    channel: " + cardsChan + "\n    approvers: {users: [U0ALICE, U0BOB]}\n"
	if err := os.WriteFile(routes, []byte(routesYAML), 0o600); err != nil {
		return err
	}
	b.env = append(os.Environ(),
		"SLACK_BOT_TOKEN="+fake.Token(), "SLACK_SIGNING_SECRET="+b.secret, "SLACK_API_URL="+fakeURL,
		"ROUTES_FILE="+routes, "ADDR=127.0.0.1:0", "MODEL=demo", "TOOLS=demo",
		"LOG_LEVEL=warn", "LOG_FORMAT=json", "TMPDIR="+tmp,
	)

	t := &table{}
	if cfg.phases["clicks"] || cfg.phases["resume"] || cfg.phases["ratelimit"] {
		if err := b.mainPhases(ctx, t); err != nil {
			return err
		}
	}
	if cfg.phases["lifecycle"] {
		if err := b.lifecyclePhase(ctx, t); err != nil {
			return err
		}
	}
	if cfg.phases["heap"] {
		if err := b.heapPhase(ctx, t); err != nil {
			return err
		}
	}
	t.print(stdout)
	fmt.Fprintf(stdout, "\n%s\n", machine(b.redis))
	fmt.Fprintf(stdout, "Command: `%s` (%.0f s in all)\n", strings.Join(append([]string{"go run ./bench/clickbench"}, args...), " "), time.Since(began).Seconds())
	for _, line := range t.notes {
		fmt.Fprintln(stdout, line)
	}
	return nil
}

// serveFake serves a fake Slack workspace (the demo people and channels)
// on a loopback port and returns its API URL.
func serveFake() (*slackfake.Server, string, func(), error) {
	fake := slackfake.New(slackfake.WithDemoWorkspace())
	ln, base, err := listenLoopback()
	if err != nil {
		return nil, "", nil, err
	}
	srv := &http.Server{Handler: fake, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	return fake, base + "/api/", func() { _ = srv.Close() }, nil
}

// startSlackbot starts the binary on the Redis at redisURL.
func (b *bench) startSlackbot(name, redisURL string, extra ...string) (*process, error) {
	env := append(append([]string{}, b.env...), "REDIS_URL="+redisURL)
	env = append(env, extra...)
	p, err := startProcess(name, b.bin, []string{"serve"}, env)
	if err != nil {
		return nil, err
	}
	if err := waitHTTP(context.Background(), b.client, p.base+"/readyz", 20*time.Second); err != nil {
		p.stop()
		return nil, err
	}
	return p, nil
}

// startBaseline starts the baseline server on the Redis at redisURL.
func (b *bench) startBaseline(name, redisURL string) (*process, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	opt, err := redis.ParseURL(redisURL)
	if err != nil {
		return nil, err
	}
	rdb := redis.NewClient(opt)
	defer rdb.Close()
	if err := rdb.Set(context.Background(), baselineKey, strings.Repeat("x", 64), 0).Err(); err != nil {
		return nil, err
	}
	env := append(append([]string{}, b.env...), "BENCH_REDIS_URL="+redisURL, "BENCH_SECRET="+b.secret)
	return startProcess(name, self, []string{"baseline-serve"}, env)
}

// storeOn returns a store on database db of the bench's Redis, with the
// default prefix slackbot uses.
func (b *bench) storeOn(db int) (*store.Store, func()) {
	rdb := redis.NewClient(&redis.Options{Addr: b.redis.Addr, DB: db, PoolSize: 32})
	return store.New(rdb, store.Options{}), func() { _ = rdb.Close() }
}
