package mcptools

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"regexp"
	"runtime/debug"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/slackapprove/slackbot/agentrunner"
)

// ErrUnavailable is matched (errors.Is) by every *UnavailableError.
var ErrUnavailable = errors.New("MCP server unavailable")

// UnavailableError says a server could not be reached: it did not start,
// refused the connection, closed it, or is being retried in the
// background. The model sees it as the failed outcome of its call.
type UnavailableError struct {
	Server    string
	Transport string // see Config.Transport
	Err       error
}

// Error names the server, its transport and the cause. URLs quoted by the
// cause lose their credentials and query string: a server's URL may carry a
// secret from ${VAR}, and this text reaches logs, the model and Slack.
func (e *UnavailableError) Error() string {
	return fmt.Sprintf("MCP server %s is unavailable (%s): %s", e.Server, e.Transport, redactURLs(fmt.Sprint(e.Err)))
}

// urlRE matches an http(s) URL in free text, with optional userinfo and
// query string.
var urlRE = regexp.MustCompile(`(https?://)(?:[^/\s"'@]*@)?([^\s"'?#]*)(?:\?[^\s"'#]*)?`)

// redactURLs strips userinfo and query strings from the URLs in s.
func redactURLs(s string) string {
	return urlRE.ReplaceAllStringFunc(s, func(u string) string {
		m := urlRE.FindStringSubmatch(u)
		out := m[1] + m[2]
		if strings.Contains(u, "?") {
			out += "?…"
		}
		return out
	})
}

// Is lets callers test for ErrUnavailable.
func (e *UnavailableError) Is(target error) bool { return target == ErrUnavailable }

// Unwrap returns the cause.
func (e *UnavailableError) Unwrap() error { return e.Err }

// codeRejected is the code of the SDK's "rejected by transport" error: the
// request did not reach the server (connection refused, 502, 503, ...).
const codeRejected = -32005

// ErrTimeout is wrapped by the error of a call the server did not answer
// within Config.Timeout. The call may still take effect on the server.
var ErrTimeout = errors.New("no answer in time")

// Option configures Connect and NewToolset.
type Option func(*options)

type options struct {
	lookupEnv      func(string) (string, bool)
	httpClient     *http.Client
	logger         *slog.Logger
	transport      func(ctx context.Context, cfg Config) (mcp.Transport, error)
	connectTimeout time.Duration
	minBackoff     time.Duration
	maxBackoff     time.Duration
	healthEvery    time.Duration
	onCall         func(server string, err error)
}

func newOptions(opts []Option) *options {
	o := &options{
		lookupEnv:      os.LookupEnv,
		httpClient:     http.DefaultClient,
		logger:         slog.New(slog.DiscardHandler),
		connectTimeout: 30 * time.Second,
		minBackoff:     time.Second,
		maxBackoff:     time.Minute,
		healthEvery:    30 * time.Second,
	}
	for _, opt := range opts {
		opt(o)
	}
	return o
}

// WithLookupEnv sets where ${VAR} references are resolved and where the
// variables a stdio server inherits come from; the default is os.LookupEnv.
func WithLookupEnv(lookup func(string) (string, bool)) Option {
	return func(o *options) { o.lookupEnv = lookup }
}

// WithHTTPClient sets the client streamable-HTTP servers are reached with;
// the configured headers are added to its requests. It should have no
// Timeout: server-sent event streams stay open; Config.Timeout bounds calls.
func WithHTTPClient(c *http.Client) Option { return func(o *options) { o.httpClient = c } }

// WithLogger sets where connections, reconnections, left-out tools and the
// stderr of stdio servers are logged; the default discards them.
func WithLogger(l *slog.Logger) Option { return func(o *options) { o.logger = l } }

// WithTransport replaces how servers are reached, for servers in the same
// process (mcp.NewInMemoryTransports) and tests. It is called for every
// connection attempt with the server's configuration, whose Command and URL
// may then both be empty; returning a nil Transport and a nil error reaches
// that server by its Command or URL as usual.
func WithTransport(f func(ctx context.Context, cfg Config) (mcp.Transport, error)) Option {
	return func(o *options) { o.transport = f }
}

// WithConnectTimeout bounds each connection attempt of a Toolset, and its
// listing of tools; default 30s.
func WithConnectTimeout(d time.Duration) Option { return func(o *options) { o.connectTimeout = d } }

// WithBackoff sets how long a Toolset waits before reconnecting to a server
// that is down: min at first, doubling up to max; defaults 1s and 1m.
func WithBackoff(min, max time.Duration) Option {
	return func(o *options) { o.minBackoff, o.maxBackoff = min, max }
}

// WithHealthCheck sets how often a Toolset pings each connected server and
// lists its tools again, so that a server that went away, or a change of
// tools it did not announce, is noticed; default 30s, zero disables it. A
// call that fails for want of the server triggers a check at once.
func WithHealthCheck(every time.Duration) Option { return func(o *options) { o.healthEvery = every } }

// WithCallObserver has a Toolset tell observe of every tools/call it
// makes to one of its servers, once the call has ended: the server's
// name and nil when the server answered (a result with isError set
// included: the tool failed, not the server), or the call's error (the
// server unavailable, over its limits, out of time, refusing the
// request). It is how slackbot counts upstream calls without this package
// knowing of metrics (docs/ARCHITECTURE.md, "Import rules"). observe is
// called on the caller's goroutine and must be quick; Connect's Client
// does not call it.
func WithCallObserver(observe func(server string, err error)) Option {
	return func(o *options) { o.onCall = observe }
}

// Client is a connection to one MCP server.
type Client struct {
	cfg       Config // references expanded
	transport string
	session   *mcp.ClientSession
	logger    *slog.Logger
	stderr    *stderrLog // nil unless stdio
	changed   chan struct{}
	// limits are cfg.Limits with the defaults filled in; guard enforces
	// limits.Response on what the transport reads.
	limits Limits
	guard  *guard
	// cut has the tools whose description was cut, with its length, so
	// that each is logged once.
	cutMu sync.Mutex
	cut   map[string]int
}

// Connect validates cfg, expands its ${VAR} references, starts or dials
// the server and initializes an MCP session with it. A missing variable is
// a *MissingEnvError; a server that cannot be reached an *UnavailableError
// naming the server and its transport, with the last lines a stdio server
// wrote to stderr. Close the Client to end the session and stop a stdio
// server.
func Connect(ctx context.Context, cfg Config, opts ...Option) (*Client, error) {
	o := newOptions(opts)
	if err := cfg.validate(o.transport == nil); err != nil {
		return nil, err
	}
	expanded, err := expandConfig(cfg, o.lookupEnv)
	if err != nil {
		return nil, err
	}
	return connect(ctx, expanded, cfg.Transport(), o)
}

// connect connects with a configuration whose references are expanded;
// transport describes it for messages, from the configuration as written.
func connect(ctx context.Context, cfg Config, transport string, o *options) (*Client, error) {
	limits := cfg.Limits.withDefaults()
	c := &Client{
		cfg:       cfg,
		transport: transport,
		logger:    o.logger.With("mcp_server", cfg.Name),
		changed:   make(chan struct{}, 1),
		limits:    limits,
		guard:     &guard{max: limits.Response},
	}
	unavailable := func(err error) error {
		if b := c.guard.tripped(); b != nil {
			err = b
		}
		if tail := c.stderr.Tail(); tail != "" {
			err = fmt.Errorf("%w; stderr: %s", err, tail)
		}
		return &UnavailableError{Server: cfg.Name, Transport: transport, Err: err}
	}
	t, err := c.newTransport(ctx, o)
	if err != nil {
		return nil, unavailable(err)
	}
	client := mcp.NewClient(&mcp.Implementation{Name: "slackbot", Version: version()}, &mcp.ClientOptions{
		Logger: c.logger,
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
			select {
			case c.changed <- struct{}{}:
			default: // a refresh is already due
			}
		},
	})
	// A message over the limit ends the attempt at once, whichever
	// message it was (some the SDK would otherwise wait for forever).
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	c.guard.onBreach(cancel)
	session, err := client.Connect(ctx, t, nil)
	if err != nil {
		return nil, unavailable(err)
	}
	c.session = session
	c.guard.onBreach(func() { _ = session.Close() })
	return c, nil
}

func version() string {
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" {
		return bi.Main.Version
	}
	return "devel"
}

func (c *Client) newTransport(ctx context.Context, o *options) (mcp.Transport, error) {
	if o.transport != nil {
		t, err := o.transport(ctx, c.cfg)
		if t != nil || err != nil {
			return t, err
		}
	}
	switch {
	case len(c.cfg.Command) > 0:
		// Not exec.CommandContext: the server outlives the context of the
		// connection attempt; Close stops it (stdin closed, then SIGTERM,
		// then SIGKILL).
		cmd := exec.Command(c.cfg.Command[0], c.cfg.Command[1:]...)
		cmd.Env = childEnv(c.cfg.Env, o.lookupEnv)
		c.stderr = &stderrLog{logger: c.logger}
		cmd.Stderr = c.stderr
		return &commandTransport{cmd: cmd, g: c.guard}, nil
	case c.cfg.URL != "":
		u, err := url.Parse(c.cfg.URL)
		if err != nil {
			return nil, fmt.Errorf("url: %w", err)
		}
		hc := *o.httpClient
		hc.Transport = &limitTransport{g: c.guard, base: &headerTransport{base: hc.Transport, host: u.Host, header: c.cfg.Headers}}
		// The SDK's own bound on an event, a little above ours, so that
		// ours, which names the limit, trips first.
		return &mcp.StreamableClientTransport{Endpoint: c.cfg.URL, HTTPClient: &hc, MaxEventSize: int(c.limits.Response) + 4<<10}, nil
	}
	return nil, errors.New("no command or url to reach the server by")
}

// childEnv is the environment of a stdio server: the inheritedEnv
// variables that are set, then the configured ones.
func childEnv(extra map[string]string, lookup func(string) (string, bool)) []string {
	env := make([]string, 0, len(inheritedEnv)+len(extra))
	for _, k := range inheritedEnv {
		if _, set := extra[k]; set {
			continue
		}
		if v, ok := lookup(k); ok {
			env = append(env, k+"="+v)
		}
	}
	for _, k := range sortedKeys(extra) {
		env = append(env, k+"="+extra[k])
	}
	return env
}

// headerTransport adds the configured headers to requests to the server's
// host only, so that a redirect elsewhere does not carry credentials. A
// header the SDK sets itself is left alone.
type headerTransport struct {
	base   http.RoundTripper
	host   string
	header map[string]string
}

func (t *headerTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	base := t.base
	if base == nil {
		base = http.DefaultTransport
	}
	if req.URL.Host != t.host || len(t.header) == 0 {
		return base.RoundTrip(req)
	}
	req = req.Clone(req.Context())
	for k, v := range t.header {
		if req.Header.Get(k) == "" {
			req.Header.Set(k, v)
		}
	}
	return base.RoundTrip(req)
}

// Name returns the server's configured name.
func (c *Client) Name() string { return c.cfg.Name }

// Tools lists the server's tools as agentrunner tools named
// "<server>__<tool>" (see ToolName). Each requires approval unless it
// matches the server's ReadOnly globs; its confirmation names the server,
// as in `Run github.create_issue({"title":"x"})?`. Calls are bounded by
// Config.Timeout and go through this Client, so they fail with an
// *UnavailableError once it is closed. A tool whose schema does not
// compile is left out and logged.
func (c *Client) Tools(ctx context.Context) ([]*agentrunner.Tool, error) {
	list, err := c.listTools(ctx)
	if err != nil {
		return nil, err
	}
	return buildTools(c.cfg, list, c.call, c.logger), nil
}

// ToolsChanged receives a value when the server announces that its tool
// list changed; call Tools again to see the new list. A Toolset does this
// for its servers.
func (c *Client) ToolsChanged() <-chan struct{} { return c.changed }

// Wait blocks until the session ends: the server went away or Close was
// called.
func (c *Client) Wait() error { return c.session.Wait() }

// Close ends the session. A stdio server's stdin is closed and it is given
// 5s to exit before it is sent SIGTERM, then SIGKILL.
func (c *Client) Close() error {
	if err := c.session.Close(); err != nil {
		return fmt.Errorf("close MCP server %s: %w", c.cfg.Name, err)
	}
	return nil
}

// listTools lists the server's tools within its limits: no more than
// limits.tools of them (the listing stops there), each schema within
// limits.schema, each description cut to limits.description, all of them
// within limits.response however many pages they come in.
func (c *Client) listTools(ctx context.Context) ([]*mcp.Tool, error) {
	var list []*mcp.Tool
	total := 0
	for t, err := range c.session.Tools(ctx, nil) {
		if err != nil {
			return nil, c.requestError(ctx, nil, "list tools", err)
		}
		if len(list) == c.limits.Tools {
			return nil, c.overLimit(&LimitError{Limit: LimitTools, Max: int64(c.limits.Tools)})
		}
		size, err := c.bound(t)
		if err != nil {
			return nil, err
		}
		if total += size; int64(total) > c.limits.Response {
			return nil, c.overLimit(&LimitError{Limit: LimitResponse, Max: c.limits.Response})
		}
		list = append(list, t)
	}
	return list, nil
}

func (c *Client) ping(ctx context.Context) error {
	if err := c.session.Ping(ctx, nil); err != nil {
		return c.requestError(ctx, nil, "ping", err)
	}
	return nil
}

// call calls the server's tool and maps its result for the model.
func (c *Client) call(ctx context.Context, tool string, args json.RawMessage, meta map[string]any) (any, error) {
	res, err := c.callResult(ctx, tool, args, meta)
	if err != nil {
		return nil, err
	}
	return resultValue(c.cfg.Name, tool, res)
}

// callResult calls the server's tool, with meta as the request's _meta,
// and returns its result as the server sent it, bounded by the server's
// timeout.
func (c *Client) callResult(ctx context.Context, tool string, args json.RawMessage, meta map[string]any) (*mcp.CallToolResult, error) {
	callCtx, cancel := context.WithTimeout(ctx, c.cfg.timeout())
	defer cancel()
	res, err := c.session.CallTool(callCtx, &mcp.CallToolParams{Name: tool, Arguments: args, Meta: meta})
	if err != nil {
		return nil, c.requestError(ctx, callCtx, tool, err)
	}
	return res, nil
}

// requestError classifies the error of a request: the caller's context
// ending, the server over its limits (the connection cut off), the call's
// own timeout, an error the server answered with, or the server being out
// of reach.
func (c *Client) requestError(ctx, callCtx context.Context, what string, err error) error {
	if ctx.Err() != nil {
		return fmt.Errorf("MCP server %s: %s: %w", c.cfg.Name, what, ctx.Err())
	}
	if b := c.guard.tripped(); b != nil {
		return c.overLimit(b)
	}
	if callCtx != nil && errors.Is(callCtx.Err(), context.DeadlineExceeded) {
		return fmt.Errorf("MCP server %s: %s: %w after %s; the call may still take effect",
			c.cfg.Name, what, ErrTimeout, c.cfg.timeout())
	}
	var werr *jsonrpc.Error
	if errors.As(err, &werr) && werr.Code != codeRejected {
		return fmt.Errorf("MCP server %s refused %s: %s", c.cfg.Name, what, werr.Message)
	}
	if tail := c.stderr.Tail(); tail != "" {
		err = fmt.Errorf("%w; stderr: %s", err, tail)
	}
	return &UnavailableError{Server: c.cfg.Name, Transport: c.transport, Err: err}
}

// stderrLog logs what a stdio server writes to stderr, line by line, and
// keeps the last lines for error messages.
type stderrLog struct {
	logger *slog.Logger

	mu      sync.Mutex
	partial []byte
	tail    []string
}

const (
	stderrTailLines = 5
	stderrMaxLine   = 4096
)

// Write implements io.Writer for exec.Cmd.Stderr.
func (w *stderrLog) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.partial = append(w.partial, p...)
	for {
		i := bytes.IndexByte(w.partial, '\n')
		if i < 0 {
			if len(w.partial) > stderrMaxLine {
				w.line(string(w.partial))
				w.partial = w.partial[:0]
			}
			return len(p), nil
		}
		w.line(string(w.partial[:i]))
		w.partial = w.partial[i+1:]
	}
}

func (w *stderrLog) line(s string) {
	s = strings.TrimSpace(s)
	if s == "" {
		return
	}
	w.logger.Info("MCP server stderr", "line", s)
	w.tail = append(w.tail, s)
	if len(w.tail) > stderrTailLines {
		w.tail = w.tail[len(w.tail)-stderrTailLines:]
	}
}

// Tail returns the last lines written, joined by " | "; "" for a nil log.
func (w *stderrLog) Tail() string {
	if w == nil {
		return ""
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	tail := w.tail
	if p := strings.TrimSpace(string(w.partial)); p != "" {
		tail = append(tail[:len(tail):len(tail)], p)
	}
	return strings.Join(tail, " | ")
}
