package store

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/slackapprove/slackbot/approval"
)

// This file is the registry of deferred coding-agent sessions
// (approval.AgentSession): an API client's bookkeeping beside a request,
// never a write of the request's record. Each session is one JSON string
// that lives as long as its request's record; a sorted set per client
// and resumer indexes them. Both keys share a hash tag, so the scripts
// touch one slot (Redis Cluster). See docs/ARCHITECTURE.md, "Deferred
// coding-agent sessions".

// MaxSessionsPerResumer bounds the sessions registered for one client's
// resumer at once, so a client cannot grow a resumer's listing without
// bound.
const MaxSessionsPerResumer = 1000

// sessionRecord is a session as stored: Args as a JSON string, because
// Lua's cjson writes an empty array as an object.
type sessionRecord struct {
	ID         string `json:"id"`
	Client     string `json:"client"`
	Resumer    string `json:"resumer"`
	Agent      string `json:"agent"`
	Token      string `json:"token"`
	CallID     string `json:"call"`
	SessionID  string `json:"session"`
	Cwd        string `json:"cwd"`
	Args       string `json:"args"`
	State      string `json:"state"`
	Attempts   int64  `json:"attempts"`
	LeaseUntil int64  `json:"lease"` // Unix ms
	Outcome    string `json:"outcome"`
	Created    int64  `json:"created"` // Unix ms
}

func (r *sessionRecord) session() (*approval.AgentSession, error) {
	s := &approval.AgentSession{ID: r.ID, Client: r.Client, Resumer: r.Resumer, Agent: r.Agent, Token: r.Token,
		CallID: r.CallID, SessionID: r.SessionID, Cwd: r.Cwd, State: r.State, Attempts: int(r.Attempts),
		Outcome: r.Outcome, LeaseUntil: time.UnixMilli(r.LeaseUntil), Created: time.UnixMilli(r.Created)}
	if err := json.Unmarshal([]byte(r.Args), &s.Args); err != nil {
		return nil, fmt.Errorf("session %s: args: %w", r.ID, err)
	}
	return s, nil
}

// LookupIdempotency returns the request client's idempotency key stands
// for, or approval.ErrNotFound.
func (s *Store) LookupIdempotency(ctx context.Context, client, key string) (Idempotency, error) {
	v, err := s.rdb.Get(ctx, s.idemKey(client, key)).Result()
	if isRedisNil(err) {
		return Idempotency{}, approval.ErrNotFound
	}
	if err != nil {
		return Idempotency{}, fmt.Errorf("look up idempotency key: %w", err)
	}
	tok, fp, _ := strings.Cut(v, " ")
	return Idempotency{Token: tok, Fingerprint: fp}, nil
}

// sessionGroup is the hash tag of a client's resumer: its index and its
// sessions share it.
func sessionGroup(client, resumer string) string {
	sum := sha256.Sum256([]byte(client + "\x00" + resumer))
	return hex.EncodeToString(sum[:12])
}

func (s *Store) sessionKey(id string) string {
	return s.key("asess:{" + strings.Split(id, ".")[0] + "}:" + id)
}
func (s *Store) sessionIndex(group string) string {
	return s.key("asess:{" + group + "}")
}

// RegisterSession records sess (its ID is set here) for as long as its
// request's record lives. Registering the same client, resumer, token
// and call again returns the session already there, unless it is done
// or failed, when it starts again as waiting (the agent deferred the
// same call once more). It returns approval.ErrNotFound when the
// request's record is gone, and ERATELIMITED past MaxSessionsPerResumer.
func (s *Store) RegisterSession(ctx context.Context, sess *approval.AgentSession) (*approval.AgentSession, error) {
	// The record's end as an instant on Redis's clock (PEXPIRETIME), which
	// the session gets as its own (PXAT): a TTL read here and set later
	// would let the session outlive the record by the round trip between.
	end, err := s.rdb.Do(ctx, "PEXPIRETIME", s.recKey(sess.Token)).Int64()
	if err != nil {
		return nil, fmt.Errorf("register session: %w", err)
	}
	if end <= 0 { // -2: no record; -1: a record with no end is none of ours
		return nil, approval.ErrNotFound
	}
	group := sessionGroup(sess.Client, sess.Resumer)
	sum := sha256.Sum256([]byte(sess.Token + "\x00" + sess.CallID))
	args, err := json.Marshal(sess.Args)
	if err != nil {
		return nil, fmt.Errorf("register session: %w", err)
	}
	now := s.now()
	rec := sessionRecord{ID: group + "." + hex.EncodeToString(sum[:12]), Client: sess.Client, Resumer: sess.Resumer,
		Agent: sess.Agent, Token: sess.Token, CallID: sess.CallID, SessionID: sess.SessionID, Cwd: sess.Cwd,
		Args: string(args), State: approval.SessionWaiting, Created: now.UnixMilli()}
	b, err := json.Marshal(rec)
	if err != nil {
		return nil, fmt.Errorf("register session: %w", err)
	}
	v, err := registerSessionScript.Run(ctx, s.rdb, []string{s.sessionKey(rec.ID), s.sessionIndex(group)},
		string(b), rec.ID, end, now.UnixMilli(), MaxSessionsPerResumer).Text()
	if err != nil {
		return nil, fmt.Errorf("register session: %w", err)
	}
	if v == "full" {
		return nil, approval.Errorf(approval.ERATELIMITED, "resumer %q has %d sessions waiting; finish some first", sess.Resumer, MaxSessionsPerResumer)
	}
	return decodeSession(v)
}

func decodeSession(v string) (*approval.AgentSession, error) {
	var rec sessionRecord
	if err := json.Unmarshal([]byte(v), &rec); err != nil {
		return nil, fmt.Errorf("read session: %w", err)
	}
	return rec.session()
}

// registerSessionScript sets KEYS[1] to ARGV[1] until ARGV[3] (Unix ms) unless it
// holds a session not yet done or failed, and indexes ARGV[2] in KEYS[2]
// (at most ARGV[5] members, the index living as long as its longest
// session). It returns the session stored, or "full".
var registerSessionScript = redis.NewScript(`
local cur = redis.call('GET', KEYS[1])
if cur then
  local s = cjson.decode(cur)
  if s.state ~= 'done' and s.state ~= 'failed' then return cur end
end
if not cur and redis.call('ZCARD', KEYS[2]) >= tonumber(ARGV[5]) then return 'full' end
redis.call('SET', KEYS[1], ARGV[1], 'PXAT', ARGV[3])
redis.call('ZADD', KEYS[2], ARGV[4], ARGV[2])
if redis.call('PEXPIRETIME', KEYS[2]) < tonumber(ARGV[3]) then redis.call('PEXPIREAT', KEYS[2], ARGV[3]) end
return ARGV[1]
`)

// Sessions returns client's sessions registered for resumer, oldest
// first, forgetting those whose time ran out.
func (s *Store) Sessions(ctx context.Context, client, resumer string) ([]*approval.AgentSession, error) {
	index := s.sessionIndex(sessionGroup(client, resumer))
	ids, err := s.rdb.ZRange(ctx, index, 0, MaxSessionsPerResumer-1).Result()
	if err != nil || len(ids) == 0 {
		return nil, wrapErr("list sessions", err)
	}
	keys := make([]string, len(ids))
	for i, id := range ids {
		keys[i] = s.sessionKey(id)
	}
	// One slot (the hash tag), so MGET works on a Cluster too.
	vals, err := s.rdb.MGet(ctx, keys...).Result()
	if err != nil {
		return nil, fmt.Errorf("list sessions: %w", err)
	}
	var out []*approval.AgentSession
	var gone []any
	for i, v := range vals {
		str, ok := v.(string)
		if !ok {
			gone = append(gone, ids[i])
			continue
		}
		sess, err := decodeSession(str)
		if err != nil {
			return nil, err
		}
		if sess.Client == client && sess.Resumer == resumer {
			out = append(out, sess)
		}
	}
	if len(gone) > 0 {
		if err := s.rdb.ZRem(ctx, index, gone...).Err(); err != nil {
			return nil, fmt.Errorf("list sessions: %w", err)
		}
	}
	return out, nil
}

// Session returns client's session id, or approval.ErrNotFound (also for
// another client's).
func (s *Store) Session(ctx context.Context, client, id string) (*approval.AgentSession, error) {
	v, err := s.rdb.Get(ctx, s.sessionKey(id)).Result()
	if isRedisNil(err) {
		return nil, approval.ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("read session: %w", err)
	}
	sess, err := decodeSession(v)
	if err != nil {
		return nil, err
	}
	if sess.Client != client || sess.ID != id {
		return nil, approval.ErrNotFound
	}
	return sess, nil
}

// ClaimSession gives client's session id to its resumer for lease: once,
// while it is waiting or its last claim's lease ended. It returns
// ENOTFOUND for an unknown session, another client's or another
// resumer's, and ECONFLICT when it is claimed (lease running), done or
// failed. A claim past approval.MaxSessionAttempts marks the session
// failed and returns it so, with no error: the resumer reports it.
func (s *Store) ClaimSession(ctx context.Context, client, resumer, id string, lease time.Duration) (*approval.AgentSession, error) {
	now := s.now().UnixMilli()
	v, err := claimSessionScript.Run(ctx, s.rdb, []string{s.sessionKey(id)},
		client, resumer, now, now+lease.Milliseconds(), approval.MaxSessionAttempts).Text()
	if err != nil {
		return nil, fmt.Errorf("claim session: %w", err)
	}
	switch v {
	case "missing":
		return nil, approval.ErrNotFound
	case "taken":
		return nil, approval.Errorf(approval.ECONFLICT, "session %s is being resumed by another resumer", id)
	case "ended":
		return nil, approval.Errorf(approval.ECONFLICT, "session %s was resumed already", id)
	}
	return decodeSession(v)
}

// claimSessionScript claims the session in KEYS[1] for client ARGV[1]'s
// resumer ARGV[2] at ARGV[3] ms until ARGV[4] ms, at most ARGV[5] times.
var claimSessionScript = redis.NewScript(`
local cur = redis.call('GET', KEYS[1])
if not cur then return 'missing' end
local s = cjson.decode(cur)
if s.client ~= ARGV[1] or s.resumer ~= ARGV[2] then return 'missing' end
if s.state == 'done' or s.state == 'failed' then return 'ended' end
if s.state == 'claimed' and tonumber(s.lease) > tonumber(ARGV[3]) then return 'taken' end
if tonumber(s.attempts) >= tonumber(ARGV[5]) then
  s.state = 'failed'
  s.outcome = 'claimed ' .. s.attempts .. ' times without finishing'
else
  s.state = 'claimed'
  s.attempts = s.attempts + 1
  s.lease = tonumber(ARGV[4])
end
local out = cjson.encode(s)
redis.call('SET', KEYS[1], out, 'KEEPTTL')
return out
`)

// FinishSession records how the resume of client's session id under the
// claim numbered attempt ended: only the current claim may (a resumer
// whose lease ran out and was claimed again gets ECONFLICT).
func (s *Store) FinishSession(ctx context.Context, client, id string, attempt int, outcome string) (*approval.AgentSession, error) {
	v, err := finishSessionScript.Run(ctx, s.rdb, []string{s.sessionKey(id)}, client, attempt, outcome).Text()
	if err != nil {
		return nil, fmt.Errorf("finish session: %w", err)
	}
	switch v {
	case "missing":
		return nil, approval.ErrNotFound
	case "stale":
		return nil, approval.Errorf(approval.ECONFLICT, "session %s is no longer held by claim %d", id, attempt)
	}
	return decodeSession(v)
}

// finishSessionScript marks the session in KEYS[1] done with outcome
// ARGV[3] if client ARGV[1] holds it under claim ARGV[2].
var finishSessionScript = redis.NewScript(`
local cur = redis.call('GET', KEYS[1])
if not cur then return 'missing' end
local s = cjson.decode(cur)
if s.client ~= ARGV[1] then return 'missing' end
if s.state ~= 'claimed' or tonumber(s.attempts) ~= tonumber(ARGV[2]) then return 'stale' end
s.state = 'done'
s.outcome = ARGV[3]
local out = cjson.encode(s)
redis.call('SET', KEYS[1], out, 'KEEPTTL')
return out
`)
