// Command slackbot puts a person in the loop of an AI agent's risky tool
// calls through Slack.
//
//	slackbot serve             run against Slack (configuration from the environment)
//	slackbot dev               run locally: embedded Redis, Slack emulator at /dev
//	slackbot routes check FILE validate a routing file and print its routes
//	slackbot version           print the version
package main

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"runtime/debug"
	"strings"
	"syscall"
	"time"

	"github.com/slack-go/slack"

	"github.com/slackapprove/slackbot/agentrunner"
	"github.com/slackapprove/slackbot/agentrunner/anthropic"
	"github.com/slackapprove/slackbot/agentrunner/demotools"
	"github.com/slackapprove/slackbot/agentrunner/mcptools"
	"github.com/slackapprove/slackbot/agentrunner/openai"
	"github.com/slackapprove/slackbot/bot"
	"github.com/slackapprove/slackbot/httpapi"
	"github.com/slackapprove/slackbot/internal/devui"
	"github.com/slackapprove/slackbot/store"
)

// version is set at build time with -ldflags "-X main.version=…".
var version = ""

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Getenv, os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "slackbot:", err)
		os.Exit(1)
	}
}

const usage = `usage:
  slackbot serve              run against Slack (configuration from the environment)
  slackbot dev                run locally with an embedded Redis and a Slack emulator at /dev
  slackbot routes check FILE  validate a routing file and print its routes
  slackbot version            print the version`

// run does everything main does, so tests can start the real program:
// args are the command line without the program's name, getenv reads the
// environment (os.Getenv), and stdout and stderr are where output and logs
// go. Nothing below run reads the process environment.
func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		return errors.New(usage)
	}
	switch args[0] {
	case "serve":
		return serve(ctx, ModeServe, getenv, stdout, stderr)
	case "dev":
		return serve(ctx, ModeDev, getenv, stdout, stderr)
	case "version":
		fmt.Fprintln(stdout, "slackbot", buildVersion())
		return nil
	case "routes":
		if len(args) != 3 || args[1] != "check" {
			return errors.New(usage)
		}
		return routesCheck(args[2], stdout)
	case "-h", "--help", "help":
		fmt.Fprintln(stdout, usage)
		return nil
	default:
		return fmt.Errorf("unknown command %q\n%s", args[0], usage)
	}
}

func buildVersion() string {
	if version != "" {
		return version
	}
	if info, ok := debug.ReadBuildInfo(); ok {
		for _, s := range info.Settings {
			if s.Key == "vcs.revision" && len(s.Value) >= 12 {
				return "dev-" + s.Value[:12]
			}
		}
	}
	return "dev"
}

func routesCheck(path string, stdout io.Writer) error {
	routes, err := bot.LoadRoutes(path)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "%s: %d routes, default timeout %s\n\n", path, len(routes.Routes), routes.DefaultTimeout)
	return routes.Describe(stdout)
}

func newLogger(cfg *Config, w io.Writer) *slog.Logger {
	var level slog.Level
	_ = level.UnmarshalText([]byte(cfg.LogLevel))
	opts := &slog.HandlerOptions{Level: level}
	var h slog.Handler
	if cfg.LogFormat == "text" {
		h = slog.NewTextHandler(w, opts)
	} else {
		h = slog.NewJSONHandler(w, opts)
	}
	return slog.New(requestIDHandler{h})
}

// requestIDHandler adds the request id of the context to every record, so
// one request's log lines can be found together.
type requestIDHandler struct{ slog.Handler }

func (h requestIDHandler) Handle(ctx context.Context, r slog.Record) error {
	if id, ok := ctx.Value(requestIDKey{}).(string); ok {
		r.AddAttrs(slog.String("request_id", id))
	}
	return h.Handler.Handle(ctx, r)
}

func (h requestIDHandler) WithAttrs(a []slog.Attr) slog.Handler {
	return requestIDHandler{h.Handler.WithAttrs(a)}
}

func (h requestIDHandler) WithGroup(name string) slog.Handler {
	return requestIDHandler{h.Handler.WithGroup(name)}
}

// serve runs slackbot until ctx ends (SIGTERM, SIGINT), then shuts down
// gracefully: it stops accepting requests, finishes those in flight, and
// leaves waiting runs in Redis to be resumed by another replica.
func serve(ctx context.Context, mode Mode, getenv func(string) string, stdout, stderr io.Writer) error {
	cfg, err := loadConfig(getenv, mode)
	if err != nil {
		return err
	}
	if getenv("ADDR") == "" && mode == ModeDev {
		// The emulator signs clicks as any user: keep it off the network
		// unless asked.
		cfg.Addr = "127.0.0.1:8080"
	}
	log := newLogger(cfg, stderr)

	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", cfg.Addr, err)
	}
	defer ln.Close()

	if cfg.RedisURL == "" && mode == ModeServe {
		log.Warn("REDIS_URL is not set: using an EMBEDDED IN-MEMORY Redis. Every pending approval is lost when this process stops, and replicas do not share state. Set REDIS_URL in production.")
	}
	rdb, closeRedis, err := store.Open(ctx, cfg.RedisURL)
	if err != nil {
		return err
	}
	defer closeRedis()

	deps := appDeps{Log: log, Redis: rdb, SigningSecret: cfg.SlackSigningSecret, AllowPrivateCallbacks: mode == ModeDev}
	var dev *devWorkspace
	if mode == ModeDev {
		dev, err = newDevWorkspace(cfg, ln.Addr(), log)
		if err != nil {
			return err
		}
		deps.SigningSecret = dev.secret
		deps.Extra = dev.handlers()
		cfg.SlackBotToken = dev.slack.Token()
		cfg.SlackAPIURL = dev.apiURL
	}
	client := slack.New(cfg.SlackBotToken, slack.OptionAPIURL(cfg.SlackAPIURL), slack.OptionHTTPClient(slackHTTPClient()))
	deps.Slack = client
	if dev != nil {
		// The emulated workspace is served by this very process, which does
		// not answer yet: ask it directly.
		deps.TeamID, deps.BotUserID = dev.slack.Team().ID, dev.slack.BotUserID()
	} else {
		auth, err := authTest(ctx, client)
		if err != nil {
			return err
		}
		deps.TeamID, deps.EnterpriseID, deps.BotUserID = auth.TeamID, auth.EnterpriseID, auth.UserID
	}

	if deps.Routes, err = loadRoutes(cfg, mode); err != nil {
		return err
	}
	if deps.Model, err = newModel(cfg, mode, getenv("MODEL") != ""); err != nil {
		return err
	}
	if deps.Tools, err = newTools(cfg, mode, getenv("TMPDIR")); err != nil {
		return err
	}
	if len(cfg.APIKeys) > 0 {
		if deps.APIKeys, err = httpapi.ParseKeys(strings.Join(cfg.APIKeys, ",")); err != nil {
			return err
		}
		deps.APIMaxOpen, deps.APIRate = cfg.APIMaxOpen, cfg.APIRate
	}
	if len(deps.Routes.MCPServers) > 0 {
		// MCP servers that are down do not stop start-up: their tools are
		// retried in the background and fail clearly until they are back.
		var cfgs []mcptools.Config
		for _, s := range deps.Routes.MCPServers {
			cfgs = append(cfgs, s.Config())
		}
		// ${VAR} in the routing file's MCP servers, and what stdio
		// servers inherit, come from getenv too.
		lookup := func(name string) (string, bool) { v := getenv(name); return v, v != "" }
		ts, err := mcptools.NewToolset(ctx, cfgs, mcptools.WithLogger(log), mcptools.WithLookupEnv(lookup))
		if err != nil {
			return fmt.Errorf("mcp servers: %w", err)
		}
		defer func() {
			if err := ts.Close(); err != nil {
				log.Warn("closing MCP servers", "err", err)
			}
		}()
		deps.ToolSource = ts
		log.Info("MCP servers configured", "servers", len(cfgs))
	}
	a, err := newApp(deps)
	if err != nil {
		return err
	}

	handler := a.handler()
	if dev != nil {
		handler = devui.Guard(ln.Addr(), handler)
	}
	srv := &http.Server{
		Handler:           handler,
		ReadHeaderTimeout: 5 * time.Second,
		ReadTimeout:       30 * time.Second,
		WriteTimeout:      90 * time.Second, // long polls of the HTTP API
		IdleTimeout:       2 * time.Minute,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
		TLSConfig:         &tls.Config{MinVersion: tls.VersionTLS12},
	}
	if dev != nil {
		srv.RegisterOnShutdown(dev.close)
	}
	if a.api != nil {
		srv.RegisterOnShutdown(a.api.Close)
	}
	bgCtx, stopBackground := context.WithCancel(context.WithoutCancel(ctx))
	bgDone := make(chan struct{})
	go func() {
		defer close(bgDone)
		a.background(bgCtx)
	}()

	serveErr := make(chan error, 2)
	smCtx, stopSocketMode := context.WithCancel(context.WithoutCancel(ctx))
	smDone := make(chan struct{})
	if cfg.SlackAppToken == "" || mode != ModeServe {
		close(smDone)
	} else {
		// Socket Mode: events and clicks arrive over a websocket and go
		// through the same handlers as HTTP; the HTTP server still serves
		// health, metrics and the API.
		sm := &bot.SocketMode{
			Client: bot.NewSocketModeClient(cfg.SlackBotToken, cfg.SlackAppToken, cfg.SlackAPIURL, log),
			Bot:    a.bot, Runs: a.runs, Log: log,
		}
		go func() {
			defer close(smDone)
			if err := sm.Run(smCtx); err != nil {
				serveErr <- err
			}
		}()
		log.Info("socket mode enabled: events and interactivity arrive over Slack's websocket")
	}
	go func() {
		var err error
		if cfg.TLSCertFile != "" {
			err = srv.ServeTLS(ln, cfg.TLSCertFile, cfg.TLSKeyFile)
		} else {
			err = srv.Serve(ln)
		}
		serveErr <- fmt.Errorf("http server: %w", err)
	}()
	scheme := "http"
	if cfg.TLSCertFile != "" {
		scheme = "https"
	}
	base := fmt.Sprintf("%s://%s", scheme, ln.Addr())
	log.Info("slackbot listening", "mode", string(mode), "addr", ln.Addr().String(), "version", buildVersion(), "team", deps.TeamID)
	if cfg.PublicURL != "" {
		log.Info("Slack request URLs", "events", cfg.PublicURL+"/slack/events", "interactivity", cfg.PublicURL+"/slack/interactivity")
	}
	fmt.Fprintf(stdout, "slackbot %s listening on %s\n", mode, base)
	if mode == ModeDev {
		fmt.Fprintf(stdout, "Slack emulator: %s/dev/\n", devURL(ln.Addr()))
	}

	select {
	case err := <-serveErr:
		stopSocketMode()
		<-smDone
		a.shutdown(context.Background())
		stopBackground()
		<-bgDone
		return err
	case <-ctx.Done():
	}
	log.Info("shutting down: finishing requests in flight; waiting runs stay in Redis for another replica")
	shutdownCtx, cancel := context.WithTimeout(context.Background(), shutdownBudget)
	defer cancel()
	// Stop taking clicks and events first (HTTP, then Socket Mode, which
	// finishes the requests it has in flight), then let the app wind down.
	if err := srv.Shutdown(shutdownCtx); err != nil {
		log.Error("http shutdown", "err", err)
	}
	stopSocketMode()
	<-smDone
	a.shutdown(shutdownCtx)
	stopBackground()
	<-bgDone
	return nil
}

// shutdownBudget is how long serve waits for requests in flight after
// SIGTERM; deploy/ gives the process more than this plus its preStop.
const shutdownBudget = 25 * time.Second

// devURL is the address a browser on this machine can open.
func devURL(addr net.Addr) string {
	host, port, _ := net.SplitHostPort(addr.String())
	if host == "" || host == "::" || host == "0.0.0.0" {
		host = "localhost"
	}
	return "http://" + net.JoinHostPort(host, port)
}

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

func loadRoutes(cfg *Config, mode Mode) (*bot.Routes, error) {
	if cfg.RoutesFile == "" {
		if mode == ModeDev {
			return bot.DemoRoutes(), nil
		}
		return nil, &ConfigError{Problems: []string{"ROUTES_FILE is required for serve: without routes every tool call would be denied"}}
	}
	return bot.LoadRoutes(cfg.RoutesFile)
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
