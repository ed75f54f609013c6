// Package devui is the Slack emulator page of `slackbot dev`: a local web
// page that looks like Slack enough for an approver to recognise the
// approval card, backed by the fake workspace of package slackfake.
//
// The page shows the channels, messages, threads, ephemeral messages and
// modals of the fake workspace, rendering the Block Kit slackbot posts. It
// lets a person act as any member of the workspace: a message posted on the
// page is stored in the fake workspace and delivered to slackbot's real
// Events API endpoint as a signed event_callback, and a click or a modal
// submission is delivered to its real interactivity endpoint as a signed
// payload shaped like Slack's. slackbot cannot tell the page from Slack.
//
// The page is self-contained (embedded HTML, CSS and JavaScript, no CDN,
// no web fonts) so `slackbot dev` works offline. It renders every text with
// DOM APIs, never as HTML, and follows the workspace live through
// server-sent events.
package devui

import (
	"embed"
	"io/fs"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/slackapprove/slackbot/internal/slackfake"
)

// Config holds what the emulator needs.
type Config struct {
	// Slack is the emulated workspace.
	Slack *slackfake.Server
	// SigningSecret is the secret slackbot verifies requests with; every
	// payload the page sends is signed with it.
	SigningSecret string
	// Webhook is the base URL of slackbot's own HTTP server, e.g.
	// "http://127.0.0.1:8080": payloads go to Webhook+"/slack/events" and
	// Webhook+"/slack/interactivity".
	Webhook string
	// Client sends the payloads; nil means a client with a 10s timeout.
	Client *http.Client
	// Now is the clock used to sign payloads and stamp events; nil means
	// time.Now.
	Now func() time.Time
	// Log receives webhook failures; nil discards them.
	Log *slog.Logger
	// Clock, when set, is slackbot's clock, which the page may move
	// forward (POST /clock) to show what happens later: reminders,
	// escalations, expiry, grants that end.
	Clock *Clock
}

// Handler serves the emulator page and its API. Mount it under a prefix
// with http.StripPrefix; all its links are relative. Create it with New.
//
// Its routes, relative to where it is mounted:
//
//	GET  /                 the page
//	GET  /static/…         its CSS and JavaScript
//	GET  /state            the workspace as JSON
//	GET  /changes          the workspace's changes, as server-sent events
//	POST /post             a person writes a message → event_callback
//	POST /click            a person clicks a button → block_actions
//	POST /submit           a person submits a modal → view_submission
//	POST /close            a person cancels a modal (→ view_closed)
//	POST /clock            move slackbot's clock forward (Config.Clock)
//	POST /response/{id}    the response_url of a click, for slackbot
//
// Every payload is signed with Config.SigningSecret. A POST answers JSON:
// {"ok":true,…} with slackbot's status and body, or {"ok":false,"error":…}
// with 400 (a request that cannot be), 404, 409 (the page is behind the
// workspace), 413 (over 64 KB), 415 (not application/json) or 502 (slackbot
// refused the payload or did not answer). A modal's validation errors, from
// Slack's own checks or slackbot's response_action "errors", come back as
// 200 {"ok":false,"errors":{block_id: message}}.
type Handler struct {
	slack   *slackfake.Server
	secret  string
	webhook string
	client  *http.Client
	now     func() time.Time
	log     *slog.Logger
	clock   *Clock
	mux     *http.ServeMux

	botMu sync.Mutex
	bot   string // the app's bot id, once known

	respMu    sync.Mutex
	responses map[string]*responseTarget // by response_url id

	// done ends the event streams when the server shuts down.
	done      chan struct{}
	closeOnce sync.Once
}

//go:embed static
var static embed.FS

// defaultTimeout bounds a webhook call when Config.Client is nil. Slack
// itself gives up after three seconds; a local debugger may take longer.
const defaultTimeout = 10 * time.Second

// New returns the emulator for cfg.Slack.
func New(cfg Config) *Handler {
	h := &Handler{
		slack:   cfg.Slack,
		secret:  cfg.SigningSecret,
		webhook: cfg.Webhook,
		client:  cfg.Client,
		now:     cfg.Now,
		log:     cfg.Log,
		clock:   cfg.Clock,
		done:    make(chan struct{}),

		responses: map[string]*responseTarget{},
	}
	if h.client == nil {
		h.client = &http.Client{Timeout: defaultTimeout}
	}
	if h.now == nil {
		h.now = time.Now
	}
	if h.log == nil {
		h.log = slog.New(slog.DiscardHandler)
	}
	h.mux = h.routes()
	return h
}

// ServeHTTP implements http.Handler.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h.mux.ServeHTTP(w, r)
}

// Close ends the open event streams, so that http.Server.Shutdown does
// not wait for browsers to hang up: register it with
// http.Server.RegisterOnShutdown. The page reconnects on its own to a
// server that is still running.
func (h *Handler) Close() {
	h.closeOnce.Do(func() { close(h.done) })
}

// routes is the emulator's API, relative to where it is mounted.
func (h *Handler) routes() *http.ServeMux {
	assets, err := fs.Sub(static, "static")
	if err != nil {
		panic(err) // the embedded directory is part of the binary
	}
	mux := http.NewServeMux()
	mux.Handle("GET /{$}", h.handlePage(assets))
	mux.Handle("GET /static/", noCache(http.StripPrefix("/static/", http.FileServerFS(assets))))
	mux.Handle("GET /state", h.handleState())
	mux.Handle("GET /changes", h.handleChanges())
	mux.Handle("POST /home/open", h.handleHomeOpen())
	mux.Handle("POST /home/click", h.handleHomeClick())
	mux.Handle("POST /post", h.handlePost())
	mux.Handle("POST /click", h.handleClick())
	mux.Handle("POST /submit", h.handleSubmit())
	mux.Handle("POST /close", h.handleClose())
	mux.Handle("POST /clock", h.handleClock())
	mux.Handle("POST /response/{id}", h.handleResponse())
	return mux
}

// pagePolicy keeps the page to its own assets: no inline script, nothing
// loaded from elsewhere, so text from the workspace can never run.
const pagePolicy = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

func (h *Handler) handlePage(assets fs.FS) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		page, err := fs.ReadFile(assets, "index.html")
		if err != nil {
			http.Error(w, "page missing from the binary", http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Header().Set("Content-Security-Policy", pagePolicy)
		w.Header().Set("Cache-Control", "no-cache")
		w.Header().Set("X-Content-Type-Options", "nosniff")
		_, _ = w.Write(page)
	})
}

// noCache makes browsers revalidate assets, so a rebuilt binary's page is
// seen on reload.
func noCache(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "no-cache")
		w.Header().Set("X-Content-Type-Options", "nosniff")
		next.ServeHTTP(w, r)
	})
}
