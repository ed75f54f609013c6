package store

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/slackapprove/slackbot/agentrunner"
	"github.com/slackapprove/slackbot/approval"
)

var _ approval.Store = (*Store)(nil)

// Call statuses and token states as the scripts write them in Redis, where
// they differ from package approval's: a pending token is "open", and a
// call still pending when its token ended otherwise is "undecided" (it
// comes out of the store as the token's end, see callEnd).
const (
	redisOpen      = "open"
	redisUndecided = "undecided"
)

// Create stores the record of a token, puts its deadline in the expiry set
// and writes a "requested" audit event per call. Create the record before
// showing the token to anyone (posting Slack messages), so that no click
// can arrive before it.
//
// A zero ExpiresAt means DefaultTimeout from now. (A replica of an older
// version announced a run's token with a minimal record first; Create
// still fills such a record in, keeping its waiter and, for a zero
// ExpiresAt, its deadline.) On Create
// only ID, Route, Required, Message, Rule and PolicyError of a.Calls are
// read; on success a.CreatedAt, a.ExpiresAt, a.State and a.Calls are
// filled in.
//
// Create returns approval.ErrInvalid for a malformed token or request, an
// ECONFLICT error if the token was already created, and
// approval.ErrResolved, ErrExpired, ErrCancelled or ErrFailed if it was
// opened and has ended since.
func (s *Store) Create(ctx context.Context, a *approval.Request) error {
	if !validToken(a.Token) {
		return fmt.Errorf("create: %w: malformed token", approval.ErrInvalid)
	}
	ids := a.Requests.IDs()
	if len(ids) == 0 {
		return fmt.Errorf("create %s: %w: no pending calls", short(a.Token), approval.ErrInvalid)
	}
	specs := map[string]approval.Call{}
	for _, c := range a.Calls {
		if a.Requests.Kind(c.ID) == "" {
			return fmt.Errorf("create %s: %w: call %q is not in the requests", short(a.Token), approval.ErrInvalid, c.ID)
		}
		specs[c.ID] = c
	}
	now := s.now()
	if a.CreatedAt.IsZero() {
		a.CreatedAt = now
	}
	fields := recordFields(a, len(ids))
	calls := make([]approval.Call, 0, len(ids))
	seen := map[string]bool{}
	for n, id := range ids {
		if id == "" || seen[id] {
			return fmt.Errorf("create %s: %w: empty or repeated tool_call_id %q", short(a.Token), approval.ErrInvalid, id)
		}
		seen[id] = true
		call, _ := a.Requests.Call(id)
		spec := specs[id]
		cs := approval.Call{
			ID:       id,
			Tool:     call.ToolName,
			Kind:     a.Requests.Kind(id),
			Route:    spec.Route,
			Required: max(spec.Required, 1),
			Status:   approval.CallPending,
			Message:  spec.Message,

			Rule: spec.Rule, PolicyError: spec.PolicyError,
		}
		calls = append(calls, cs)
		cf, err := callFields(n, &cs, call, a.Requests.Metadata)
		if err != nil {
			return fmt.Errorf("create %s: %w", short(a.Token), err)
		}
		fields = append(fields, cf...)
	}
	exp := ""
	if !a.ExpiresAt.IsZero() {
		exp = ms(a.ExpiresAt)
	}
	args := s.tokenArgs(a.Token, now, exp, ms(now.Add(DefaultTimeout)), len(fields))
	args = append(args, fields...)
	cmd, unconfirmed := s.runConfirmed(ctx, OpCreate, time.Time{}, createScript, s.tokenKeys(a.Token), withTrace(ctx, args)...)
	res, err := cmd.StringSlice()
	if err != nil {
		return fmt.Errorf("create %s: %w", short(a.Token), err)
	}
	if err := codeErr(res[0]); err != nil {
		return fmt.Errorf("create %s: %w", short(a.Token), err)
	}
	a.ExpiresAt = fromMS(res[1])
	a.State = approval.StatePending
	a.Calls = calls
	if unconfirmed != nil {
		return fmt.Errorf("create %s: %w", short(a.Token), unconfirmed)
	}
	return nil
}

// recordFields are the hash fields of a new record's request as a whole.
// The requester field is what records always held: the Slack user id, or
// "api:" and the name an API client gave (else the client), which
// parseOrigin reads back.
func recordFields(a *approval.Request, n int) []any {
	o := a.Origin
	requester := o.User
	if requester == "" && (o.Name != "" || o.Client != "") {
		requester = approval.APIClientPrefix + cmp.Or(o.Name, o.Client)
	}
	fields := []any{
		"created", ms(a.CreatedAt),
		"run", a.RunID,
		"requester", requester,
		"team", o.Team,
		"channel", o.Channel,
		"thread", o.ThreadTS,
		"n", n,
		"left", n,
	}
	for _, f := range []struct{ k, v string }{{"client", o.Client}, {"ctx", a.Context}, {"cb", a.CallbackURL}} {
		if f.v != "" {
			fields = append(fields, f.k, f.v)
		}
	}
	return fields
}

// callFields are the hash fields of the n-th (from 0) call of a new record.
func callFields(n int, cs *approval.Call, call agentrunner.ToolCallPart, metadata map[string]map[string]any) ([]any, error) {
	p := "c" + strconv.Itoa(n+1) + "."
	fields := []any{
		"i:" + cs.ID, n + 1,
		p + "id", cs.ID,
		p + "tool", cs.Tool,
		p + "kind", string(cs.Kind),
		p + "route", cs.Route,
		p + "need", cs.Required,
		p + "st", string(approval.CallPending),
	}
	for _, f := range []struct{ k, v string }{{"rule", cs.Rule}, {"perr", cs.PolicyError}} {
		if f.v != "" {
			fields = append(fields, p+f.k, f.v)
		}
	}
	if call.Args != nil {
		fields = append(fields, p+"args", string(call.Args))
		if len(call.Args) > homeArgsMax {
			// What a Home shows of them, so that it reads no more.
			fields = append(fields, p+"ap", strings.ToValidUTF8(string(call.Args[:homeArgsMax]), ""))
		}
	}
	if key, ok := approval.ArgsKey(call); ok {
		fields = append(fields, p+"ak", key)
	}
	if md, ok := metadata[cs.ID]; ok {
		b, err := json.Marshal(md)
		if err != nil {
			return nil, fmt.Errorf("metadata of %s: %w", cs.ID, err)
		}
		fields = append(fields, p+"rq", string(b))
	}
	if cs.Message.Channel != "" || cs.Message.ID != "" {
		fields = append(fields, p+"ch", cs.Message.Channel, p+"ts", cs.Message.ID)
	}
	return fields, nil
}

// Get returns the record of token. It returns approval.ErrNotFound if the
// token is unknown or its record is gone.
func (s *Store) Get(ctx context.Context, token string) (*approval.Request, error) {
	if !validToken(token) {
		return nil, fmt.Errorf("get %s: %w", short(token), approval.ErrNotFound)
	}
	m, err := s.rdb.HGetAll(ctx, s.recKey(token)).Result()
	if err != nil {
		return nil, fmt.Errorf("get %s: %w", short(token), err)
	}
	if len(m) == 0 {
		return nil, fmt.Errorf("get %s: %w", short(token), approval.ErrNotFound)
	}
	a, err := s.parseApproval(token, m)
	if err != nil {
		return nil, fmt.Errorf("get %s: %w", short(token), err)
	}
	return a, nil
}

// SetMessage records the Slack message that shows a call, so that whoever
// ends the token can update it. It returns approval.ErrNotFound if the
// token is unknown and approval.ErrNotPending if callID is not one of its
// calls.
func (s *Store) SetMessage(ctx context.Context, token, callID string, ref approval.MessageRef) error {
	if !validToken(token) {
		return fmt.Errorf("set message %s: %w", short(token), approval.ErrNotFound)
	}
	code, err := messageScript.Run(ctx, s.rdb, []string{s.recKey(token)}, callID, ref.Channel, ref.ID).Text()
	if err != nil {
		return fmt.Errorf("set message %s: %w", short(token), err)
	}
	if err := codeErr(code); err != nil {
		return fmt.Errorf("set message %s %s: %w", short(token), callID, err)
	}
	return nil
}

// createScript writes the full record. It fills in a record a replica of
// an older version announced first (its Tokens.Open wrote a minimal record
// with the deadline and the waiter; none does now), so that records of
// both versions stay readable during a rolling deploy.
// ARGV 7: deadline (ms), empty to keep the announced one, 8: default deadline (ms),
// 9: number of field/value strings that follow, then the fields.
var createScript = redis.NewScript(scriptPrelude + `
local st = redis.call('HGET', rec, 'state')
if st then
  if redis.call('HEXISTS', rec, 'created') == 1 then return {'e:duplicate'} end
  if st ~= 'open' then return {'e:' .. st} end
end
local exp = ARGV[7]
if exp == '' then exp = redis.call('HGET', rec, 'exp') or ARGV[8] end
local args = {'HSET', rec, 'v', '1', 'state', 'open', 'exp', exp}
local nf = tonumber(ARGV[9])
for j = 10, 9 + nf do args[#args + 1] = ARGV[j] end
redis.call(unpack(args))
settle(exp)
local top = redis.call('HMGET', rec, 'n', 'run', 'requester')
for i = 1, tonumber(top[1]) do
  local p = 'c' .. i .. '.'
  local f = redis.call('HMGET', rec, p .. 'id', p .. 'tool', p .. 'args', p .. 'route', p .. 'kind')
  audit({'type', 'requested', 'run', top[2] or '', 'by', top[3] or '', 'call', f[1] or '',
    'tool', f[2] or '', 'args', f[3] or '', 'route', f[4] or '', 'decision', f[5] or ''})
end
return {'ok', exp}
`)

// messageScript records the Slack message of a call.
// KEYS: rec. ARGV: call id, channel, ts.
var messageScript = redis.NewScript(`
if redis.call('EXISTS', KEYS[1]) == 0 then return 'e:notfound' end
local i = redis.call('HGET', KEYS[1], 'i:' .. ARGV[1])
if not i then return 'e:notpending' end
redis.call('HSET', KEYS[1], 'c' .. i .. '.ch', ARGV[2], 'c' .. i .. '.ts', ARGV[3])
return 'ok'
`)

// Owner returns the API client that owns token (Approval.Client), reading
// that one field and not the record: the HTTP API checks ownership with it
// before loading anything, so another client's token, however large its
// record, costs what an unknown one does. It returns approval.ErrNotFound if the
// token is unknown, its record is gone, or no API client owns it (a run
// started from Slack).
func (s *Store) Owner(ctx context.Context, token string) (string, error) {
	if !validToken(token) {
		return "", fmt.Errorf("owner %s: %w", short(token), approval.ErrNotFound)
	}
	client, err := s.rdb.HGet(ctx, s.recKey(token), "client").Result()
	if isRedisNil(err) || (err == nil && client == "") {
		return "", fmt.Errorf("owner %s: %w", short(token), approval.ErrNotFound)
	}
	if err != nil {
		return "", fmt.Errorf("owner %s: %w", short(token), err)
	}
	return client, nil
}
