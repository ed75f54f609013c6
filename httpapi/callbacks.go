package httpapi

import (
	"bytes"
	"cmp"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"time"

	"github.com/slackapprove/slackbot/approval"
)

// Headers of a callback request.
const (
	HeaderTimestamp = "X-Slackbot-Timestamp" // Unix seconds when the attempt was signed
	HeaderSignature = "X-Slackbot-Signature" // "v1=" + hex HMAC-SHA256 of timestamp + "." + body
	HeaderAttempt   = "X-Slackbot-Attempt"   // 1 for the first attempt
)

// Defaults of CallbacksConfig.
const (
	DefaultCallbackAttempts = 8
	DefaultCallbackTimeout  = 10 * time.Second
)

// CallbackQueue is the queue of callback deliveries; *store.CallbackQueue
// implements it.
type CallbackQueue interface {
	// Read returns new jobs for consumer, blocking up to block.
	Read(ctx context.Context, consumer string, block time.Duration) ([]approval.CallbackJob, error)
	// Reclaim takes over jobs another consumer left idle for minIdle.
	Reclaim(ctx context.Context, consumer string, minIdle time.Duration) ([]approval.CallbackJob, error)
	// ReclaimDead takes over the jobs of consumers whose process died.
	ReclaimDead(ctx context.Context, consumer string) ([]approval.CallbackJob, error)
	// Ack removes handled jobs.
	Ack(ctx context.Context, ids ...string) error
	// Retry acknowledges job and schedules its next attempt at at.
	Retry(ctx context.Context, job approval.CallbackJob, at time.Time) error
	// Promote moves the attempts that are due back onto the queue.
	Promote(ctx context.Context) (int, error)
}

// CallbackStore is what callbacks need from the store; *store.Store
// implements it.
type CallbackStore interface {
	// Get returns a token's record.
	Get(ctx context.Context, token string) (*approval.Request, error)
	// AuditCallback records an attempt in the audit stream.
	AuditCallback(ctx context.Context, a approval.CallbackAttempt) error
}

// CallbacksConfig configures Callbacks.
type CallbacksConfig struct {
	// AllowPrivate lets callbacks reach loopback, private and link-local
	// addresses (dev and tests); off, the default client refuses every
	// address that is not public unicast (see callbackGuard).
	AllowPrivate bool
	// Resolver looks up callback hosts for the default client; nil means
	// net.DefaultResolver. Every address it returns is checked when dialled.
	Resolver Resolver
	// Keys are the API clients; a callback is signed with the secret of
	// the client that created the token (Key.CallbackSecret).
	Keys  []Key
	Store CallbackStore
	Queue CallbackQueue
	// Consumer names this replica in the queue's consumer group; it must
	// be stable across restarts and differ between replicas.
	Consumer string
	// Client makes the requests; default one with a 10 s timeout that
	// follows redirects only within the same scheme and host.
	Client *http.Client
	// Attempts bounds the attempts of one delivery; default 8.
	Attempts int
	// Backoff is how long to wait after the given failed attempt (from
	// 1); default 5 s doubling each time, ±20% jitter: 8 attempts span
	// about 10 minutes.
	Backoff func(attempt int) time.Duration
	// Poll is how long one read of the queue blocks, and so how often
	// due retries are promoted; default 1 s.
	Poll time.Duration
	// ReclaimIdle is how long a job may sit with a consumer that does not
	// finish it before another replica takes it over; default 1 minute
	// (longer than an attempt's timeout).
	ReclaimIdle time.Duration
	// Concurrency bounds the attempts in flight in this replica; default 16.
	Concurrency int
	// Now is the clock signatures and retries use; nil means time.Now.
	Now func() time.Time
	// Log receives delivery failures; nil discards them.
	Log *slog.Logger
	// Observe, when set, is told of each attempt as it starts, and
	// returns the context it is made in and a function told how it
	// ended (nil: delivered); slackbot traces attempts with it.
	Observe func(ctx context.Context, job approval.CallbackJob) (context.Context, func(err error))
	// WrapTransport, when set, wraps the default Client's transport (a
	// tracing transport); it is not applied to a Client given.
	WrapTransport func(http.RoundTripper) http.RoundTripper
	// Receipts signs the receipts of the results a callback hands out,
	// as Config.Receipts does for the API's answers; nil: none.
	Receipts approval.Signer
	// Metrics, when set, is told how each attempt ended: one of
	// CallbackResults.
	Metrics CallbackMetrics
}

// CallbackMetrics counts callback attempts by result. It is an interface
// so that this package does not import a metrics library
// (docs/ARCHITECTURE.md, "Import rules"): slackbot's metrics implement it.
type CallbackMetrics interface {
	Callback(result string)
}

// How a callback attempt ended, as CallbackMetrics is told it.
const (
	// CallbackResultDelivered: the receiver answered 2xx.
	CallbackResultDelivered = "delivered"
	// CallbackResultRetried: it failed; another attempt is scheduled.
	CallbackResultRetried = "retried"
	// CallbackResultFailed: it failed and no attempt is left.
	CallbackResultFailed = "failed"
	// CallbackResultRefused: slackbot refused to make it: the callback
	// URL resolves to an address that is not public, or the request or
	// its API key can no longer be read to sign it.
	CallbackResultRefused = "refused"
)

// CallbackResults lists every result; metrics start each at zero.
var CallbackResults = []string{CallbackResultDelivered, CallbackResultRetried, CallbackResultFailed, CallbackResultRefused}

// Callbacks delivers the outcome of each token that has a callback URL,
// when it is resolved, expires, is cancelled or fails: a POST of the same
// JSON as GET /v1/approvals/{token}, signed with the client's callback
// secret, retried with backoff, each attempt recorded in the audit stream.
// Every replica runs one; the queue gives each delivery to one of them.
type Callbacks struct {
	cfg  CallbacksConfig
	keys keyring
	log  *slog.Logger
}

// NewCallbacks returns the callback deliverer; call Run.
func NewCallbacks(cfg CallbacksConfig) *Callbacks {
	if cfg.Client == nil {
		transport := http.DefaultTransport.(*http.Transport).Clone()
		// Checked on the address actually dialled, after DNS: a name that
		// resolves (or rebinds) to an internal address is refused.
		transport.DialContext = dialContext(cmp.Or[Resolver](cfg.Resolver, net.DefaultResolver), !cfg.AllowPrivate)
		if !cfg.AllowPrivate {
			transport.Proxy = nil
		}
		var rt http.RoundTripper = transport
		if cfg.WrapTransport != nil {
			rt = cfg.WrapTransport(rt)
		}
		cfg.Client = &http.Client{Timeout: DefaultCallbackTimeout, CheckRedirect: sameHostRedirects, Transport: rt}
	}
	if cfg.Attempts <= 0 {
		cfg.Attempts = DefaultCallbackAttempts
	}
	if cfg.Backoff == nil {
		cfg.Backoff = DefaultBackoff
	}
	if cfg.Poll <= 0 {
		cfg.Poll = time.Second
	}
	if cfg.ReclaimIdle <= 0 {
		cfg.ReclaimIdle = time.Minute
	}
	if cfg.Concurrency <= 0 {
		cfg.Concurrency = 16
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	log := cfg.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Callbacks{cfg: cfg, keys: keyring(cfg.Keys), log: log}
}

// DefaultBackoff waits 5 s after the first failed attempt and doubles the
// wait after each, with ±20% jitter so receivers that fail together are
// not retried together.
func DefaultBackoff(attempt int) time.Duration {
	d := 5 * time.Second << min(max(attempt-1, 0), 10)
	return time.Duration(float64(d) * (0.8 + 0.4*rand.Float64()))
}

// sameHostRedirects follows at most 3 redirects, and none that leave the
// scheme and host of the callback URL.
func sameHostRedirects(req *http.Request, via []*http.Request) error {
	if len(via) >= 3 || req.URL.Host != via[0].URL.Host || req.URL.Scheme != via[0].URL.Scheme {
		return http.ErrUseLastResponse
	}
	return nil
}

// Run delivers callbacks until ctx ends; it returns nil then.
func (c *Callbacks) Run(ctx context.Context) error {
	sem := make(chan struct{}, c.cfg.Concurrency)
	var wg sync.WaitGroup
	defer wg.Wait()
	for ctx.Err() == nil {
		if _, err := c.cfg.Queue.Promote(ctx); err != nil && ctx.Err() == nil {
			c.log.ErrorContext(ctx, "promote callback retries", "err", err)
		}
		jobs, err := c.cfg.Queue.Read(ctx, c.cfg.Consumer, c.cfg.Poll)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			c.log.ErrorContext(ctx, "read callback queue", "err", err)
			sleep(ctx, c.cfg.Poll)
			continue
		}
		dead, err := c.cfg.Queue.ReclaimDead(ctx, c.cfg.Consumer)
		if err != nil && ctx.Err() == nil {
			c.log.ErrorContext(ctx, "reclaim callback jobs of stopped replicas", "err", err)
		}
		stale, err := c.cfg.Queue.Reclaim(ctx, c.cfg.Consumer, c.cfg.ReclaimIdle)
		if err != nil && ctx.Err() == nil {
			c.log.ErrorContext(ctx, "reclaim callback jobs", "err", err)
		}
		for _, j := range append(append(jobs, dead...), stale...) {
			select {
			case sem <- struct{}{}:
			case <-ctx.Done():
				return nil
			}
			wg.Go(func() {
				defer func() { <-sem }()
				c.Deliver(ctx, j)
			})
		}
	}
	return nil
}

func sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}

// Deliver makes one attempt of a job and settles it: acknowledged when
// delivered or out of attempts, rescheduled otherwise. Run calls it; it is
// exported for tests and tools.
func (c *Callbacks) Deliver(ctx context.Context, job approval.CallbackJob) {
	rec, err := c.cfg.Store.Get(ctx, job.Token)
	if err != nil {
		if ctx.Err() != nil {
			return // left pending: reclaimed later
		}
		c.settle(ctx, job, "", 0, fmt.Errorf("read the token: %w", err), false)
		return
	}
	key, ok := c.keys.byName(rec.Origin.Client)
	if !ok || rec.CallbackURL == "" {
		c.settle(ctx, job, rec.Origin.Client, 0, errors.New("the API client is no longer configured in API_KEYS; the callback cannot be signed"), false)
		return
	}
	status, err := c.attempt(ctx, job, rec, key)
	if err != nil && ctx.Err() != nil {
		return // shutting down: the job is reclaimed and attempted again
	}
	c.settle(ctx, job, rec.Origin.Client, status, err, true)
}

// attempt posts the callback of job, under the Observe hook if set.
func (c *Callbacks) attempt(ctx context.Context, job approval.CallbackJob, rec *approval.Request, key *Key) (int, error) {
	if c.cfg.Observe == nil {
		return c.post(ctx, rec, key, job.Attempt)
	}
	ctx, done := c.cfg.Observe(ctx, job)
	status, err := c.post(ctx, rec, key, job.Attempt)
	done(err)
	return status, err
}

// post makes one signed request and returns the receiver's status.
func (c *Callbacks) post(ctx context.Context, rec *approval.Request, key *Key, attempt int) (int, error) {
	body, err := json.Marshal(view(rec, c.cfg.Receipts))
	if err != nil {
		return 0, fmt.Errorf("encode callback: %w", err)
	}
	ts := strconv.FormatInt(c.cfg.Now().Unix(), 10)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, rec.CallbackURL, bytes.NewReader(body))
	if err != nil {
		return 0, fmt.Errorf("callback request: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "slackbot-callback/1")
	req.Header.Set(HeaderTimestamp, ts)
	req.Header.Set(HeaderSignature, Sign(key.CallbackSecret(), ts, body))
	req.Header.Set(HeaderAttempt, strconv.Itoa(attempt))
	resp, err := c.cfg.Client.Do(req)
	if err != nil {
		return 0, redact(err)
	}
	// The body is ignored; reading a little lets the connection be reused.
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 4096))
	_ = resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return resp.StatusCode, fmt.Errorf("the receiver answered %s", resp.Status)
	}
	return resp.StatusCode, nil
}

// settle records an attempt in the audit stream, then acknowledges or
// reschedules its job. The audit comes first: once Retry schedules the
// next attempt any replica may promote and make it, and its entry must
// not land before the entry of the attempt that led to it.
func (c *Callbacks) settle(ctx context.Context, job approval.CallbackJob, client string, status int, err error, retryable bool) {
	a := approval.CallbackAttempt{Token: job.Token, Client: client, Attempt: job.Attempt, Status: status}
	retry := false
	switch {
	case err == nil:
		a.Outcome = approval.CallbackDelivered
	case retryable && job.Attempt < c.cfg.Attempts:
		a.Outcome, a.Error, retry = approval.CallbackRetrying, err.Error(), true
	default:
		a.Outcome, a.Error = approval.CallbackAbandoned, err.Error()
		c.log.WarnContext(ctx, "callback abandoned", "client", client, "attempt", job.Attempt, "err", err)
	}
	if aerr := c.cfg.Store.AuditCallback(ctx, a); aerr != nil {
		c.log.ErrorContext(ctx, "audit callback attempt", "err", aerr)
	}
	if c.cfg.Metrics != nil {
		c.cfg.Metrics.Callback(callbackResult(err, retryable, retry))
	}
	var qerr error
	if retry {
		qerr = c.cfg.Queue.Retry(ctx, job, c.cfg.Now().Add(c.cfg.Backoff(job.Attempt)))
	} else {
		qerr = c.cfg.Queue.Ack(ctx, job.ID)
	}
	if qerr != nil {
		c.log.ErrorContext(ctx, "settle callback job", "err", qerr)
	}
}

// callbackResult is how an attempt settled (err: how it failed), as
// CallbackMetrics is told it.
func callbackResult(err error, retryable, retry bool) string {
	switch {
	case err == nil:
		return CallbackResultDelivered
	case !retryable || errors.Is(err, errPrivateAddress):
		return CallbackResultRefused
	case retry:
		return CallbackResultRetried
	}
	return CallbackResultFailed
}

// Sign returns the signature header value of a callback: "v1=" followed
// by hex(HMAC-SHA256(secret, timestamp + "." + body)).
func Sign(secret, timestamp string, body []byte) string {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte(timestamp))
	m.Write([]byte("."))
	m.Write(body)
	return "v1=" + hex.EncodeToString(m.Sum(nil))
}

// ErrBadSignature is returned by VerifyCallback.
var ErrBadSignature = errors.New("callback signature does not verify")

// VerifyCallback checks a callback as a receiver should: the signature
// header must be Sign(secret, timestamp, body), compared in constant time,
// and the timestamp within tolerance of now, so a captured callback cannot
// be replayed later.
func VerifyCallback(secret string, h http.Header, body []byte, now time.Time, tolerance time.Duration) error {
	ts := h.Get(HeaderTimestamp)
	sec, err := strconv.ParseInt(ts, 10, 64)
	if err != nil {
		return fmt.Errorf("%w: missing or malformed %s", ErrBadSignature, HeaderTimestamp)
	}
	if d := now.Sub(time.Unix(sec, 0)); d > tolerance || d < -tolerance {
		return fmt.Errorf("%w: timestamp is %s away from now", ErrBadSignature, d.Round(time.Second))
	}
	want := Sign(secret, ts, body)
	if !hmac.Equal([]byte(h.Get(HeaderSignature)), []byte(want)) {
		return ErrBadSignature
	}
	return nil
}

// redact drops the URL from a client error: a callback URL may carry a
// capability in its path or query, which does not belong in the audit
// stream or logs.
func redact(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return fmt.Errorf("%s: %w", ue.Op, ue.Err)
	}
	return err
}
