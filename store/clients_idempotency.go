package store

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/slackapprove/slackbot/approval"
)

// Idempotency is what an API client's idempotency key stands for
// (approval's, so that the HTTP API names it without importing store).
type Idempotency = approval.Idempotency

// ClaimIdempotency makes client's idempotency key stand for token, created
// by the request with the given fingerprint, for ttl (until
// KeepIdempotency ties it to the token's record). If the key is already
// taken it changes nothing, and returns what the key stands for and first
// false. Keys are scoped per client: two clients may use the same key.
func (s *Store) ClaimIdempotency(ctx context.Context, client, key, token, fingerprint string, ttl time.Duration) (got Idempotency, first bool, err error) {
	if ttl <= 0 {
		ttl = s.opts.Grace
	}
	v, err := claimIdemScript.Run(ctx, s.rdb, []string{s.idemKey(client, key)}, token+" "+fingerprint, ttl.Milliseconds()).Text()
	if isRedisNil(err) {
		return Idempotency{Token: token, Fingerprint: fingerprint}, true, nil
	}
	if err != nil {
		return Idempotency{}, false, fmt.Errorf("claim idempotency key: %w", err)
	}
	tok, fp, _ := strings.Cut(v, " ")
	return Idempotency{Token: tok, Fingerprint: fp}, false, nil
}

// KeepIdempotency gives client's idempotency key the lifetime of the
// record of the token it stands for (its deadline plus Grace), so a retry
// finds the token for as long as the token can be read.
func (s *Store) KeepIdempotency(ctx context.Context, client, key, token string) error {
	err := keepIdemScript.Run(ctx, s.rdb, []string{s.idemKey(client, key), s.recKey(token)}, token+" ").Err()
	if err != nil && !isRedisNil(err) {
		return fmt.Errorf("keep idempotency key: %w", err)
	}
	return nil
}

// ReleaseIdempotency forgets client's idempotency key if it still stands
// for token, so that a request that failed before creating anything can
// be retried with the same key.
func (s *Store) ReleaseIdempotency(ctx context.Context, client, key, token string) error {
	err := releaseIdemScript.Run(ctx, s.rdb, []string{s.idemKey(client, key)}, token+" ").Err()
	if err != nil && !isRedisNil(err) {
		return fmt.Errorf("release idempotency key: %w", err)
	}
	return nil
}

// idemKey names the key of an idempotency key: a digest, so clients'
// keys (free text) never shape Redis key names.
func (s *Store) idemKey(client, key string) string {
	sum := sha256.Sum256([]byte(client + "\x00" + key))
	return s.key("idem:" + hex.EncodeToString(sum[:16]))
}

// claimIdemScript sets KEYS[1] to ARGV[1] for ARGV[2] ms unless it exists,
// and returns the value it has then (nil when it was just set).
var claimIdemScript = redis.NewScript(`
local v = redis.call('GET', KEYS[1])
if v then return v end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
return false
`)

// keepIdemScript gives KEYS[1] the TTL of KEYS[2] if KEYS[1] starts with
// ARGV[1].
var keepIdemScript = redis.NewScript(`
local v = redis.call('GET', KEYS[1])
if not v or string.sub(v, 1, #ARGV[1]) ~= ARGV[1] then return 0 end
local ttl = redis.call('PTTL', KEYS[2])
if ttl > 0 then redis.call('PEXPIRE', KEYS[1], ttl) end
return 1
`)

// releaseIdemScript deletes KEYS[1] if it starts with ARGV[1].
var releaseIdemScript = redis.NewScript(`
local v = redis.call('GET', KEYS[1])
if v and string.sub(v, 1, #ARGV[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
`)
