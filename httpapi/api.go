package httpapi

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/slackapprove/slackbot/approval"
	"github.com/slackapprove/slackbot/routing"
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
	MaxTimeout = approval.MaxTimeout
	// DefaultMaxOpen and DefaultRate are each key's quota when Config
	// leaves it zero.
	DefaultMaxOpen = 1000
	DefaultRate    = 20.0
)

// Config is what the API is built from.
type Config struct {
	// Keys are the API clients (ParseKeys(API_KEYS)); at least one.
	Keys []Key
	// Approvals opens, decides and cancels requests (*approval.Service).
	Approvals Approvals
	// Store keeps owners, idempotency keys and quotas (*store.Store).
	Store  Store
	Waiter Waiter
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
	// Receipts signs the receipt of every approved call in the results
	// the API hands out (approval.Request.Results); nil: none.
	Receipts approval.Signer
}

// API is slackbot's HTTP API for agents in any language: /v1/approvals
// and /v1/openapi.json. Mount it at "/v1/".
type API struct {
	handler http.Handler
	// stop ends the long polls when the server shuts down.
	stop context.CancelFunc
}

// New returns the API. It returns an error if there are no keys or a key
// names a route that Routes does not have.
func New(cfg Config) (*API, error) {
	if len(cfg.Keys) == 0 {
		return nil, errors.New("httpapi: no API keys")
	}
	if cfg.Approvals == nil || cfg.Store == nil || cfg.Waiter == nil {
		return nil, errors.New("httpapi: Approvals, Store and Events are required")
	}
	if cfg.Routes != nil {
		var bad []string
		for i, k := range cfg.Keys {
			for _, r := range k.Routes {
				if cfg.Routes.Named(r) == nil {
					bad = append(bad, fmt.Sprintf("entry %d (%s) names unknown route %q", i+1, k.Name, r))
				}
			}
		}
		if len(bad) > 0 {
			return nil, fmt.Errorf("%w: %s", ErrInvalidKeys, strings.Join(bad, "; "))
		}
	}
	keys, err := newKeyring(cfg.Keys)
	if err != nil {
		return nil, err
	}
	log := cfg.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	stopping := make(chan struct{})
	h := newServer(deps{
		keys: keys, approvals: cfg.Approvals, store: cfg.Store, events: cfg.Waiter, log: log,
		allowPrivateCallbacks: cfg.AllowPrivateCallbacks, resolver: cmp.Or[Resolver](cfg.Resolver, net.DefaultResolver),
		quota:    QuotaOf(cfg.MaxOpen, cfg.Rate),
		receipts: cfg.Receipts,
		stopping: stopping,
	})
	return &API{handler: h, stop: sync.OnceFunc(func() { close(stopping) })}, nil
}

// QuotaOf is each key's quota as Config's MaxOpen and Rate say it (zero:
// the defaults, negative: no bound), for every door that counts against
// it.
func QuotaOf(maxOpen int, rate float64) approval.Quota {
	return approval.Quota{MaxOpen: max(cmp.Or(maxOpen, DefaultMaxOpen), 0), Rate: max(cmp.Or(rate, DefaultRate), 0)}
}

// newKeyring checks every key's digest, parsing keys built by hand.
func newKeyring(ks []Key) (keyring, error) {
	keys := make(keyring, len(ks))
	for i, k := range ks {
		if k.digest == ([32]byte{}) {
			parsed, err := parseKey(k.Secret, i+1)
			if err != nil {
				return nil, fmt.Errorf("%w: key %s: %v", ErrInvalidKeys, k.Name, err)
			}
			k.digest = parsed.digest
		}
		keys[i] = k
	}
	return keys, nil
}

// ServeHTTP implements http.Handler.
func (a *API) ServeHTTP(w http.ResponseWriter, r *http.Request) { a.handler.ServeHTTP(w, r) }

// Close ends the long polls in progress (they answer with the current
// state, and clients poll again, e.g. on another replica). Call it when
// the server starts shutting down, e.g. with http.Server.RegisterOnShutdown,
// so long polls do not hold the shutdown for up to a minute. The card
// updates requests started belong to the Approvals (approval.Service.Close).
func (a *API) Close() { a.stop() }
