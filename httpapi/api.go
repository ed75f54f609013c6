package httpapi

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/slackapprove/slackbot/agentrunner"
	"github.com/slackapprove/slackbot/approval"
	"github.com/slackapprove/slackbot/bot"
	"github.com/slackapprove/slackbot/routing"
	"github.com/slackapprove/slackbot/store"
)

// Limits of the API.
const (
	// MaxBodyBytes bounds every request body.
	MaxBodyBytes = 1 << 20
	// MaxCalls bounds the calls of one request.
	MaxCalls = 100
	// MaxWait bounds a long poll.
	MaxWait = 60 * time.Second
	// MaxTimeout bounds how long a request may wait for decisions.
	MaxTimeout = bot.MaxAPITimeout
	// DefaultMaxOpen and DefaultRate are each key's quota when Config
	// leaves it zero.
	DefaultMaxOpen = 1000
	DefaultRate    = 20.0
)

// Store is what the API needs from the store; *store.Store implements it.
// Its errors are approval's (see approval.Store), except TakeQuota's.
type Store interface {
	// Create stores a new token's record (see approval.Store.Create).
	Create(ctx context.Context, a *approval.Request) error
	// Get returns a token's record or approval.ErrNotFound.
	Get(ctx context.Context, token string) (*approval.Request, error)
	// Owner returns the API client that owns a token, reading only that
	// field; approval.ErrNotFound if the token is unknown or no client owns it.
	Owner(ctx context.Context, token string) (string, error)
	// Answer records answers to pending calls, resolving the token when
	// none is left; approval.ErrNotPending if an answer names a call that
	// is not pending, approval.ErrResolved and friends if the token ended.
	Answer(ctx context.Context, token, by string, results *agentrunner.DeferredToolResults) (*approval.Request, error)
	// Cancel ends an open token; approval.ErrResolved and friends if it ended.
	Cancel(ctx context.Context, token, by string) (*approval.Request, error)
	// Fail ends an open token that could not be asked for.
	Fail(ctx context.Context, token, by, reason string) (*approval.Request, error)
	// ClaimIdempotency makes a client's idempotency key stand for token,
	// or returns what it already stands for (first false).
	ClaimIdempotency(ctx context.Context, client, key, token, fingerprint string, ttl time.Duration) (store.Idempotency, bool, error)
	// KeepIdempotency makes the key live as long as the token's record.
	KeepIdempotency(ctx context.Context, client, key, token string) error
	// ReleaseIdempotency forgets the key if it still stands for token.
	ReleaseIdempotency(ctx context.Context, client, key, token string) error
	// TakeQuota admits one more token for a client, or returns a
	// *store.RateLimitError; ReleaseQuota gives the slot back when the
	// token is not created after all.
	TakeQuota(ctx context.Context, client, token string, expires time.Time, q store.Quota) error
	ReleaseQuota(ctx context.Context, client, token string) error
}

// Waiter blocks until a token ends; *store.Events implements it with one
// shared subscription per process, so long polls hold no Redis connection.
type Waiter interface {
	// Await returns the token's record once it ended, approval.ErrNotFound
	// if it is unknown, or ctx's error.
	Await(ctx context.Context, token string) (*approval.Request, error)
}

// Bot is what the API needs from the Slack side; *bot.Bot implements it.
type Bot interface {
	// AskAPI routes the calls, applies policies, records the token
	// (through req.Create) and posts the cards.
	AskAPI(ctx context.Context, req bot.APIRequest) (*approval.Request, error)
	// UpdateCards re-renders every card of a token from its record.
	UpdateCards(ctx context.Context, token string) error
	// CheckEdit checks arguments that replace a call's own (override_args)
	// against the tool's schema and the route's auto_deny; an error
	// wrapping bot.ErrEditRefused says why they may not.
	CheckEdit(ctx context.Context, e bot.EditedCall) (json.RawMessage, error)
}

// Config is what the API is built from.
type Config struct {
	// Keys are the API clients (ParseKeys(API_KEYS)); at least one.
	Keys   []Key
	Store  Store
	Events Waiter
	Bot    Bot
	// Routes, when set, is checked against the routes keys are restricted
	// to, so a typo in API_KEYS stops start-up.
	Routes *routing.Routes
	// Log receives internal errors; nil discards them.
	Log *slog.Logger
	// AllowPrivateCallbacks lets callback_url point at loopback, private
	// and link-local addresses, and use plain http to loopback: for `slackbot
	// dev` and tests. Off, such URLs are refused (no SSRF into the
	// cluster or the cloud's metadata service).
	AllowPrivateCallbacks bool
	// MaxOpen bounds each key's requests open at once (API_MAX_OPEN);
	// zero means DefaultMaxOpen, negative no bound.
	MaxOpen int
	// Rate bounds the requests each key creates per second, in bursts of
	// up to twice as many (API_RATE); zero means DefaultRate, negative no
	// bound. Both are counted in Redis, so they hold across replicas.
	Rate float64
	// Resolver looks up callback hosts when a request is created, so one
	// that resolves to an address callbacks may not reach is refused at
	// once; nil means net.DefaultResolver.
	Resolver Resolver
}

// API is slackbot's HTTP API for agents in any language: /v1/approvals
// and /v1/openapi.json. Mount it at "/v1/". Close waits for the card
// updates it started.
type API struct {
	keys   keyring
	store  Store
	events Waiter
	bot    Bot
	log    *slog.Logger
	mux    *http.ServeMux

	allowPrivateCallbacks bool
	resolver              Resolver
	quota                 store.Quota

	// stopping ends the long polls when the server shuts down.
	stopping context.Context
	stop     context.CancelFunc
	wg       sync.WaitGroup
}

// New returns the API. It returns an error if there are no keys or a key
// names a route that Routes does not have.
func New(cfg Config) (*API, error) {
	if len(cfg.Keys) == 0 {
		return nil, errors.New("httpapi: no API keys")
	}
	if cfg.Store == nil || cfg.Events == nil || cfg.Bot == nil {
		return nil, errors.New("httpapi: Store, Events and Bot are required")
	}
	if cfg.Routes != nil {
		known := map[string]bool{}
		for _, r := range cfg.Routes.Routes {
			known[r.Name] = true
		}
		var bad []string
		for i, k := range cfg.Keys {
			for _, r := range k.Routes {
				if !known[r] {
					bad = append(bad, fmt.Sprintf("entry %d (%s) names unknown route %q", i+1, k.Name, r))
				}
			}
		}
		if len(bad) > 0 {
			return nil, fmt.Errorf("%w: %s", ErrInvalidKeys, strings.Join(bad, "; "))
		}
	}
	keys := make(keyring, len(cfg.Keys))
	for i, k := range cfg.Keys {
		if k.digest == ([32]byte{}) {
			parsed, err := parseKey(k.Secret, i+1)
			if err != nil {
				return nil, fmt.Errorf("%w: key %s: %v", ErrInvalidKeys, k.Name, err)
			}
			k.digest = parsed.digest
		}
		keys[i] = k
	}
	log := cfg.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	a := &API{keys: keys, store: cfg.Store, events: cfg.Events, bot: cfg.Bot, log: log,
		allowPrivateCallbacks: cfg.AllowPrivateCallbacks, resolver: cmp.Or[Resolver](cfg.Resolver, net.DefaultResolver),
		quota: store.Quota{MaxOpen: max(cmp.Or(cfg.MaxOpen, DefaultMaxOpen), 0), Rate: max(cmp.Or(cfg.Rate, DefaultRate), 0)}}
	a.stopping, a.stop = context.WithCancel(context.Background())
	a.mux = a.routes()
	return a, nil
}

// routes is the API, readable in one place.
func (a *API) routes() *http.ServeMux {
	mux := http.NewServeMux()
	mux.Handle("GET /v1/openapi.json", handleOpenAPI())
	mux.Handle("POST /v1/approvals", a.authed(a.handleCreate))
	mux.Handle("GET /v1/approvals/{token}", a.authed(a.handleGet))
	mux.Handle("POST /v1/approvals/{token}/results", a.authed(a.handleResults))
	mux.Handle("DELETE /v1/approvals/{token}", a.authed(a.handleCancel))
	// Everything else under /v1/ answers in JSON too.
	for path, allow := range map[string]string{
		"/v1/approvals":                 "POST",
		"/v1/approvals/{token}":         "GET, DELETE",
		"/v1/approvals/{token}/results": "POST",
		"/v1/openapi.json":              "GET",
	} {
		mux.Handle(path, methodNotAllowed(a.log, allow))
	}
	mux.Handle("/v1/", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		writeError(w, r, a.log, &Error{Status: http.StatusNotFound, Code: CodeNotFound, Message: "no such endpoint; see /v1/openapi.json"})
	}))
	return mux
}

// ServeHTTP implements http.Handler.
func (a *API) ServeHTTP(w http.ResponseWriter, r *http.Request) { a.mux.ServeHTTP(w, r) }

// Close ends the long polls in progress (they answer with the current
// state, and clients poll again, e.g. on another replica) and waits for
// the background work requests started (card updates). Call it when the
// server starts shutting down, e.g. with http.Server.RegisterOnShutdown,
// so long polls do not hold the shutdown for up to a minute.
func (a *API) Close() {
	a.stop()
	a.wg.Wait()
}

func methodNotAllowed(log *slog.Logger, allow string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Allow", allow)
		writeError(w, r, log, &Error{Status: http.StatusMethodNotAllowed, Code: CodeMethodNotAllowed,
			Message: fmt.Sprintf("%s is not allowed here; use %s", r.Method, allow)})
	})
}

// authed authenticates the bearer key before h runs.
func (a *API) authed(h func(w http.ResponseWriter, r *http.Request, k *Key) error) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tok, ok := bearer(r)
		var k *Key
		if ok {
			k, ok = a.keys.match(tok)
		}
		if !ok {
			writeError(w, r, a.log, errUnauthorized)
			return
		}
		if err := h(w, r, k); err != nil {
			writeError(w, r, a.log, err)
		}
	})
}

// goAsync runs f after the response, on a goroutine the API owns, with a
// deadline of its own.
func (a *API) goAsync(ctx context.Context, what string, f func(ctx context.Context) error) {
	a.wg.Add(1)
	ctx = context.WithoutCancel(ctx)
	go func() {
		defer a.wg.Done()
		ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
		defer cancel()
		if err := f(ctx); err != nil {
			a.log.ErrorContext(ctx, what+" failed", "err", err)
		}
	}()
}
