package store

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
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
	cmd, unconfirmed := s.runConfirmed(ctx, "create", time.Time{}, createScript, s.tokenKeys(a.Token), withTrace(ctx, args)...)
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
	if key, ok := argsKey(call); ok {
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

// errDuplicate is Create's and Open's error for a token that exists.
var errDuplicate = &approval.Error{Code: approval.ECONFLICT, Message: "resume token already exists"}

// codeErr maps the error codes of the scripts to approval's errors.
func codeErr(code string) error {
	if !strings.HasPrefix(code, "e:") {
		return nil
	}
	switch code {
	case "e:notfound":
		return approval.ErrNotFound
	case "e:notpending":
		return approval.ErrNotPending
	case "e:duplicate":
		return errDuplicate
	case "e:decided":
		return approval.ErrDecided
	case "e:invalid":
		return approval.ErrInvalid
	case "e:resolved":
		return approval.ErrResolved
	case "e:expired":
		return approval.ErrExpired
	case "e:cancelled":
		return approval.ErrCancelled
	case "e:failed":
		return approval.ErrFailed
	case "e:late":
		return approval.ErrTooLate
	case "e:recording":
		return approval.ErrRecording
	}
	return fmt.Errorf("unexpected script reply %q", code)
}

// flatMap turns the flat name/value list of HGETALL in a script reply into
// a map.
func flatMap(kv []string) map[string]string {
	m := make(map[string]string, len(kv)/2)
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return m
}

// parseState reads a token's state: "open" in Redis is pending.
func parseState(v string) approval.State {
	if v == redisOpen {
		return approval.StatePending
	}
	return approval.State(v)
}

// parseOrigin reads who asked and where from a record (see recordFields):
// a requester "api:<name>" is an API client's, whose client field names it
// (records of runs with an API origin had none: the name is the client).
func parseOrigin(m map[string]string) approval.Origin {
	o := approval.Origin{Team: m["team"], Channel: m["channel"], ThreadTS: m["thread"], Client: m["client"]}
	name, api := strings.CutPrefix(m["requester"], approval.APIClientPrefix)
	switch {
	case !api:
		o.User = m["requester"]
	case o.Client == "":
		o.Client = name
	case name != o.Client:
		o.Name = name
	}
	return o
}

// callEnd is the status a call still pending ("undecided") when its token
// ended takes: the token's end, with the token's reason for a failure.
func callEnd(c *approval.Call, a *approval.Request) {
	switch a.State {
	case approval.StateExpired:
		c.Status = approval.CallExpired
	case approval.StateCancelled:
		c.Status = approval.CallCancelled
	default:
		c.Status = approval.CallFailed
		c.Reason = a.Reason
	}
}

// parseApproval reads a record written by the scripts, decoding each
// call's decision once (approval.Call.DecodeResult). It signs nothing:
// receipts are added when results are handed out (approval.Request.Results).
func (s *Store) parseApproval(token string, m map[string]string) (*approval.Request, error) {
	a := &approval.Request{
		Token:       token,
		RunID:       m["run"],
		Origin:      parseOrigin(m),
		CreatedAt:   fromMS(m["created"]),
		ExpiresAt:   fromMS(m["exp"]),
		State:       parseState(m["state"]),
		EndedAt:     fromMS(m["ended"]),
		EndedBy:     m["endby"],
		Reason:      m["reason"],
		Context:     m["ctx"],
		CallbackURL: m["cb"],
	}
	n, _ := strconv.Atoi(m["n"])
	a.Calls = make([]approval.Call, n)
	for i := range n {
		cs, err := parseCall(m, i, a)
		if err != nil {
			return nil, err
		}
		a.Calls[i] = cs
	}
	parseVotes(m, a.Calls)
	if raw := m["raw"]; raw != "" && n == 0 {
		// Resolved through Tokens.Resolve before any call was recorded.
		a.Given = agentrunner.NewDeferredToolResults()
		if err := json.Unmarshal([]byte(raw), a.Given); err != nil {
			return nil, fmt.Errorf("results: %w", err)
		}
	}
	return a, nil
}

// parseCall reads the i-th (from 0) call of a record, adding it to
// a.Requests: its decision (field res, in the wire format) and the results
// metadata given with it (md) are decoded here, once.
func parseCall(m map[string]string, i int, a *approval.Request) (approval.Call, error) {
	p := "c" + strconv.Itoa(i+1) + "."
	need, _ := strconv.Atoi(m[p+"need"])
	cs := approval.Call{
		ID:        m[p+"id"],
		Tool:      m[p+"tool"],
		Kind:      agentrunner.CallKind(m[p+"kind"]),
		Route:     m[p+"route"],
		Required:  max(need, 1),
		Status:    approval.CallStatus(m[p+"st"]),
		DecidedBy: m[p+"by"],
		DecidedAt: fromMS(m[p+"at"]),
		// The answer script records act "answer": the request's own API
		// client answered, not a person or a rule.
		ByClient: m[p+"act"] == "answer",
		Message:  approval.MessageRef{Channel: m[p+"ch"], ID: m[p+"ts"]},

		Rule: m[p+"rule"], PolicyError: m[p+"perr"],
	}
	switch cs.Status {
	case redisUndecided:
		callEnd(&cs, a)
	case approval.CallApproved:
		cs.ApprovedKey = m[p+"key"]
	}
	if r := m[p+"res"]; r != "" {
		if err := cs.DecodeResult([]byte(r)); err != nil {
			return cs, err
		}
	}
	if md := m[p+"md"]; md != "" {
		if err := json.Unmarshal([]byte(md), &cs.Metadata); err != nil {
			return cs, fmt.Errorf("results metadata of %s: %w", cs.ID, err)
		}
	}
	part := agentrunner.ToolCallPart{ToolName: cs.Tool, ToolCallID: cs.ID}
	if args, ok := m[p+"args"]; ok {
		part.Args = json.RawMessage(args)
	}
	if cs.Kind == agentrunner.KindApproval {
		a.Requests.Approvals = append(a.Requests.Approvals, part)
	} else {
		a.Requests.Calls = append(a.Requests.Calls, part)
	}
	if out, ok := m[p+"out"]; ok {
		var o approval.Outcome
		if err := json.Unmarshal([]byte(out), &o); err != nil {
			return cs, fmt.Errorf("outcome of %s: %w", cs.ID, err)
		}
		cs.Outcome = &o
	}
	if rq, ok := m[p+"rq"]; ok {
		var md map[string]any
		if err := json.Unmarshal([]byte(rq), &md); err != nil {
			return cs, fmt.Errorf("metadata of %s: %w", cs.ID, err)
		}
		if a.Requests.Metadata == nil {
			a.Requests.Metadata = map[string]map[string]any{}
		}
		a.Requests.Metadata[cs.ID] = md
	}
	return cs, nil
}

// parseVotes reads the votes of a record's calls: fields
// "c<i>.v:<user>" = "<key> <ms>", oldest first.
func parseVotes(m map[string]string, calls []approval.Call) {
	n := len(calls)
	for k, v := range m {
		if !strings.HasPrefix(k, "c") {
			continue
		}
		dot := strings.IndexByte(k, '.')
		if dot < 0 || !strings.HasPrefix(k[dot+1:], "v:") {
			continue
		}
		i, err := strconv.Atoi(k[1:dot])
		if err != nil || i < 1 || i > n {
			continue
		}
		key, at, _ := strings.Cut(v, " ")
		calls[i-1].Votes = append(calls[i-1].Votes, approval.Vote{By: k[dot+3:], Key: key, At: fromMS(at)})
	}
	for i := range calls {
		slices.SortFunc(calls[i].Votes, func(x, y approval.Vote) int {
			return cmp.Or(x.At.Compare(y.At), cmp.Compare(x.By, y.By))
		})
	}
}

// isRedisNil reports whether err is go-redis's "no such key" reply.
func isRedisNil(err error) bool { return errors.Is(err, redis.Nil) }
