package store

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/slackapprove/slackbot/approval"
)

// Quota bounds what one API client may open (approval's, so that the
// HTTP API names it without importing store).
type Quota = approval.Quota

// RateLimitError is TakeQuota's refusal: which limit, and when a retry may
// succeed. Its approval.ErrorCode is ERATELIMITED.
type RateLimitError = approval.RateLimitError

// openRetryAfter is the Retry-After hint when a client has too many open
// requests: they end when people decide, which no clock predicts.
const openRetryAfter = 5 * time.Second

// TakeQuota admits one more token for client, or refuses with a
// *RateLimitError, in one atomic round trip, so the limits hold across
// replicas. An admitted token counts as open until its record leaves the
// open state (resolved, expired, cancelled, failed) or expires passes;
// ended tokens are dropped from the count when the limit is reached, so
// the count heals itself whoever ended them. Call ReleaseQuota if the
// token is then not created.
func (s *Store) TakeQuota(ctx context.Context, client, token string, expires time.Time, q Quota) error {
	if q.MaxOpen <= 0 && q.Rate <= 0 {
		return nil
	}
	interval, tolerance := 0.0, 0.0
	if q.Rate > 0 {
		interval = 1000 / q.Rate              // ms between creates at the steady rate
		tolerance = interval * (2*q.Rate - 1) // a burst of 2×Rate
	}
	now := s.now()
	res, err := quotaScript.Run(ctx, s.rdb, []string{s.quotaOpenKey(client), s.quotaRateKey(client)},
		ms(now), token, ms(expires), q.MaxOpen,
		strconv.FormatFloat(interval, 'f', 3, 64), strconv.FormatFloat(tolerance, 'f', 3, 64),
		s.recKey("")).StringSlice()
	if err != nil {
		return fmt.Errorf("take quota for %s: %w", client, err)
	}
	switch res[0] {
	case "ok":
		return nil
	case "open":
		return &RateLimitError{Limit: approval.LimitMaxOpen, RetryAfter: openRetryAfter}
	case "rate":
		wait, _ := strconv.ParseFloat(res[1], 64)
		return &RateLimitError{Limit: approval.LimitRate, RetryAfter: time.Duration(math.Ceil(wait)) * time.Millisecond}
	}
	return fmt.Errorf("take quota for %s: unexpected reply %q", client, res[0])
}

// ReleaseQuota gives back the open slot TakeQuota took for a token that
// was not created after all.
func (s *Store) ReleaseQuota(ctx context.Context, client, token string) error {
	if err := s.rdb.ZRem(ctx, s.quotaOpenKey(client), token).Err(); err != nil {
		return fmt.Errorf("release quota for %s: %w", client, err)
	}
	return nil
}

// Quota keys: a digest of the client name, so names never shape keys.
func (s *Store) quotaOpenKey(client string) string {
	return s.key("quota:open:" + clientDigest(client))
}
func (s *Store) quotaRateKey(client string) string {
	return s.key("quota:rate:" + clientDigest(client))
}

func clientDigest(client string) string {
	sum := sha256.Sum256([]byte(client))
	return hex.EncodeToString(sum[:12])
}

// quotaScript admits a token under a client's quota.
// KEYS: open (sorted set of the client's open tokens by deadline), rate
// (the rate limiter's theoretical arrival time, ms).
// ARGV: now (ms), token, deadline (ms), max open (0: none), interval (ms;
// 0: no rate), burst tolerance (ms), the record key prefix.
// Replies {'ok'}, {'open'} or {'rate', ms to wait}.
//
// The rate is a GCRA (generic cell rate algorithm), a token bucket kept
// as one number. It is checked first, and every attempt it lets through
// counts against it, refused or not: the open-token scan below costs up
// to MaxOpen reads, so a client that keeps retrying at its open limit may
// make Redis do that at most at its rate, not as often as it can send.
// Open tokens are members scored by deadline: those past it go first; at
// the limit, the records of the rest are read and the ended ones dropped
// (at most MaxOpen reads, only then). The records are
// named from the prefix, so this script assumes one Redis (or Sentinel),
// not Redis Cluster, as the store does throughout.
var quotaScript = redis.NewScript(`
local open, rate = KEYS[1], KEYS[2]
local now, token, exp = tonumber(ARGV[1]), ARGV[2], tonumber(ARGV[3])
local maxopen, interval, tolerance, recprefix = tonumber(ARGV[4]), tonumber(ARGV[5]), tonumber(ARGV[6]), ARGV[7]
if interval > 0 then
  local tat = tonumber(redis.call('GET', rate) or '0')
  if tat < now then tat = now end
  if tat - tolerance > now then
    return {'rate', tostring(math.ceil(tat - tolerance - now))}
  end
  tat = tat + interval
  redis.call('SET', rate, string.format('%.3f', tat), 'PX', math.ceil(tat - now) + 1000)
end
if maxopen > 0 then
  redis.call('ZREMRANGEBYSCORE', open, '-inf', now)
  if redis.call('ZCARD', open) >= maxopen then
    for _, t in ipairs(redis.call('ZRANGE', open, 0, -1)) do
      local st = redis.call('HGET', recprefix .. t, 'state')
      if st and st ~= 'open' then redis.call('ZREM', open, t) end
    end
    if redis.call('ZCARD', open) >= maxopen then return {'open'} end
  end
end
if maxopen > 0 then
  redis.call('ZADD', open, exp, token)
  local ttl = exp - now + 60000
  if redis.call('PTTL', open) < ttl then redis.call('PEXPIRE', open, ttl) end
end
return {'ok'}
`)
