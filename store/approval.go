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
)

// State is the lifecycle state of a token.
type State string

// Token states. A token is open until it is resolved (every call decided,
// or answered at once through Resolve), expires, is cancelled, or fails.
const (
	StateOpen      State = "open"
	StateResolved  State = "resolved"
	StateExpired   State = "expired"
	StateCancelled State = "cancelled"
	StateFailed    State = "failed"
)

// CallStatus is the state of one pending call.
type CallStatus string

// Call statuses. CallUndecided marks a call that was still pending when
// its token ended some other way (expiry, cancellation, failure, or a
// Resolve that did not answer it); Approval.State says which.
const (
	CallPending   CallStatus = "pending"
	CallApproved  CallStatus = "approved"
	CallDenied    CallStatus = "denied"
	CallAnswered  CallStatus = "answered"
	CallFailed    CallStatus = "failed"
	CallUndecided CallStatus = "undecided"
)

// Source is where the run that asked was started.
type Source struct {
	Team     string `json:"team,omitempty"`
	Channel  string `json:"channel,omitempty"`
	ThreadTS string `json:"thread_ts,omitempty"`
}

// MessageRef locates the Slack message that shows a call.
type MessageRef struct {
	Channel string `json:"channel,omitempty"`
	TS      string `json:"ts,omitempty"`
}

// Vote is one approver's approval of a call that needs several.
type Vote struct {
	By string    `json:"by"`
	At time.Time `json:"at"`
	// Key identifies the arguments approved: "-" for the call's own, a
	// digest of the override arguments otherwise. Only votes with the same
	// key count toward one quorum, so no call runs with arguments fewer
	// than Required people saw.
	Key string `json:"key"`
}

// CallState is the state of one pending call of a token.
type CallState struct {
	ID   string               `json:"id"`
	Tool string               `json:"tool"`
	Kind agentrunner.CallKind `json:"kind"`
	// Route names the routing rule that sent the call to its approvers.
	Route string `json:"route,omitempty"`
	// Required is how many distinct approvers must approve; at least 1.
	Required  int        `json:"required"`
	Status    CallStatus `json:"status"`
	Votes     []Vote     `json:"votes,omitempty"`
	DecidedBy string     `json:"decided_by,omitempty"`
	DecidedAt time.Time  `json:"decided_at,omitzero"`
	// Result is the decision in the wire format: an ApprovalResult for
	// approvals, a CallResult for questions and external calls.
	Result  json.RawMessage `json:"result,omitempty"`
	Message MessageRef      `json:"message,omitzero"`

	// Outcome is what the call's tool did once it ran (SetOutcome), so
	// whoever re-renders the call's message shows it.
	Outcome *ToolOutcome `json:"outcome,omitempty"`

	key string // key of the decision, see Vote.Key
	md  string // results metadata (JSON) given with the decision
}

// ToolOutcome is what a decided call's tool did: Status "ran" or "failed",
// and a short summary of its result or error.
type ToolOutcome struct {
	Status  string `json:"status"`
	Summary string `json:"summary,omitempty"`
}

// Approval is the record of a resume token: the calls a run waits on, who
// asked and where, the decisions so far, and how it ended.
type Approval struct {
	Token string `json:"token"`
	// RunID is the run that waits on the token; empty for requests made
	// through the HTTP API.
	RunID string `json:"run_id,omitempty"`
	// Requester is the Slack user or API client the run acts for.
	Requester string                           `json:"requester,omitempty"`
	Source    Source                           `json:"source,omitzero"`
	Requests  agentrunner.DeferredToolRequests `json:"requests"`
	// Calls has one entry per pending call, in Requests.IDs order. On
	// Create only ID, Route, Required and Message are read; the rest is
	// derived.
	Calls     []CallState `json:"calls"`
	CreatedAt time.Time   `json:"created_at,omitzero"`
	ExpiresAt time.Time   `json:"expires_at,omitzero"`
	State     State       `json:"state"`
	EndedAt   time.Time   `json:"ended_at,omitzero"`
	EndedBy   string      `json:"ended_by,omitempty"`
	// Reason is what the model is told after agentrunner.NoDecisionPrefix
	// when the token expired, was cancelled or failed.
	Reason string `json:"reason,omitempty"`
	// Results is what the waiting run receives, set once the token ended:
	// the decisions when resolved, agentrunner.NoDecision otherwise.
	Results *agentrunner.DeferredToolResults `json:"results,omitempty"`

	// Client is the HTTP API client that created the token, its owner:
	// only that client may see, answer or cancel it through the API.
	// Empty for tokens of runs started from Slack.
	Client string `json:"client,omitempty"`
	// Context is the free text an API client gave to show on the cards.
	Context string `json:"context,omitempty"`
	// CallbackURL, when set, is told the outcome when the token ends: the
	// script that ends it queues a job on the callback queue
	// (Store.CallbackQueue).
	CallbackURL string `json:"callback_url,omitempty"`
}

// Call returns the state of the call with the given id.
func (a *Approval) Call(id string) (*CallState, bool) {
	for i := range a.Calls {
		if a.Calls[i].ID == id {
			return &a.Calls[i], true
		}
	}
	return nil, false
}

// NoDecision returns the error a waiter of an expired, cancelled or failed
// token receives, or nil for an open or resolved token.
func (a *Approval) NoDecision() *agentrunner.NoDecisionError {
	switch a.State {
	case StateExpired:
		return &agentrunner.NoDecisionError{Reason: a.reason(agentrunner.ReasonExpired), Cause: agentrunner.ErrTokenExpired}
	case StateCancelled:
		return &agentrunner.NoDecisionError{Reason: a.reason(agentrunner.ReasonCancelled), Cause: agentrunner.ErrTokenCancelled}
	case StateFailed:
		return &agentrunner.NoDecisionError{Reason: a.reason("failed"), Cause: agentrunner.ErrTokenFailed}
	}
	return nil
}

func (a *Approval) reason(def string) string {
	if a.Reason == "" {
		return def
	}
	return a.Reason
}

// Create stores the record of a token, puts its deadline in the expiry set
// and writes a "requested" audit event per call. Create the record before
// showing the token to anyone (posting Slack messages), so that no click
// can arrive before it.
//
// Open and Create compose: when Events.Open announced the token first (as
// agentrunner.AskHandler does before calling ask), Create fills in that
// record and keeps its waiter; a zero ExpiresAt then keeps Open's deadline.
// Without Open, a zero ExpiresAt means DefaultTimeout from now. On success
// a.CreatedAt, a.ExpiresAt, a.State and a.Calls are filled in.
//
// Create returns ErrInvalid for a malformed token or request, ErrDuplicate
// if the token was already created, and ErrResolved, ErrExpired,
// ErrCancelled or ErrFailed if it was opened and has ended since.
func (s *Store) Create(ctx context.Context, a *Approval) error {
	if !validToken(a.Token) {
		return fmt.Errorf("create: %w: malformed token", ErrInvalid)
	}
	ids := a.Requests.IDs()
	if len(ids) == 0 {
		return fmt.Errorf("create %s: %w: no pending calls", short(a.Token), ErrInvalid)
	}
	specs := map[string]CallState{}
	for _, c := range a.Calls {
		if a.Requests.Kind(c.ID) == "" {
			return fmt.Errorf("create %s: %w: call %q is not in the requests", short(a.Token), ErrInvalid, c.ID)
		}
		specs[c.ID] = c
	}
	now := s.now()
	if a.CreatedAt.IsZero() {
		a.CreatedAt = now
	}
	fields := []any{
		"created", ms(a.CreatedAt),
		"run", a.RunID,
		"requester", a.Requester,
		"team", a.Source.Team,
		"channel", a.Source.Channel,
		"thread", a.Source.ThreadTS,
		"n", len(ids),
		"left", len(ids),
	}
	for _, f := range []struct{ k, v string }{{"client", a.Client}, {"ctx", a.Context}, {"cb", a.CallbackURL}} {
		if f.v != "" {
			fields = append(fields, f.k, f.v)
		}
	}
	calls := make([]CallState, 0, len(ids))
	seen := map[string]bool{}
	for n, id := range ids {
		if id == "" || seen[id] {
			return fmt.Errorf("create %s: %w: empty or repeated tool_call_id %q", short(a.Token), ErrInvalid, id)
		}
		seen[id] = true
		call, _ := a.Requests.Call(id)
		spec := specs[id]
		cs := CallState{
			ID:       id,
			Tool:     call.ToolName,
			Kind:     a.Requests.Kind(id),
			Route:    spec.Route,
			Required: max(spec.Required, 1),
			Status:   CallPending,
			Message:  spec.Message,
		}
		calls = append(calls, cs)
		p := "c" + strconv.Itoa(n+1) + "."
		fields = append(fields,
			"i:"+id, n+1,
			p+"id", id,
			p+"tool", cs.Tool,
			p+"kind", string(cs.Kind),
			p+"route", cs.Route,
			p+"need", cs.Required,
			p+"st", string(CallPending),
		)
		if call.Args != nil {
			fields = append(fields, p+"args", string(call.Args))
		}
		if key, ok := argsKey(call); ok {
			fields = append(fields, p+"ak", key)
		}
		if md, ok := a.Requests.Metadata[id]; ok {
			b, err := json.Marshal(md)
			if err != nil {
				return fmt.Errorf("create %s: metadata of %s: %w", short(a.Token), id, err)
			}
			fields = append(fields, p+"rq", string(b))
		}
		if cs.Message.Channel != "" || cs.Message.TS != "" {
			fields = append(fields, p+"ch", cs.Message.Channel, p+"ts", cs.Message.TS)
		}
	}
	exp := ""
	if !a.ExpiresAt.IsZero() {
		exp = ms(a.ExpiresAt)
	}
	args := s.tokenArgs(a.Token, now, exp, ms(now.Add(DefaultTimeout)), len(fields))
	args = append(args, fields...)
	res, err := createScript.Run(ctx, s.rdb, s.tokenKeys(a.Token), args...).StringSlice()
	if err != nil {
		return fmt.Errorf("create %s: %w", short(a.Token), err)
	}
	if err := codeErr(res[0]); err != nil {
		return fmt.Errorf("create %s: %w", short(a.Token), err)
	}
	a.ExpiresAt = fromMS(res[1])
	a.State = StateOpen
	a.Calls = calls
	return nil
}

// Get returns the record of token. It returns ErrNotFound if the token is
// unknown or its record is gone.
func (s *Store) Get(ctx context.Context, token string) (*Approval, error) {
	if !validToken(token) {
		return nil, fmt.Errorf("get %s: %w", short(token), ErrNotFound)
	}
	m, err := s.rdb.HGetAll(ctx, s.recKey(token)).Result()
	if err != nil {
		return nil, fmt.Errorf("get %s: %w", short(token), err)
	}
	if len(m) == 0 {
		return nil, fmt.Errorf("get %s: %w", short(token), ErrNotFound)
	}
	a, err := parseApproval(token, m)
	if err != nil {
		return nil, fmt.Errorf("get %s: %w", short(token), err)
	}
	return a, nil
}

// SetMessage records the Slack message that shows a call, so that whoever
// ends the token can update it. It returns ErrNotFound if the token is
// unknown and ErrNotPendingCall if callID is not one of its calls.
func (s *Store) SetMessage(ctx context.Context, token, callID, channel, ts string) error {
	if !validToken(token) {
		return fmt.Errorf("set message %s: %w", short(token), ErrNotFound)
	}
	code, err := messageScript.Run(ctx, s.rdb, []string{s.recKey(token)}, callID, channel, ts).Text()
	if err != nil {
		return fmt.Errorf("set message %s: %w", short(token), err)
	}
	if err := codeErr(code); err != nil {
		return fmt.Errorf("set message %s %s: %w", short(token), callID, err)
	}
	return nil
}

// codeErr maps the error codes of the scripts to the store's errors.
func codeErr(code string) error {
	if !strings.HasPrefix(code, "e:") {
		return nil
	}
	switch code {
	case "e:notfound":
		return ErrNotFound
	case "e:notpending":
		return ErrNotPendingCall
	case "e:duplicate":
		return ErrDuplicate
	case "e:decided":
		return ErrDecided
	case "e:invalid":
		return ErrInvalid
	case "e:resolved":
		return ErrResolved
	case "e:expired":
		return ErrExpired
	case "e:cancelled":
		return ErrCancelled
	case "e:failed":
		return ErrFailed
	case "e:late":
		return ErrTooLate
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

// parseApproval reads a record written by the scripts.
func parseApproval(token string, m map[string]string) (*Approval, error) {
	a := &Approval{
		Token:       token,
		RunID:       m["run"],
		Requester:   m["requester"],
		Source:      Source{Team: m["team"], Channel: m["channel"], ThreadTS: m["thread"]},
		CreatedAt:   fromMS(m["created"]),
		ExpiresAt:   fromMS(m["exp"]),
		State:       State(m["state"]),
		EndedAt:     fromMS(m["ended"]),
		EndedBy:     m["endby"],
		Reason:      m["reason"],
		Client:      m["client"],
		Context:     m["ctx"],
		CallbackURL: m["cb"],
	}
	n, _ := strconv.Atoi(m["n"])
	a.Calls = make([]CallState, n)
	for i := range n {
		p := "c" + strconv.Itoa(i+1) + "."
		need, _ := strconv.Atoi(m[p+"need"])
		cs := CallState{
			ID:        m[p+"id"],
			Tool:      m[p+"tool"],
			Kind:      agentrunner.CallKind(m[p+"kind"]),
			Route:     m[p+"route"],
			Required:  max(need, 1),
			Status:    CallStatus(m[p+"st"]),
			DecidedBy: m[p+"by"],
			DecidedAt: fromMS(m[p+"at"]),
			Message:   MessageRef{Channel: m[p+"ch"], TS: m[p+"ts"]},
			key:       m[p+"key"],
			md:        m[p+"md"],
		}
		if r := m[p+"res"]; r != "" {
			cs.Result = json.RawMessage(r)
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
			var o ToolOutcome
			if err := json.Unmarshal([]byte(out), &o); err != nil {
				return nil, fmt.Errorf("outcome of %s: %w", cs.ID, err)
			}
			cs.Outcome = &o
		}
		if rq, ok := m[p+"rq"]; ok {
			var md map[string]any
			if err := json.Unmarshal([]byte(rq), &md); err != nil {
				return nil, fmt.Errorf("metadata of %s: %w", cs.ID, err)
			}
			if a.Requests.Metadata == nil {
				a.Requests.Metadata = map[string]map[string]any{}
			}
			a.Requests.Metadata[cs.ID] = md
		}
		a.Calls[i] = cs
	}
	// Votes are fields "c<i>.v:<user>" = "<key> <ms>".
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
		a.Calls[i-1].Votes = append(a.Calls[i-1].Votes, Vote{By: k[dot+3:], Key: key, At: fromMS(at)})
	}
	for i := range a.Calls {
		slices.SortFunc(a.Calls[i].Votes, func(x, y Vote) int {
			return cmp.Or(x.At.Compare(y.At), cmp.Compare(x.By, y.By))
		})
	}
	res, err := a.results(m["raw"])
	if err != nil {
		return nil, err
	}
	a.Results = res
	return a, nil
}

// results derives what the waiting run receives from the record.
func (a *Approval) results(raw string) (*agentrunner.DeferredToolResults, error) {
	switch a.State {
	case StateResolved:
	case StateExpired, StateCancelled, StateFailed:
		return agentrunner.NoDecision(a.Requests, a.NoDecision().Reason), nil
	default:
		return nil, nil
	}
	if raw != "" && len(a.Calls) == 0 {
		res := agentrunner.NewDeferredToolResults()
		if err := json.Unmarshal([]byte(raw), res); err != nil {
			return nil, fmt.Errorf("results: %w", err)
		}
		return res, nil
	}
	res := agentrunner.NewDeferredToolResults()
	for _, c := range a.Calls {
		switch c.Status {
		case CallApproved, CallDenied, CallAnswered, CallFailed:
		default:
			continue
		}
		if c.Kind == agentrunner.KindApproval {
			var r agentrunner.ApprovalResult
			if err := json.Unmarshal(c.Result, &r); err != nil {
				return nil, fmt.Errorf("result of %s: %w", c.ID, err)
			}
			res.Approvals[c.ID] = r
		} else {
			var r agentrunner.CallResult
			if err := json.Unmarshal(c.Result, &r); err != nil {
				return nil, fmt.Errorf("result of %s: %w", c.ID, err)
			}
			res.Calls[c.ID] = r
		}
		if by := c.answeredBy(); by != "" {
			res.AnsweredBy[c.ID] = by
		}
		if c.md != "" {
			var md map[string]any
			if err := json.Unmarshal([]byte(c.md), &md); err != nil {
				return nil, fmt.Errorf("results metadata of %s: %w", c.ID, err)
			}
			res.Metadata[c.ID] = md
		}
	}
	return res, nil
}

// answeredBy names who decided a call: every approver of the approved
// arguments for a quorum, the decider otherwise.
func (c *CallState) answeredBy() string {
	if c.Status != CallApproved || c.Required < 2 {
		return c.DecidedBy
	}
	var by []string
	for _, v := range c.Votes {
		if v.Key == c.key {
			by = append(by, v.By)
		}
	}
	return strings.Join(by, ",")
}

// QuorumVotes is how many approvals count toward the call's quorum: the
// most any one set of arguments has (votes for different arguments never
// add up), or the approved set's once the call is approved.
func (c *CallState) QuorumVotes() int {
	if c.Status == CallApproved && c.key != "" {
		return c.votesFor(c.key)
	}
	most := 0
	for _, v := range c.Votes {
		most = max(most, c.votesFor(v.Key))
	}
	return most
}

// votesFor counts the votes for the arguments with the given key.
func (c *CallState) votesFor(key string) int {
	n := 0
	for _, v := range c.Votes {
		if v.Key == key {
			n++
		}
	}
	return n
}

// isRedisNil reports whether err is go-redis's "no such key" reply.
func isRedisNil(err error) bool { return errors.Is(err, redis.Nil) }
