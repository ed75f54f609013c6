package main

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"

	"github.com/redis/go-redis/v9"
	"github.com/slack-go/slack"
	"go.opentelemetry.io/otel"

	"github.com/slackapprove/slackbot/agentrunner"
	"github.com/slackapprove/slackbot/agentrunner/anthropic"
	"github.com/slackapprove/slackbot/agentrunner/demotools"
	"github.com/slackapprove/slackbot/agentrunner/mcptools"
	"github.com/slackapprove/slackbot/agentrunner/openai"
	"github.com/slackapprove/slackbot/bot"
	"github.com/slackapprove/slackbot/httpapi"
	"github.com/slackapprove/slackbot/receipt"
	"github.com/slackapprove/slackbot/routing"
)

// wiring is what serve builds the app from: its dependencies, the
// emulated workspace in dev mode, and what to close at the end.
type wiring struct {
	deps appDeps
	dev  *devWorkspace // nil unless dev mode
	// closers run, last first, when serve returns.
	closers []func()
}

func (w *wiring) close() {
	for i := len(w.closers) - 1; i >= 0; i-- {
		w.closers[i]()
	}
}

// wire builds the app's dependencies from the configuration: the Slack
// client and the bot's identity (or the emulated workspace in dev mode),
// the routes, the model and tools, the API keys and the MCP servers.
func wire(ctx context.Context, cfg *Config, mode Mode, getenv func(string) string, log *slog.Logger, addr net.Addr, rdb redis.UniversalClient) (*wiring, error) {
	w := &wiring{deps: appDeps{Log: log, Redis: rdb, SigningSecret: cfg.SlackSigningSecret, AllowPrivateCallbacks: mode == ModeDev,
		ReceiptIssuer: cfg.PublicURL, PublicURL: cfg.PublicURL}}
	d := &w.deps
	if mode == ModeDev && d.PublicURL == "" {
		// The emulator's browser reaches slackbot here: localhost is a
		// secure context, so passkeys work without TLS (a WebAuthn RP ID
		// is a domain, never an IP address: 127.0.0.1 becomes localhost).
		d.PublicURL = localhostURL(devURL(addr))
	}
	if mode == ModeDev {
		d.StepUpNote = devStepUpNote
	}
	d.StoreOptions.WaitReplicas = cfg.RedisWaitReplicas
	if err := w.tracing(ctx, getenv, rdb); err != nil {
		return nil, err
	}
	var err error
	if cfg.ReceiptKey != "" {
		// loadConfig checked both seeds.
		if d.ReceiptKey, err = receipt.ParseSeed(cfg.ReceiptKey); err != nil {
			return nil, fmt.Errorf("RECEIPT_KEY: %w", err)
		}
	}
	if cfg.ReceiptKeyPrevious != "" {
		if d.ReceiptPrevious, err = receipt.ParseSeed(cfg.ReceiptKeyPrevious); err != nil {
			return nil, fmt.Errorf("RECEIPT_KEY_PREVIOUS: %w", err)
		}
	}
	if err := w.slack(ctx, cfg, mode, log, addr); err != nil {
		return nil, err
	}
	if d.Routes, err = loadRoutes(cfg, mode); err != nil {
		return nil, err
	}
	if d.Model, err = newModel(cfg, mode, getenv("MODEL") != ""); err != nil {
		return nil, err
	}
	if d.Tools, err = newTools(cfg, mode, getenv("TMPDIR")); err != nil {
		return nil, err
	}
	if len(cfg.APIKeys) > 0 {
		if d.APIKeys, err = httpapi.ParseKeys(strings.Join(cfg.APIKeys, ",")); err != nil {
			return nil, err
		}
		d.APIMaxOpen, d.APIRate = cfg.APIMaxOpen, cfg.APIRate
	}
	if len(d.Routes.MCPServers) > 0 {
		calls := &upstreamCalls{}
		ts, err := mcpToolset(ctx, d.Routes, getenv, log, mcptools.WithCallObserver(calls.call))
		if err != nil {
			return nil, err
		}
		d.ToolSource, d.MCPUpstream, d.UpstreamCalls = ts, ts, calls
		w.closers = append(w.closers, func() {
			if err := ts.Close(); err != nil {
				log.Warn("closing MCP servers", "err", err)
			}
		})
	}
	return w, nil
}

// tracing sets up tracing when the OTEL_* variables ask for it: a tracer
// provider exporting in batches, installed as OpenTelemetry's global one
// too (for libraries that trace), and Redis's command spans. The process
// is named by its owner (service.instance.id), as in the store's claims.
func (w *wiring) tracing(ctx context.Context, getenv func(string) string, rdb redis.UniversalClient) error {
	cfg, err := loadTracing(getenv)
	if err != nil || cfg == nil {
		return err
	}
	d := &w.deps
	d.Owner = agentrunner.NewToken()[:12]
	tp, err := newTracerProvider(ctx, cfg, d.Owner)
	if err != nil {
		return err
	}
	if err := traceRedis(rdb, tp); err != nil {
		return fmt.Errorf("trace redis: %w", err)
	}
	otel.SetTracerProvider(tp)
	otel.SetTextMapPropagator(w3c)
	d.Tracer, d.FlushTraces = tp, tp.Shutdown
	d.Log.Info("tracing on", "endpoint", redactURL(cfg.endpoint), "grpc", cfg.grpc)
	return nil
}

// slack sets the Slack client and the bot's identity: Slack's (auth.test)
// in serve mode, the emulated workspace's in dev mode.
func (w *wiring) slack(ctx context.Context, cfg *Config, mode Mode, log *slog.Logger, addr net.Addr) error {
	d := &w.deps
	if mode == ModeDev {
		dev, err := newDevWorkspace(cfg, addr, log)
		if err != nil {
			return err
		}
		w.dev = dev
		// Deadlines, reminders, escalations and grants follow the page's
		// clock, which it can move forward.
		d.StoreOptions.Now = dev.clock.Now
		d.SigningSecret = dev.secret
		d.Extra = dev.handlers()
		cfg.SlackBotToken = dev.slack.Token()
		cfg.SlackAPIURL = dev.apiURL
	}
	sc := bot.NewSlackClient(cfg.SlackBotToken, cfg.SlackAPIURL, slackHTTPClient(d.Tracer))
	client := sc.Client
	d.Slack = sc
	if w.dev != nil {
		// The emulated workspace is served by this very process, which does
		// not answer yet: ask it directly.
		d.TeamID, d.BotUserID = w.dev.slack.Team().ID, w.dev.slack.BotUserID()
		return nil
	}
	auth, err := authTest(ctx, client)
	if err != nil {
		return err
	}
	d.TeamID, d.EnterpriseID, d.BotUserID = auth.TeamID, auth.EnterpriseID, auth.UserID
	return nil
}

// mcpToolset connects to the routing file's MCP servers. Servers that are
// down do not stop start-up: their tools are retried in the background and
// fail clearly until they are back.
// opts are added to the Toolset's options.
func mcpToolset(ctx context.Context, routes *routing.Routes, getenv func(string) string, log *slog.Logger, opts ...mcptools.Option) (*mcptools.Toolset, error) {
	var cfgs []mcptools.Config
	for _, s := range routes.MCPServers {
		cfgs = append(cfgs, s.Config())
	}
	// ${VAR} in the servers' configuration, and what stdio servers
	// inherit, come from getenv too.
	lookup := func(name string) (string, bool) { v := getenv(name); return v, v != "" }
	ts, err := mcptools.NewToolset(ctx, cfgs, append([]mcptools.Option{mcptools.WithLogger(log), mcptools.WithLookupEnv(lookup)}, opts...)...)
	if err != nil {
		return nil, fmt.Errorf("mcp servers: %w", err)
	}
	log.Info("MCP servers configured", "servers", len(cfgs))
	return ts, nil
}

// upstreamCalls passes the MCP servers' calls (mcptools.WithCallObserver)
// on to the metrics (slackbot_mcp_upstream_calls_total). wire connects to
// the servers before newApp builds the metrics, whose pending gauges read
// the app's store, so the observer is bound late, by newApp; no call is
// made before that, as runs and the gateway start with the app, and one
// made before would be left uncounted rather than fail.
type upstreamCalls struct {
	observe atomic.Pointer[func(server string, err error)]
}

// call is the Toolset's observer.
func (u *upstreamCalls) call(server string, err error) {
	if f := u.observe.Load(); f != nil {
		(*f)(server, err)
	}
}

// bind sends the calls observed from now on to f.
func (u *upstreamCalls) bind(f func(server string, err error)) { u.observe.Store(&f) }

// authTest asks Slack who the bot is, retrying briefly so a start-up
// during a network blip does not crash-loop.
func authTest(ctx context.Context, client *slack.Client) (*slack.AuthTestResponse, error) {
	var resp *slack.AuthTestResponse
	err := bot.Retry{Attempts: 4}.Do(ctx, func(ctx context.Context) error {
		var err error
		resp, err = client.AuthTestContext(ctx)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("slack auth.test (is SLACK_BOT_TOKEN right?): %w", err)
	}
	return resp, nil
}

func loadRoutes(cfg *Config, mode Mode) (*routing.Routes, error) {
	if cfg.RoutesFile == "" {
		if mode == ModeDev {
			return routing.DemoRoutes(), nil
		}
		return nil, &ConfigError{Problems: []string{"ROUTES_FILE is required for serve: without routes every tool call would be denied"}}
	}
	return routing.LoadRoutes(cfg.RoutesFile)
}

// newModel is the model MODEL names; in dev mode, without MODEL (modelSet
// false), the demo model.
func newModel(cfg *Config, mode Mode, modelSet bool) (agentrunner.Model, error) {
	provider, name, _ := strings.Cut(cfg.Model, ":")
	if !modelSet && mode == ModeDev {
		provider = "demo"
	}
	switch provider {
	case "demo":
		// A test model that understands the demo prompts ("refund order
		// A-1002 150"), so `slackbot dev` calls the tool you ask for.
		return demotools.Model{}, nil
	case "test":
		var tools []string
		if name != "" {
			tools = strings.Split(name, ",")
		}
		return agentrunner.TestModel{CallTools: tools}, nil
	case "openai":
		// Also any OpenAI-compatible server (Ollama, vLLM, LiteLLM) with
		// OPENAI_BASE_URL.
		return openai.New(name, openai.WithAPIKey(cfg.OpenAIAPIKey), openai.WithBaseURL(cfg.OpenAIBaseURL)), nil
	case "anthropic":
		return anthropic.New(name, anthropic.WithAPIKey(cfg.AnthropicAPIKey)), nil
	default:
		return nil, fmt.Errorf("MODEL %s: unknown provider %q", cfg.Model, provider)
	}
}

// newTools are the built-in tools TOOLS names: the demo tools work in a
// sandbox under tmp (TMPDIR; empty: the system's).
func newTools(cfg *Config, mode Mode, tmp string) ([]*agentrunner.Tool, error) {
	if cfg.Tools == "demo" || (cfg.Tools == "" && mode == ModeDev) {
		if tmp == "" {
			tmp = os.TempDir()
		}
		dir := filepath.Join(tmp, "slackbot-demo-sandbox")
		d, err := demotools.New(dir)
		if err != nil {
			return nil, err
		}
		return d.Tools(), nil
	}
	return nil, nil
}
