package mcpgateway

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"runtime/debug"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/slackapprove/slackbot/approval"
)

// Limits of the gateway.
const (
	// MaxBodyBytes bounds the body of every request to /mcp.
	MaxBodyBytes = 1 << 20
	// DefaultProgressEvery is how often a waiting call reports progress.
	DefaultProgressEvery = 10 * time.Second
	// PromptToolName is the name of the permission-prompt tool.
	PromptToolName = "approval_prompt"
)

// Config is what the gateway is built from. Authenticate, Approvals,
// Waiter and Store are required; Upstream may be nil (no mcp_servers: only
// approval_prompt is offered).
type Config struct {
	Authenticate Authenticator
	Approvals    Approvals
	Waiter       Waiter
	Store        Store
	Upstream     Upstream
	// Quota bounds each client's requests (API_MAX_OPEN, API_RATE), shared
	// with /v1: both count in the same Redis keys.
	Quota approval.Quota
	// ProgressEvery is how often a call that waits for people sends a
	// progress notification (when the client asked for them with a
	// progressToken); zero means DefaultProgressEvery.
	ProgressEvery time.Duration
	// Log receives internal errors; nil discards them.
	Log *slog.Logger
	// Receipts signs the receipt of an approved call when its results are
	// handed out (approval.Request.Results), which the upstream and the
	// client get; nil: none.
	Receipts approval.Signer
}

// Handler is the MCP approval gateway: an MCP server (streamable HTTP,
// stateless) that offers the upstream servers' tools behind approval, and
// approval_prompt. Mount it at /mcp for POST, GET and DELETE.
type Handler struct {
	cfg      Config
	log      *slog.Logger
	http     http.Handler
	stopping chan struct{}
	stop     func()

	mu      sync.Mutex
	srv     *mcp.Server
	changed <-chan struct{} // closed when srv's upstream tools are stale
}

// NewHandler returns the gateway.
func NewHandler(cfg Config) (*Handler, error) {
	if cfg.Authenticate == nil || cfg.Approvals == nil || cfg.Waiter == nil || cfg.Store == nil {
		return nil, errors.New("mcpgateway: Authenticate, Approvals, Waiter and Store are required")
	}
	cfg.ProgressEvery = cmp.Or(cfg.ProgressEvery, DefaultProgressEvery)
	h := &Handler{cfg: cfg, log: cfg.Log, stopping: make(chan struct{})}
	if h.log == nil {
		h.log = slog.New(slog.DiscardHandler)
	}
	h.stop = sync.OnceFunc(func() { close(h.stopping) })
	sdk := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return h.server() }, &mcp.StreamableHTTPOptions{
		// Stateless: no session lives in one replica's memory, so any
		// replica answers any request, and a retry after a restart
		// reaches the recorded decision.
		Stateless:                    true,
		Logger:                       h.log,
		MaxRequestBodyBytes:          MaxBodyBytes,
		PropagateRequestCancellation: true,
		// The SDK refuses a request that reaches a loopback address with
		// another Host: DNS-rebinding protection for MCP servers on a
		// developer's machine, which a browser can reach with no
		// credentials. Every request here needs a bearer key a browser
		// never adds on its own, and slackbot is reached over loopback in
		// production too (a proxy or mesh sidecar in the same pod, with the
		// public Host), where the check would refuse every request.
		DisableLocalhostProtection: true,
	})
	h.http = h.authenticated(sdk)
	return h, nil
}

// ServeHTTP implements http.Handler.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) { h.http.ServeHTTP(w, r) }

// Close ends the waits in progress: each waiting client is told to call
// again. A call with an idempotency key keeps its request, and its retry
// (on any replica) gets the decision; one without is withdrawn, since no
// retry could reach it. Call it when the server starts shutting down.
func (h *Handler) Close() { h.stop() }

// server returns the MCP server for the current upstream tools, building
// it again when they changed.
func (h *Handler) server() *mcp.Server {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.srv != nil {
		select {
		case <-h.changed:
		default:
			return h.srv
		}
	}
	var changed <-chan struct{}
	if h.cfg.Upstream != nil {
		changed = h.cfg.Upstream.Changed() // before Offered, so no change is missed
	}
	srv := mcp.NewServer(&mcp.Implementation{Name: "slackbot", Title: "slackbot approval gateway", Version: version()}, &mcp.ServerOptions{
		Instructions: "Tools of this server wait for a person to approve them in Slack before they run; a call may take minutes.",
	})
	srv.AddReceivingMiddleware(h.scoped)
	srv.AddTool(promptTool(), h.handlePrompt)
	if h.cfg.Upstream != nil {
		for _, o := range h.cfg.Upstream.Offered() {
			if o.Tool.Name == PromptToolName || !objectSchema(o.Tool.InputSchema) {
				h.log.Warn("MCP gateway: upstream tool left out", "tool", o.Tool.Name)
				continue
			}
			srv.AddTool(o.Tool, h.handleUpstream(o))
		}
	}
	h.srv, h.changed = srv, changed
	return srv
}

// objectSchema reports whether a tool's input schema is a JSON object
// schema of type "object", as MCP requires (the SDK panics otherwise).
func objectSchema(schema any) bool {
	b, err := json.Marshal(schema)
	if err != nil {
		return false
	}
	var m map[string]any
	return json.Unmarshal(b, &m) == nil && m["type"] == "object"
}

func version() string {
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" {
		return bi.Main.Version
	}
	return "devel"
}

// requestInfo is what the gateway learns of an HTTP request before the SDK
// reads it: who sent it and the JSON-RPC id it carries. The SDK runs each
// stateless request's handlers on a context derived from the HTTP
// request's, which is how they reach it.
type requestInfo struct {
	client Client
	// rpcID is the JSON-RPC id of the request's single message, as sent.
	rpcID string
	// userAgent is the client's User-Agent, shown when the client did not
	// say who it is in MCP terms.
	userAgent string
	// http is the HTTP request's context, done when the client goes away
	// (see clientGone).
	http context.Context
}

type requestInfoKey struct{}

func infoFrom(ctx context.Context) (*requestInfo, bool) {
	ri, ok := ctx.Value(requestInfoKey{}).(*requestInfo)
	return ri, ok
}

// authenticated refuses requests without a configured bearer key (401,
// WWW-Authenticate: Bearer) before the SDK sees them, records the
// request's client and JSON-RPC id for the tool handlers, and acts on a
// notifications/cancelled (see cancelNamed).
func (h *Handler) authenticated(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, ok := h.cfg.Authenticate(r)
		if !ok {
			w.Header().Set("WWW-Authenticate", `Bearer realm="slackbot"`)
			http.Error(w, "a bearer key from API_KEYS is required: Authorization: Bearer <key>", http.StatusUnauthorized)
			return
		}
		// A call waits as long as its route's timeout, far past the
		// server's WriteTimeout (sized for the HTTP API's long polls);
		// its own deadline bounds it (see wait).
		_ = http.NewResponseController(w).SetWriteDeadline(time.Time{})
		ri := &requestInfo{client: c, userAgent: r.UserAgent(), http: r.Context()}
		if r.Method == http.MethodPost && r.Body != nil {
			body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxBodyBytes))
			if err != nil {
				http.Error(w, fmt.Sprintf("the request body is larger than %d bytes", MaxBodyBytes), http.StatusRequestEntityTooLarge)
				return
			}
			r.Body = io.NopCloser(bytes.NewReader(body))
			ri.rpcID = rpcID(body)
			h.cancelNamed(r.Context(), c, body)
		}
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), requestInfoKey{}, ri)))
	})
}

// rpcID returns the id of a single JSON-RPC message, or "" (a batch, a
// notification, or something the SDK will refuse).
func rpcID(body []byte) string {
	var msg struct {
		ID json.RawMessage `json:"id"`
	}
	if len(bytes.TrimSpace(body)) == 0 || bytes.TrimSpace(body)[0] != '{' || json.Unmarshal(body, &msg) != nil {
		return ""
	}
	return string(msg.ID)
}
