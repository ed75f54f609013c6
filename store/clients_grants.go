package store

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/slackapprove/slackbot/agentrunner"
	"github.com/slackapprove/slackbot/approval"
	"github.com/slackapprove/slackbot/receipt"
)

var _ approval.GrantStore = (*Store)(nil)

// maxGrantsListed bounds the grants Grants returns.
const maxGrantsListed = 100

// Grants are kept as one hash per grant, grant:<id>, expiring when the
// grant ends, and a sorted set per approver, grants:<approver>, of the ids
// they granted scored by when each ends. A grant's id is a digest of its
// route, requester, name (the API client's claim), tool and the RFC 8785
// (JCS) canonical form of its arguments, so the same call asked again
// finds it, and nothing else does.
func (s *Store) grantKey(id string) string        { return s.key("grant:" + id) }
func (s *Store) grantsKey(approver string) string { return s.key("grants:" + approver) }

// grantID names the grant of g's route, requester, name, tool and args;
// ok is false for arguments that are not a JSON object. A grant with no
// name keeps the id grants had before names were part of it; a name is
// hashed after the tool, ended by a zero byte that no canonical JSON
// holds, so no name, and no two names, give one id.
func grantID(g approval.Grant) (string, bool) {
	obj, err := (agentrunner.ToolCallPart{ToolName: g.Tool, Args: g.Args}).ArgsObject()
	if err != nil {
		return "", false
	}
	canon, err := receipt.Canonical(obj)
	if err != nil {
		return "", false
	}
	h := sha256.New()
	parts := []string{g.Route, g.Requester, g.Tool}
	if g.Name != "" {
		parts = append(parts, g.Name)
	}
	for _, part := range parts {
		h.Write([]byte(part))
		h.Write([]byte{0})
	}
	h.Write(canon)
	return hex.EncodeToString(h.Sum(nil)[:16]), true
}

// SaveGrant implements approval.GrantStore: it stores g until g.Until (by
// the store's clock) and indexes it under its approver, in one round trip.
func (s *Store) SaveGrant(ctx context.Context, g *approval.Grant) error {
	id, ok := grantID(*g)
	if !ok || g.By == "" || g.Route == "" || g.Requester == "" {
		return fmt.Errorf("save grant: %w: a grant needs a route, a requester, an approver and arguments that are a JSON object", approval.ErrInvalid)
	}
	ttl := g.Until.Sub(s.now())
	if ttl <= 0 {
		return fmt.Errorf("save grant: %w: it has ended", approval.ErrInvalid)
	}
	su := ""
	if g.StepUp != nil {
		b, err := json.Marshal(g.StepUp)
		if err != nil {
			return fmt.Errorf("save grant: step-up: %w", err)
		}
		su = string(b)
	}
	g.ID = id
	keys := []string{s.grantKey(id), s.grantsKey(g.By)}
	err := grantSaveScript.Run(ctx, s.rdb, keys, ttl.Milliseconds(), ms(g.Until), id,
		g.Route, g.Requester, g.Tool, string(g.Args), g.By, ms(g.CreatedAt), g.Name, su).Err()
	if err != nil {
		return fmt.Errorf("save grant: %w", err)
	}
	return nil
}

// grantSaveScript stores a grant and indexes it. A grant of the same id
// that another approver made earlier is replaced; their index keeps the
// id until it expires, and Grants, which checks who made each grant, no
// longer lists it. The index forgets the grants that ended (until - ttl
// is now), so an approver who grants often keeps it small. KEYS: grant,
// approver's index. ARGV: ttl (ms), until
// (ms), id, route, requester, tool, args, by, created (ms), name, the
// step-up proof of the click that made it (JSON, empty for none).
var grantSaveScript = redis.NewScript(`
redis.call('DEL', KEYS[1])
redis.call('HSET', KEYS[1], 'route', ARGV[4], 'requester', ARGV[5], 'tool', ARGV[6], 'args', ARGV[7], 'by', ARGV[8], 'created', ARGV[9], 'until', ARGV[2], 'name', ARGV[10])
if ARGV[11] ~= '' then redis.call('HSET', KEYS[1], 'su', ARGV[11]) end
redis.call('PEXPIRE', KEYS[1], ARGV[1])
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', tonumber(ARGV[2]) - tonumber(ARGV[1]))
redis.call('ZADD', KEYS[2], ARGV[2], ARGV[3])
if redis.call('PTTL', KEYS[2]) < tonumber(ARGV[1]) then redis.call('PEXPIRE', KEYS[2], ARGV[1]) end
return 1
`)

// FindGrant implements approval.GrantStore.
func (s *Store) FindGrant(ctx context.Context, call approval.Grant) (*approval.Grant, error) {
	id, ok := grantID(call)
	if !ok || call.Requester == "" {
		return nil, nil
	}
	m, err := s.rdb.HGetAll(ctx, s.grantKey(id)).Result()
	if err != nil {
		return nil, fmt.Errorf("find grant: %w", err)
	}
	g := s.parseGrant(id, m)
	if g == nil || g.Route != call.Route || g.Requester != call.Requester || g.Name != call.Name || g.Tool != call.Tool {
		return nil, nil
	}
	return g, nil
}

// parseGrant reads a grant's hash; nil when it is gone or has ended.
func (s *Store) parseGrant(id string, m map[string]string) *approval.Grant {
	if len(m) == 0 {
		return nil
	}
	g := &approval.Grant{
		ID: id, Route: m["route"], Requester: m["requester"], Name: m["name"], Tool: m["tool"], Args: json.RawMessage(m["args"]),
		By: m["by"], CreatedAt: fromMS(m["created"]), Until: fromMS(m["until"]), StepUp: parseStepUp(m["su"]),
	}
	if !g.Until.After(s.now()) {
		return nil
	}
	return g
}

// Grants implements approval.GrantStore: at most 100, soonest to end
// first.
func (s *Store) Grants(ctx context.Context, approver string) ([]approval.Grant, error) {
	if approver == "" {
		return nil, nil
	}
	ids, err := s.rdb.ZRangeByScore(ctx, s.grantsKey(approver), &redis.ZRangeBy{
		Min: "(" + ms(s.now()), Max: "+inf", Count: maxGrantsListed,
	}).Result()
	if err != nil {
		return nil, fmt.Errorf("list grants: %w", err)
	}
	cmds := make([]*redis.MapStringStringCmd, len(ids))
	if _, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, id := range ids {
			cmds[i] = p.HGetAll(ctx, s.grantKey(id))
		}
		return nil
	}); err != nil {
		return nil, fmt.Errorf("list grants: %w", err)
	}
	var out []approval.Grant
	for i, id := range ids {
		if g := s.parseGrant(id, cmds[i].Val()); g != nil && g.By == approver {
			out = append(out, *g)
		}
	}
	return out, nil
}

// RevokeGrant implements approval.GrantStore: it ends grant id of by and
// records it in the audit stream, in one round trip.
func (s *Store) RevokeGrant(ctx context.Context, id, by string) (*approval.Grant, error) {
	if id == "" || by == "" || strings.ContainsAny(id, " \x00") {
		return nil, fmt.Errorf("revoke grant: %w", approval.ErrNotFound)
	}
	keys := []string{s.grantKey(id), s.grantsKey(by), s.auditKey()}
	res, err := grantRevokeScript.Run(ctx, s.rdb, keys, id, by, ms(s.now()), s.opts.AuditMaxLen, s.opts.Retention.Milliseconds()).StringSlice()
	if errors.Is(err, redis.Nil) || (err == nil && len(res) == 0) {
		return nil, fmt.Errorf("revoke grant %s: %w", id, approval.ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("revoke grant %s: %w", id, err)
	}
	m := map[string]string{}
	for i := 0; i+1 < len(res); i += 2 {
		m[res[i]] = res[i+1]
	}
	g := s.parseGrant(id, m)
	if g == nil {
		return nil, fmt.Errorf("revoke grant %s: %w", id, approval.ErrNotFound)
	}
	return g, nil
}

// grantRevokeScript deletes a grant its approver revokes and audits it;
// it returns the grant's fields, or nothing when by has no such grant.
// KEYS: grant, approver's index, audit stream. ARGV: id, by, now (ms),
// audit max length, retention (ms).
var grantRevokeScript = redis.NewScript(`
local g = redis.call('HGETALL', KEYS[1])
local by
for i = 1, #g, 2 do if g[i] == 'by' then by = g[i + 1] end end
if by ~= ARGV[2] then return {} end
redis.call('DEL', KEYS[1])
redis.call('ZREM', KEYS[2], ARGV[1])
redis.call('XADD', KEYS[3], 'MAXLEN', '~', ARGV[4], '*', 'type', 'grant_revoked', 'at', ARGV[3], 'by', ARGV[2], 'detail', ARGV[1])
redis.call('PEXPIRE', KEYS[3], ARGV[5])
return g
`)
