// Package systest builds the core of slackbot for end-to-end tests the
// way the program does: the store over Redis with its receipt signer, the
// routes, approval.Service with the ports the store provides
// (store.ServiceConfig, as cmd/slackbot), and the Tokens that sweep
// through the Service (store.NewServiceTokens) and update the cards of
// the requests they expire. The harnesses of the doors (httpapi,
// mcpgateway) add only their door; cmd/slackbot's harness runs the real
// program and shares the log check.
//
// Everything runs under one context and stops when the test ends, after
// whatever the test registered later (its door) has stopped; the log is
// kept, shown when the test fails, and checked for secrets.
package systest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/slackapprove/slackbot/approval"
	"github.com/slackapprove/slackbot/internal/approvaltest"
	"github.com/slackapprove/slackbot/receipt"
	"github.com/slackapprove/slackbot/routing"
	"github.com/slackapprove/slackbot/store"
	"github.com/slackapprove/slackbot/store/redistest"
)

// Options say what differs between the systems the harnesses build; the
// zero value is a system on an embedded Redis, with no routes, the wall
// clock and the recording poster.
type Options struct {
	// Redis and Prefix are the Redis the store uses and its keys' prefix;
	// nil: an embedded Redis of the test's own (redistest.Embedded).
	Redis  redis.UniversalClient
	Prefix string
	// ReplicaOf, when set, makes this system another replica of that one:
	// on its Redis, through a client of its own, under its prefix.
	ReplicaOf *System
	// Routes is the routing; nil: none (see ParseRoutes).
	Routes *routing.Routes
	// Now is the clock of the store and the Service; nil: time.Now.
	Now func() time.Time
	// Poster shows requests to people; nil: a recording
	// approvaltest.Poster over Routes (System.Cards).
	Poster approval.Poster
	// Directory expands usergroups; nil: none.
	Directory approval.Directory
	// Tools checks edited arguments against their tool's schema; nil: none.
	Tools approval.Tools
	// ReceiptKey signs receipts; nil: TestReceiptKey.
	ReceiptKey []byte
	// Owner names this replica in claims and job consumers; empty: random.
	Owner string
	// SweepEvery is how often due requests expire; zero: 20ms.
	SweepEvery time.Duration
	// Log is the system's log (NewLog: the level, the secrets it must
	// never hold); nil: Info and above, no secrets.
	Log *Log
}

// TestReceiptKey is the 32-byte key receipts are signed with unless
// Options.ReceiptKey says otherwise.
var TestReceiptKey = []byte("systest-receipt-key-32-bytes-ok!")

// System is the core of slackbot, running until the test ends.
type System struct {
	Store   *store.Store
	Service *approval.Service
	Tokens  *store.Tokens
	Routes  *routing.Routes
	// Cards is the recording poster; nil when Options.Poster was given.
	Cards *approvaltest.Poster
	// Receipts verifies the receipts the doors hand out; Signer signs
	// them (a door's Config.Receipts).
	Receipts *receipt.KeySet
	Signer   *receipt.Signer
	// Log is the system's logger (Options.Log's).
	Log    *slog.Logger
	Redis  redis.UniversalClient
	Prefix string
	Owner  string

	t     testing.TB
	ctx   context.Context
	loops sync.WaitGroup
}

// New builds the system, starts its loop (the Tokens' subscriber, sweep
// and heartbeat) and returns once the Tokens are ready. It stops them
// when t ends, after what the test registered later (its door): the
// Service's card updates finish, then the loops end, then the log is
// checked.
func New(t testing.TB, o Options) *System {
	t.Helper()
	switch {
	case o.ReplicaOf != nil:
		o.Redis, o.Prefix = ownClient(t, o.ReplicaOf.Redis), o.ReplicaOf.Prefix
	case o.Redis == nil:
		o.Redis, o.Prefix = redistest.Embedded(t)
	}
	if o.Routes == nil {
		o.Routes = &routing.Routes{}
	}
	if o.SweepEvery == 0 {
		o.SweepEvery = 20 * time.Millisecond
	}
	if o.Owner == "" {
		o.Owner = "replica-" + strings.TrimSuffix(redistest.Prefix(t)[len("test:"):], ":")
	}
	key, err := receipt.NewKey(cmpBytes(o.ReceiptKey, TestReceiptKey))
	if err != nil {
		t.Fatalf("systest: receipt key: %v", err)
	}
	signer, err := receipt.NewSigner(key, "", 0)
	if err != nil {
		t.Fatalf("systest: receipt signer: %v", err)
	}
	logs := o.Log
	if logs == nil {
		logs = NewLog(t, slog.LevelInfo)
	}
	s := &System{
		Routes: o.Routes, Receipts: receipt.NewKeySet(key), Log: logs.Logger,
		Redis: o.Redis, Prefix: o.Prefix, Owner: o.Owner, t: t,
	}
	s.Signer = signer
	s.Store = store.New(o.Redis, store.Options{Prefix: o.Prefix, Now: o.Now, Owner: o.Owner})
	if o.Poster == nil {
		s.Cards = approvaltest.NewPoster()
		s.Cards.Routes = o.Routes
		o.Poster = s.Cards
	}
	s.Service = approval.New(s.Store.ServiceConfig(approval.Config{
		Poster: o.Poster, Directory: o.Directory, Routes: o.Routes, Tools: o.Tools, Log: s.Log,
	}, s.Store.JobQueue(0)))
	s.Tokens = store.NewServiceTokens(s.Store, expireNow{s.Service}, store.TokensOptions{Owner: o.Owner, SweepEvery: o.SweepEvery, Logger: s.Log})
	s.start()
	return s
}

// start runs the loops under one context and registers the shutdown.
func (s *System) start() {
	t := s.t
	ctx, cancel := context.WithCancel(context.Background())
	s.ctx = ctx
	t.Cleanup(func() {
		s.Service.Close()
		cancel()
		s.loops.Wait()
	})
	s.Go("tokens", s.Tokens.Run)
	select {
	case <-s.Tokens.Ready():
	case <-time.After(10 * time.Second):
		t.Fatal("systest: tokens not ready")
	}
}

// expireNow is the Service's sweep followed by what the job the sweep
// queued for each expired request does in the program (its cards
// updated): no job consumer runs here, since its blocking read would hold
// a Redis connection the doors' tests count, and the Slack runs whose
// other jobs it does are only in cmd/slackbot's harness. The job stays
// queued, unread.
type expireNow struct{ svc *approval.Service }

func (e expireNow) Sweep(ctx context.Context) ([]*approval.Request, error) {
	expired, err := e.svc.Sweep(ctx)
	for _, r := range expired {
		if uerr := e.svc.Expire(ctx, r.Token); uerr != nil && !errors.Is(uerr, approval.ErrNotFound) {
			err = errors.Join(err, fmt.Errorf("update the cards of %s: %w", r.Token, uerr))
		}
	}
	return expired, err
}

// Go runs loop (a door's background work: callback delivery) with the
// system's until the test ends; a loop that returns an error, even as it
// stops, fails the test.
func (s *System) Go(name string, loop func(ctx context.Context) error) {
	s.loops.Go(func() {
		if err := loop(s.ctx); err != nil {
			s.t.Errorf("systest: %s: %v", name, err)
		}
	})
}

// ParseRoutes parses a routing file for a test, failing t if it is
// invalid.
func ParseRoutes(t testing.TB, yaml string) *routing.Routes {
	t.Helper()
	routes, err := routing.ParseRoutes([]byte(yaml), "routes.yaml")
	if err != nil {
		t.Fatalf("systest: routes: %v", err)
	}
	return routes
}

// ownClient returns a client of the Redis rdb is a client of, closed when
// t ends, as another process would have.
func ownClient(t testing.TB, rdb redis.UniversalClient) redis.UniversalClient {
	c, ok := rdb.(*redis.Client)
	if !ok {
		t.Fatalf("systest: a replica needs a single-node Redis, not a %T", rdb)
	}
	own := redis.NewClient(c.Options())
	t.Cleanup(func() { _ = own.Close() })
	return own
}

func cmpBytes(b, def []byte) []byte {
	if len(b) == 0 {
		return def
	}
	return b
}

// Log is a logger whose output a test keeps: shown if the test fails,
// and checked for secrets when the test ends.
type Log struct {
	*slog.Logger
	t       testing.TB
	secrets []string

	mu  sync.Mutex
	buf bytes.Buffer
}

// NewLog returns a logger at level whose output must never hold secrets
// (API keys, signing secrets, tokens): when t ends, after everything
// started later has stopped, the test fails if one is in the log, and a
// failed test shows the log.
func NewLog(t testing.TB, level slog.Level, secrets ...string) *Log {
	l := &Log{t: t, secrets: secrets}
	l.Logger = slog.New(slog.NewTextHandler(l, &slog.HandlerOptions{Level: level}))
	t.Cleanup(l.check)
	return l
}

// Write implements io.Writer for the log's handler.
func (l *Log) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

// String returns what was logged so far.
func (l *Log) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

// check fails the test if a secret was logged, and shows the log if the
// test failed.
func (l *Log) check() {
	l.t.Helper()
	logged := l.String()
	for _, s := range l.secrets {
		if s != "" && strings.Contains(logged, s) {
			l.t.Errorf("a secret (%.4s…) is in the log", s)
		}
	}
	if l.t.Failed() && logged != "" {
		l.t.Logf("the system's log:\n%s", logged)
	}
}
