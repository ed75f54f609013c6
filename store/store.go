package store

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

// Errors of the store that have no meaning in package approval's
// vocabulary. Every token error the store returns is approval's (an
// *approval.Error sentinel, wrapped with the token), so errors.Is matches
// it against approval's name and agentrunner's alike.
var (
	// ErrRunNotFound: no run state is saved under the run id.
	ErrRunNotFound = errors.New("run state not found")
	// ErrClaimed: another process claimed the resumption of the token's
	// run; this process must not continue it.
	ErrClaimed = errors.New("run is resumed by another process")
)

// Defaults of Options.
const (
	DefaultPrefix = "slackbot:"
	// DefaultClusterPrefix is the prefix on a Redis Cluster client: a
	// hash tag, so that every key is in one slot (doc.go, "Redis
	// Cluster").
	DefaultClusterPrefix = "{slackbot}:"
	DefaultGrace         = 24 * time.Hour
	DefaultAuditMaxLen   = 100_000
	DefaultRetention     = 7 * 24 * time.Hour
	// DefaultTimeout is the deadline of a token created with no deadline
	// and not opened before.
	DefaultTimeout = time.Hour
)

// Options configures a Store. The zero value is usable.
type Options struct {
	// Prefix starts every key and the notification channel; default
	// "slackbot:", or "{slackbot}:" on a Redis Cluster client. On Redis
	// Cluster it must be a hash tag such as "{slackbot}:":
	// the scripts touch a token's record and the shared streams at once,
	// which Cluster allows only within one slot.
	Prefix string
	// Grace is how long records outlive their deadline, so late clicks get
	// a precise answer and runs can still be resumed; default 24h.
	Grace time.Duration
	// AuditMaxLen caps the audit stream (XADD MAXLEN ~); default 100000.
	AuditMaxLen int64
	// Retention is the TTL of the shared keys (audit and resume streams),
	// renewed on every write; default 7 days.
	Retention time.Duration
	// ThreadTTL is how long a Slack thread's history is kept after its
	// last run; default 7 days (DefaultThreadTTL).
	ThreadTTL time.Duration
	// ThreadMaxBytes caps a thread's history as JSON; its oldest turns are
	// dropped beyond it. Default 256 KiB (DefaultThreadMaxBytes).
	ThreadMaxBytes int
	// Owner names this process in its leases (Lock), as its Tokens Owner:
	// a lease whose process's heartbeat is gone is taken over at once
	// instead of after its ttl. Empty: leases last their ttl.
	Owner string
	// WaitReplicas, when above 0 (REDIS_WAIT_REPLICAS), is how many
	// replicas must confirm every write a person or client is answered on
	// (Create, Decide, Answer, Cancel, Fail) before it is reported done:
	// the write is followed by WAIT on its connection, and fewer replicas
	// in time make it fail with approval.ErrUnconfirmed. A decision, an
	// answer, a cancellation and a failure take effect only once confirmed
	// (record_stage.go; Confirm applies those confirmed late).
	WaitReplicas int
	// WaitTimeout caps each WAIT; default DefaultWaitTimeout. Less is
	// used when the caller's deadline (the click's ack budget) is nearer.
	WaitTimeout time.Duration
	// OnUnconfirmed, when set, is told the operation (one of
	// UnconfirmedOps) of every write too few replicas confirmed: a metric.
	OnUnconfirmed func(op string)
	// Now is the clock; nil means time.Now. Deadlines are judged by it, so
	// tests expire tokens by moving it.
	Now func() time.Time
}

// Store is slackbot's Redis layer: pending approvals keyed by resume token,
// atomic decisions, expiry, durable run state, the resume queue, the audit
// stream and dedupe keys. It is safe for concurrent use by many goroutines
// and by many processes sharing one Redis.
type Store struct {
	rdb  redis.UniversalClient
	opts Options
	// homes is this process's short-lived copy of who opened their Home
	// lately, so that a card update does not ask Redis (HomeViewers).
	homes *homeCache
}

// New returns a store on rdb.
func New(rdb redis.UniversalClient, opts Options) *Store {
	if opts.Prefix == "" {
		opts.Prefix = DefaultPrefix
		if _, cluster := rdb.(*redis.ClusterClient); cluster {
			opts.Prefix = DefaultClusterPrefix
		}
	}
	if opts.Grace <= 0 {
		opts.Grace = DefaultGrace
	}
	if opts.AuditMaxLen <= 0 {
		opts.AuditMaxLen = DefaultAuditMaxLen
	}
	if opts.Retention <= 0 {
		opts.Retention = DefaultRetention
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.WaitTimeout <= 0 {
		opts.WaitTimeout = DefaultWaitTimeout
	}
	return &Store{rdb: rdb, opts: opts, homes: &homeCache{}}
}

// Client returns the Redis client the store uses.
func (s *Store) Client() redis.UniversalClient { return s.rdb }

// Ping reports whether Redis answers.
func (s *Store) Ping(ctx context.Context) error {
	if err := s.rdb.Ping(ctx).Err(); err != nil {
		return fmt.Errorf("redis ping: %w", err)
	}
	return nil
}

// Dedupe records key for ttl and reports whether this is its first
// occurrence, so Slack retries and repeated event ids are handled once. A
// ttl of zero or less means the store's Grace.
func (s *Store) Dedupe(ctx context.Context, key string, ttl time.Duration) (first bool, err error) {
	if ttl <= 0 {
		ttl = s.opts.Grace
	}
	ok, err := s.rdb.SetNX(ctx, s.key("dedupe:"+key), "1", ttl).Result()
	if err != nil {
		return false, fmt.Errorf("dedupe %s: %w", key, err)
	}
	return ok, nil
}

// Keys. Every key lives under the prefix and has a TTL.
func (s *Store) key(k string) string          { return s.opts.Prefix + k }
func (s *Store) recKey(token string) string   { return s.key("a:" + token) }
func (s *Store) claimKey(token string) string { return s.key("claim:" + token) }
func (s *Store) runKey(runID string) string   { return s.key("run:" + runID) }
func (s *Store) procKey(owner string) string  { return s.key("proc:" + owner) }
func (s *Store) deadlinesKey() string         { return s.key("deadlines") }
func (s *Store) resumeKey() string            { return s.key("resume") }
func (s *Store) auditKey() string             { return s.key("audit") }
func (s *Store) callbacksKey() string         { return s.key("callbacks") }

// channel is the pub/sub channel on which the token of every ended record
// is published.
func (s *Store) channel() string { return s.key("ended") }

func (s *Store) now() time.Time { return s.opts.Now() }

// tokenKeys are the KEYS of every token script, in the order the scripts
// expect them.
func (s *Store) tokenKeys(token string) []string {
	return []string{s.recKey(token), s.deadlinesKey(), s.resumeKey(), s.auditKey(), s.callbacksKey(), s.stagedKey(token), s.unconfirmedKey()}
}

// tokenArgs are the ARGV every token script starts with.
func (s *Store) tokenArgs(token string, now time.Time, more ...any) []any {
	args := []any{
		token,
		ms(now),
		s.opts.AuditMaxLen,
		s.opts.Retention.Milliseconds(),
		s.channel(),
		s.opts.Grace.Milliseconds(),
	}
	return append(args, more...)
}

func ms(t time.Time) string { return strconv.FormatInt(t.UnixMilli(), 10) }

func fromMS(s string) time.Time {
	if s == "" {
		return time.Time{}
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return time.Time{}
	}
	return time.UnixMilli(n)
}

// validToken reports whether token looks like a resume token: at least 128
// bits of base64url (22 characters), at most 128 characters.
func validToken(token string) bool {
	if len(token) < 22 || len(token) > 128 {
		return false
	}
	for _, r := range token {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '_':
		default:
			return false
		}
	}
	return true
}

// short returns a prefix of a token, safe to put in errors and logs.
func short(token string) string {
	if len(token) > 6 {
		return token[:6] + "…"
	}
	return token
}
