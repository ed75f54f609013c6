package store

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

// This file ties the JSON-RPC ids of the MCP gateway's waiting calls to
// their requests. The gateway is stateless: an MCP client's
// notifications/cancelled names only the id of the call it gives up on,
// and may reach any replica. Per API client and id, a hash holds the
// tokens of the requests waiting under that id, each with its expiry;
// two connections of one client may use the same id at once, so a cancel
// of that id ends both (a cancelled call never runs; a wrongly cancelled
// one is asked again). A cancel also marks the entries it found, so that
// a call whose request was still being created when the cancel came
// learns of it when it tracks its request again.

// TrackRequestID records that client's JSON-RPC request rpcID (its id in
// one canonical form) waits on token's request until expires, so that
// CancelRequestID, in any process, finds it. Tracking the same token again
// moves its expiry. It returns true if a cancel of rpcID came since token
// was first tracked, or, for a token tracked the first time, if a cancel
// of rpcID that found nothing to cancel came in the CancelMarkTTL before:
// the call reached its replica before its client sent the cancel, but was
// not tracked yet. The caller cancels the request itself, which may not
// have existed then.
func (s *Store) TrackRequestID(ctx context.Context, client, rpcID, token string, expires time.Time) (cancelled bool, err error) {
	now := s.now()
	keys := []string{s.requestIDKey(client, rpcID), s.cancelMarksKey(client)}
	n, err := trackRequestIDScript.Run(ctx, s.rdb, keys, token, ms(expires), ms(now), rpcID).Int()
	if err != nil {
		return false, fmt.Errorf("track request id: %w", err)
	}
	return n == 1, nil
}

// UntrackRequestID forgets token under client's rpcID: its call returned.
func (s *Store) UntrackRequestID(ctx context.Context, client, rpcID, token string) error {
	if err := s.rdb.HDel(ctx, s.requestIDKey(client, rpcID), token).Err(); err != nil {
		return fmt.Errorf("untrack request id: %w", err)
	}
	return nil
}

// CancelRequestID marks every request tracked under client's rpcID, and
// not expired, as cancelled, and returns their tokens (none for an id
// nobody waits on). When it finds none, it remembers the cancel of rpcID
// for CancelMarkTTL, among at most MaxCancelMarks of the client's (the
// oldest forgotten first), so that a call of that id tracked meanwhile is
// cancelled (TrackRequestID).
func (s *Store) CancelRequestID(ctx context.Context, client, rpcID string) ([]string, error) {
	keys := []string{s.requestIDKey(client, rpcID), s.cancelMarksKey(client)}
	tokens, err := cancelRequestIDScript.Run(ctx, s.rdb, keys, ms(s.now()), rpcID, CancelMarkTTL.Milliseconds(), MaxCancelMarks).StringSlice()
	if err != nil && !isRedisNil(err) {
		return nil, fmt.Errorf("cancel request id: %w", err)
	}
	return tokens, nil
}

// requestIDKey names the hash of client's rpcID: a digest, so ids (the
// client's choice) never shape Redis key names.
func (s *Store) requestIDKey(client, rpcID string) string {
	sum := sha256.Sum256([]byte(client + "\x00" + rpcID))
	return s.key("rpcid:" + hex.EncodeToString(sum[:16]))
}

// A cancel can overtake its call: the client sends it once the call is
// sent, but another replica may act on it while the call's own replica
// still checks the call before tracking it. Such a cancel, which finds
// nothing to cancel, is remembered for a while, per client and bounded in
// number, and cancels the call of its id tracked in that while (and, as
// ids are per connection, one of another connection of the same key that
// happens to use the same id: a call wrongly cancelled is asked again; a
// cancelled one must never run).
const (
	// CancelMarkTTL is how long a cancel that found no call waits for it.
	CancelMarkTTL = time.Minute
	// MaxCancelMarks bounds the cancels remembered per client.
	MaxCancelMarks = 100
)

// cancelMarksKey names the hash of client's remembered cancels: JSON-RPC
// id → until (ms).
func (s *Store) cancelMarksKey(client string) string {
	return s.key("rpccancels:" + clientDigest(client))
}

// requestIDLua reads an entry: its expiry in ms, "c" before it once a
// cancel marked it.
const requestIDLua = `
local function expiry(v) return tonumber((string.gsub(v, '^c', ''))) end
local function marked(v) return string.sub(v, 1, 1) == 'c' end
`

// trackRequestIDScript sets KEYS[1]'s entry ARGV[1] to expire at ARGV[2]
// (keeping its mark; a new entry is marked if the client's remembered
// cancels KEYS[2] hold its id ARGV[4] until after ARGV[3]), drops the
// entries expired at ARGV[3], gives the hash the TTL of its last entry,
// and returns 1 if the entry was marked.
var trackRequestIDScript = redis.NewScript(requestIDLua + `
local key, now = KEYS[1], tonumber(ARGV[3])
local v = redis.call('HGET', key, ARGV[1])
local mark = ''
if v and marked(v) then mark = 'c' end
if not v and tonumber(redis.call('HGET', KEYS[2], ARGV[4]) or '0') > now then mark = 'c' end
redis.call('HSET', key, ARGV[1], mark .. ARGV[2])
local last = 0
local all = redis.call('HGETALL', key)
for i = 1, #all, 2 do
  local e = expiry(all[i + 1])
  if e <= now then redis.call('HDEL', key, all[i]) elseif e > last then last = e end
end
if last > 0 then redis.call('PEXPIRE', key, last - now) end
if mark == 'c' then return 1 end
return 0
`)

// cancelRequestIDScript marks KEYS[1]'s entries not expired at ARGV[1]
// and returns their tokens, dropping the expired ones. When there is none,
// it remembers the cancel of id ARGV[2] in the client's hash KEYS[2] for
// ARGV[3] ms, dropping the ended ones and, beyond ARGV[4], the oldest.
var cancelRequestIDScript = redis.NewScript(requestIDLua + `
local key, now = KEYS[1], tonumber(ARGV[1])
local all = redis.call('HGETALL', key)
local tokens = {}
for i = 1, #all, 2 do
  local v = all[i + 1]
  if expiry(v) <= now then
    redis.call('HDEL', key, all[i])
  else
    if not marked(v) then redis.call('HSET', key, all[i], 'c' .. v) end
    tokens[#tokens + 1] = all[i]
  end
end
if #tokens == 0 then
  local marks, ttl, cap = KEYS[2], tonumber(ARGV[3]), tonumber(ARGV[4])
  local m = redis.call('HGETALL', marks)
  local live, oldest, oldestUntil = 0, nil, nil
  for i = 1, #m, 2 do
    local u = tonumber(m[i + 1])
    if u <= now then
      redis.call('HDEL', marks, m[i])
    elseif m[i] ~= ARGV[2] then
      live = live + 1
      if not oldestUntil or u < oldestUntil then oldest, oldestUntil = m[i], u end
    end
  end
  if live >= cap and oldest then redis.call('HDEL', marks, oldest) end
  redis.call('HSET', marks, ARGV[2], now + ttl)
  redis.call('PEXPIRE', marks, ttl)
end
return tokens
`)
