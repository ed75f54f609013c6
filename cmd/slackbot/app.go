package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
	"go.opentelemetry.io/otel/trace"

	"github.com/slackapprove/slackbot/agentrunner"
	"github.com/slackapprove/slackbot/agentrunner/mcptools"
	"github.com/slackapprove/slackbot/approval"
	"github.com/slackapprove/slackbot/bot"
	"github.com/slackapprove/slackbot/httpapi"
	"github.com/slackapprove/slackbot/mcpgateway"
	"github.com/slackapprove/slackbot/receipt"
	"github.com/slackapprove/slackbot/routing"
	"github.com/slackapprove/slackbot/runs"
	"github.com/slackapprove/slackbot/stepup"
	"github.com/slackapprove/slackbot/store"
)

// appDeps is everything the app is built from; run fills it from the
// configuration, tests fill it by hand (custom tools, fake Slack, a test
// Redis).
type appDeps struct {
	Log           *slog.Logger
	Redis         redis.UniversalClient
	StoreOptions  store.Options
	Slack         bot.SlackAPI
	SigningSecret string
	TeamID        string
	EnterpriseID  string // Enterprise Grid organization (auth.test), or ""
	BotUserID     string
	Routes        *routing.Routes
	Model         agentrunner.Model
	Tools         []*agentrunner.Tool
	// ToolSource adds tools that change at run time (MCP servers); nil: none.
	ToolSource agentrunner.ToolSource
	// MCPUpstream is the same MCP servers as the MCP gateway (/mcp) offers
	// them; nil: the gateway offers only approval_prompt.
	MCPUpstream mcpgateway.Upstream
	// UpstreamCalls is the call observer the MCP servers' Toolset was
	// built with (mcptools.WithCallObserver); newApp binds it to the
	// metrics. nil: upstream calls are not counted.
	UpstreamCalls *upstreamCalls
	// Owner names this process in the store's claims; empty: random.
	Owner string
	// SweepEvery is how often expired tokens are swept; 0: the store's default.
	SweepEvery time.Duration
	// Retry for Slack calls; zero value: bot's defaults.
	Retry bot.Retry
	// Extra mounts more handlers (dev: the Slack emulator and fake API).
	Extra map[string]http.Handler
	// APIKeys enables the HTTP API (/v1) for these clients; none: disabled.
	APIKeys []httpapi.Key
	// APIMaxOpen and APIRate are each API key's quota (API_MAX_OPEN,
	// API_RATE); zero: httpapi's defaults.
	APIMaxOpen int
	APIRate    float64
	// AllowPrivateCallbacks lets API callbacks reach loopback and private
	// addresses: dev only.
	AllowPrivateCallbacks bool
	// ReceiptKey signs receipts (RECEIPT_KEY); nil: the key kept in Redis.
	// ReceiptPrevious (RECEIPT_KEY_PREVIOUS) only verifies them, in the
	// JWKS during a rotation. ReceiptIssuer is their iss (PUBLIC_URL).
	ReceiptKey, ReceiptPrevious *receipt.Key
	ReceiptIssuer               string
	// ResumeBlock is how long one read of the resume queue or the job
	// queue blocks; it also bounds how long shutdown waits for their
	// consumers. Default 2s.
	ResumeBlock time.Duration
	// Tracer traces the app (OTEL_*, tracing.go): its HTTP handler, tool
	// calls, resumes and callbacks; nil: tracing off, nothing wrapped.
	// The Slack client's and Redis's instrumentation are the caller's
	// (slackHTTPClient, traceRedis), as it builds those clients.
	Tracer trace.TracerProvider
	// FlushTraces, when set, flushes and stops the tracer provider; the
	// lifecycle's Shutdown calls it last.
	FlushTraces func(context.Context) error
	// PublicURL is where people reach slackbot (PUBLIC_URL; in dev, the
	// dev server): the step-up and passkey pages are served on its host.
	// Empty: they are not served.
	PublicURL string
	// StepUpNote is a line the pages that ask for a passkey show (in dev:
	// how to get one in a test browser); empty: none.
	StepUpNote string
}

// app is slackbot wired together: the store, the Slack side, the agent
// runner, and the background loops (see loops) that lifecycle starts.
type app struct {
	log      *slog.Logger
	store    *store.Store
	tokens   *store.Tokens
	queue    *store.ResumeQueue
	jobs     *store.JobQueue
	svc      *approval.Service
	cards    *bot.Cards
	bot      *bot.Bot
	runs     *runs.Runs
	events   *bot.Events
	runner   *agentrunner.Runner
	metrics  *metrics
	deps     appDeps
	owner    string
	receipts *receiptKeys
	// api and callbacks serve the HTTP API; nil without API keys.
	api       *httpapi.API
	callbacks *httpapi.Callbacks
	// gateway serves the MCP gateway (/mcp); nil without API keys.
	gateway *mcpgateway.Handler
	// stepup serves /step-up/ and /passkeys/; nil without a public URL.
	stepup *stepup.Handler

	// Runs are stopped (runs.Stop) only when shutdown's budget is spent;
	// waits for a decision end earlier, when handOff is closed, so a
	// waiting run is handed to another replica while a working one (a tool
	// or model call in flight) is allowed to finish.
	handOff     chan struct{}
	handOffOnce sync.Once

	// slackOK is the outcome of the last auth.test (see watchSlack).
	slackOK slackHealth
	// tracer starts slackbot's own spans; nil when tracing is off.
	tracer trace.Tracer
}

func newApp(ctx context.Context, d appDeps) (*app, error) {
	if d.Log == nil {
		d.Log = slog.New(slog.DiscardHandler)
	}
	rk, err := loadReceiptKeys(ctx, d.Redis, d.StoreOptions.Prefix, d.ReceiptKey, d.ReceiptPrevious, d.ReceiptIssuer, d.Log)
	if err != nil {
		return nil, err
	}
	owner := d.Owner
	if owner == "" {
		owner = agentrunner.NewToken()[:12]
	}
	if d.StoreOptions.Owner == "" {
		// Card leases die with this process's heartbeat (Tokens below).
		d.StoreOptions.Owner = owner
	}
	a := &app{log: d.Log, receipts: rk, handOff: make(chan struct{})}
	mc := metricsConfig{Routes: d.Routes, Pending: a.pendingByRoute}
	if s, ok := d.MCPUpstream.(interface {
		Status() []mcptools.ServerStatus
	}); ok {
		mc.MCPStatus = s.Status
	}
	a.metrics = newMetrics(mc)
	if d.UpstreamCalls != nil {
		d.UpstreamCalls.bind(a.metrics.UpstreamCall)
	}
	d.StoreOptions.OnUnconfirmed = a.metrics.UnconfirmedWrite
	st := store.New(d.Redis, d.StoreOptions)
	a.store, a.deps = st, d
	if d.Tracer != nil {
		a.tracer = d.Tracer.Tracer(tracerName)
	}
	a.owner = owner
	a.queue = st.ResumeQueue(store.ResumeQueueOptions{})
	a.jobs = st.JobQueue(0)

	// Built in the order they need each other, so nothing is set later:
	// the tools, the cards and usergroups over Slack, the Service over
	// them and the store, the runner, the Bot.
	box, err := newToolbox(d)
	if err != nil {
		return nil, err
	}
	a.cards = bot.NewCards(bot.CardsConfig{Slack: d.Slack, Routes: d.Routes, Tools: box, Retry: d.Retry, Metrics: a.metrics, Log: d.Log, Now: d.StoreOptions.Now})
	groups := &bot.Usergroups{Slack: d.Slack, Metrics: a.metrics}
	// The store's ports (requests, grants, the reminders scheduled on
	// the job queue, the changes held while Redis's replicas did not
	// confirm them, applied by confirmChanges) come from ServiceConfig,
	// as in the test systems (internal/systest).
	a.svc = approval.New(st.ServiceConfig(approval.Config{
		Poster: a.cards, Directory: groups, Routes: d.Routes, Tools: box, Metrics: a.metrics, Log: d.Log,
		// A run whose request this process ends continues here at once.
		Resumed: func(ctx context.Context, token, runID string) error { return a.runs.ResumeDirect(ctx, token, runID) },
	}, a.jobs))
	// The Service expires requests: the cards of an expired token are
	// updated through the job queue (consumeJobs), which the sweep fills
	// atomically with the expiry, so they are updated even if this process
	// dies; its run continues here at once (the Service's Resumed), with
	// the timeout denial.
	a.tokens = store.NewServiceTokens(st, a.svc, store.TokensOptions{Owner: owner, SweepEvery: d.SweepEvery, Logger: d.Log})
	// The step-up pages need the Service and the Bot needs the pages (its
	// App Home lists a person's passkeys): built in that order.
	if err := a.newStepUp(d, box); err != nil {
		return nil, err
	}
	var passkeys bot.Passkeys
	if a.stepup != nil {
		passkeys = botPasskeys{a.stepup}
	}
	a.bot = bot.New(bot.Config{
		Slack: d.Slack, Service: a.svc, Cards: a.cards, Usergroups: groups,
		TeamID: d.TeamID, EnterpriseID: d.EnterpriseID, Log: d.Log, Retry: d.Retry, Metrics: a.metrics,
		Passkeys: passkeys, PublicURL: d.PublicURL,
	})
	if err := a.wireAPI(d, owner); err != nil {
		return nil, err
	}
	if a.runner, err = a.newRunner(d, box); err != nil {
		return nil, err
	}
	a.runs = &runs.Runs{
		Chat: a.bot, Approvals: a.svc, Receipts: a.receipts.signer, Runner: a.runner, BotUserID: d.BotUserID, Log: d.Log, Metrics: a.metrics,
		HandedOff: func(err error) bool { return errors.Is(err, store.ErrClaimed) || errors.Is(err, errHandedOff) },
		Threads:   threads{st},
		// What follows a run's end is queued as jobs, and its answer
		// posted once, whichever replica does it.
		Jobs: runJobs{a.jobs}, Answers: st, JobTimeout: store.DefaultJobTimeout,
		State: runState{st, a.queue}, Owner: owner, Trace: a.traceResume,
	}
	a.events = &bot.Events{Bot: a.bot, Runs: a.runs, Dedupe: st, BotUserID: d.BotUserID, Log: d.Log}
	return a, nil
}

// newRunner is the agent runner of Slack-started runs: the routes'
// policies, then the ask that hands calls to people; receipts verified and
// every tool journaled.
func (a *app) newRunner(d appDeps, box *agentrunner.Toolbox) (*agentrunner.Runner, error) {
	// A run whose calls were handed to people hibernates: it returns, and
	// whoever ends its request resumes it (package runs).
	// The Service records and ends the ask; the runner only waits (on a
	// token whose run could not suspend) through a.tokens.
	ask := &agentrunner.AskHandler{Asker: a.svc.Asker(a.store), Waiter: stoppableTokens{approval.RunTokens{TokenStore: a.tokens, Signer: a.receipts.signer}, a.handOff}, Deadline: a.svc.Deadline, Suspend: true}
	opts := []agentrunner.Option{
		agentrunner.WithToolbox(box),
		agentrunner.WithHandlers(a.svc.Policy(a.receipts.signer), ask),
		// An approved call runs only if its receipt verifies, by the
		// clock its decision was stamped with.
		agentrunner.WithReceiptKeys(a.receipts.keys),
		agentrunner.WithClock(d.StoreOptions.Now),
		// A tool runs at most once, approved or not, even across a
		// takeover of its run by another replica, which goes on from the
		// run's last checkpoint.
		agentrunner.WithJournal(a.store.CallJournal()),
	}
	if a.tracer != nil {
		opts = append(opts, agentrunner.WithToolObserver(a.observeTool))
	}
	return agentrunner.NewRunner(d.Model, nil, opts...)
}

// wireAPI builds the HTTP API and its callback delivery over the Service,
// when API keys are configured.
func (a *app) wireAPI(d appDeps, owner string) error {
	if len(d.APIKeys) == 0 {
		return nil
	}
	var err error
	a.api, err = httpapi.New(httpapi.Config{Keys: d.APIKeys, Approvals: a.svc, Store: a.store, Waiter: a.tokens, Routes: d.Routes, Log: d.Log,
		AllowPrivateCallbacks: d.AllowPrivateCallbacks, MaxOpen: d.APIMaxOpen, Rate: d.APIRate, Receipts: a.receipts.signer})
	if err != nil {
		return err
	}
	cc := httpapi.CallbacksConfig{
		Keys: d.APIKeys, Store: a.store, Queue: a.store.CallbackQueue(0), Consumer: owner, Log: d.Log,
		AllowPrivate: d.AllowPrivateCallbacks, Receipts: a.receipts.signer, Metrics: a.metrics,
	}
	if d.Tracer != nil {
		cc.Observe = a.observeCallback
		cc.WrapTransport = func(rt http.RoundTripper) http.RoundTripper {
			return tracedTransport(d.Tracer, rt, func(r *http.Request) string { return "callback " + r.Method })
		}
	}
	a.callbacks = httpapi.NewCallbacks(cc)
	return a.wireGateway(d)
}

// wireGateway builds the MCP gateway (/mcp) over the Service, with the
// HTTP API's keys and quota and the MCP servers the runner uses.
func (a *app) wireGateway(d appDeps) error {
	ring, err := httpapi.NewKeyring(d.APIKeys)
	if err != nil {
		return err
	}
	auth := func(r *http.Request) (mcpgateway.Client, bool) {
		k, ok := ring.Authenticate(r)
		if !ok {
			return mcpgateway.Client{}, false
		}
		return mcpgateway.Client{Name: k.Name, Routes: k.Routes}, true
	}
	a.gateway, err = mcpgateway.NewHandler(mcpgateway.Config{
		Authenticate: auth, Approvals: a.svc, Waiter: a.tokens, Store: a.store, Upstream: d.MCPUpstream,
		Quota: httpapi.QuotaOf(d.APIMaxOpen, d.APIRate), Log: d.Log, Receipts: a.receipts.signer,
	})
	return err
}

// newToolbox returns the agent's tools: d's, and those of d's tool source.
func newToolbox(d appDeps) (*agentrunner.Toolbox, error) {
	if d.ToolSource != nil {
		return agentrunner.NewToolbox(d.Tools, d.ToolSource)
	}
	return agentrunner.NewToolbox(d.Tools)
}

// pendingByRoute is what the pending gauges read at scrape time (the
// metrics' pendingCollector bounds it to a second).
func (a *app) pendingByRoute(ctx context.Context) (map[string]store.RoutePending, error) {
	return a.store.PendingByRoute(ctx)
}

// errHandedOff ends a wait at shutdown: the token stays open and the run
// is resumed by another replica (or this one, restarted) from Redis.
var errHandedOff = errors.New("shutting down: the run is left to another replica")

// stoppableTokens ends every wait when stop is closed, without
// cancelling the run's own context.
type stoppableTokens struct {
	approval.RunTokens
	stop <-chan struct{}
}

// The runner finds Watch and Keep by a type assertion: without them a run
// that waits in place would not register as its token's waiter, and
// another replica could resume it too.
var _ agentrunner.TokenWatcher = stoppableTokens{}

func (e stoppableTokens) Wait(ctx context.Context, token string) (*agentrunner.DeferredToolResults, error) {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	go func() {
		select {
		case <-e.stop:
			cancel(errHandedOff)
		case <-ctx.Done():
		}
	}()
	res, err := e.RunTokens.Wait(ctx, token)
	if err != nil && context.Cause(ctx) == errHandedOff {
		return nil, errHandedOff
	}
	return res, err
}

// shutdown stops the app's work in order: waits end at once (their runs
// are handed to other replicas), runs in the middle of a tool or model
// call get until ctx ends to finish, then everything is cancelled; last,
// the Slack updates that clicks started are waited for.
func (a *app) shutdown(ctx context.Context) {
	a.handOffOnce.Do(func() { close(a.handOff) })
	done := make(chan struct{})
	go func() {
		a.runs.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-ctx.Done():
		a.log.Warn("shutdown budget spent: cancelling runs still working")
		a.runs.Stop()
		<-done
	}
	a.runs.Stop()
	a.bot.Close()
	if a.api != nil {
		a.api.Close()
		a.gateway.Close()
	}
	a.svc.Close()
}

// slackHTTPClient is the HTTP client of the Slack Web API client. It keeps
// up to 100 idle connections to Slack for reuse: with http.DefaultTransport
// (two idle connections per host) a burst of clicks, each followed by a
// chat.update, opened a new connection for almost every call, which cost
// more CPU than the calls themselves and filled the ephemeral ports with
// TIME_WAIT. Each attempt is bounded by bot.Retry's AttemptTimeout. With
// a tracer provider (nil: none) each call is a span named by its method.
func slackHTTPClient(tp trace.TracerProvider) *http.Client {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxIdleConns = 100
	t.MaxIdleConnsPerHost = 100
	if tp == nil {
		return &http.Client{Transport: t}
	}
	return &http.Client{Transport: tracedTransport(tp, t, slackSpanName)}
}

// ready reports whether this replica can take traffic: whether Redis
// answers. Slack is not asked: decisions need only Redis, and a Slack
// outage or rate limit would otherwise take every replica out of the load
// balancer at once, so that even clicks Slack does deliver get a 503.
// Slack's health is watched apart, by watchSlack.
func (a *app) ready(ctx context.Context) error {
	if err := a.store.Ping(ctx); err != nil {
		return fmt.Errorf("redis: %w", err)
	}
	return nil
}
