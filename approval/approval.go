package approval

import (
	"encoding/json"
	"strings"
	"time"

	"github.com/slackapprove/slackbot/agentrunner"
)

// State is where a whole Request stands.
type State string

// Request states. A request is pending until it is resolved (every call
// decided, or answered at once through the API), expires, is cancelled, or
// fails.
const (
	StatePending   State = "pending"
	StateResolved  State = "resolved"
	StateExpired   State = "expired"
	StateCancelled State = "cancelled"
	StateFailed    State = "failed"
)

// CallStatus is where one Call stands.
type CallStatus string

// Call statuses. A call still pending when its request ended some other
// way takes the request's end: expired, cancelled, or failed (with the
// request's Reason).
const (
	CallPending   CallStatus = "pending"
	CallApproved  CallStatus = "approved"
	CallDenied    CallStatus = "denied"
	CallAnswered  CallStatus = "answered"
	CallFailed    CallStatus = "failed"
	CallExpired   CallStatus = "expired"
	CallCancelled CallStatus = "cancelled"
)

// APIClientPrefix marks a requester that is an HTTP API client, as
// policies see it: "api:<client>".
const APIClientPrefix = "api:"

// Origin says who asked and where from: the Slack workspace, channel,
// thread and user of a run started in Slack, or the API client of a
// request made through the HTTP API. Routing matches on Channel; policies
// judge Requester(); a run's answer is posted to Channel in ThreadTS.
type Origin struct {
	Team     string `json:"team,omitempty"`
	Channel  string `json:"channel,omitempty"`
	ThreadTS string `json:"thread_ts,omitempty"`
	// User is the Slack user who started the run.
	User string `json:"user,omitempty"`
	// Client is the authenticated HTTP API client (from API_KEYS) that
	// made the request and owns it: only it may read, answer or cancel it
	// through the API. Empty for runs started in Slack.
	Client string `json:"client,omitempty"`
	// Name is who asked as an API client names them (free text, escaped
	// wherever it is shown); empty means Client. Policies never see it.
	Name string `json:"name,omitempty"`
}

// RunOrigin returns o. It makes *Origin, and any struct that embeds one,
// an OriginCarrier, so runs can carry more deps than the origin.
func (o *Origin) RunOrigin() *Origin { return o }

// OriginCarrier is a run's Deps that knows the run's origin.
type OriginCarrier interface {
	RunOrigin() *Origin
}

// Requester is who asked, as policies and the audit stream name them: the
// Slack user id, else "api:<client>" for an API client, else "".
func (o *Origin) Requester() string {
	switch {
	case o == nil:
		return ""
	case o.User != "":
		return o.User
	case o.Client != "":
		return APIClientPrefix + o.Client
	}
	return ""
}

// Shown is who asked as people see it on a card: the Slack user id (to
// mention), else the API client's Name, else the client.
func (o *Origin) Shown() string {
	switch {
	case o == nil:
		return ""
	case o.User != "":
		return o.User
	case o.Name != "":
		return o.Name
	}
	return o.Client
}

// Claim is what an API client said of who asked, beside its key: the
// requester it named (a person, a coding agent's working directory, an
// MCP client), or "" when it named none or only itself. It is the
// client's word, never an identity: cards show it as a claim, and a
// grant covers only calls that claim the same.
func (o *Origin) Claim() string {
	if o == nil || o.User != "" || o.Name == o.Client {
		return ""
	}
	return o.Name
}

// OriginFrom returns the origin of a run: its Deps when they are an
// *Origin, an Origin or an OriginCarrier. It never returns nil; a run with
// no origin gets the zero Origin (no channel, no user), which only routes
// without `when.channels` match.
func OriginFrom(rc *agentrunner.RunContext) *Origin {
	if rc == nil {
		return &Origin{}
	}
	switch d := rc.Deps.(type) {
	case *Origin:
		if d != nil {
			return d
		}
	case Origin:
		return &d
	case OriginCarrier:
		if o := d.RunOrigin(); o != nil {
			return o
		}
	}
	return &Origin{}
}

// MessageRef locates the message that shows a call (its card) on the
// surface that posted it: the conversation it is in, and its id there
// (Slack's message timestamp). The JSON names are those of the stored
// records, read by every replica of a rolling deploy.
type MessageRef struct {
	Channel string `json:"channel,omitempty"`
	ID      string `json:"ts,omitempty"`
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
	// StepUp is the step-up proof the vote came with, or nil.
	StepUp *StepUp `json:"step_up,omitempty"`
}

// Outcome is what a decided call's tool did once it ran: Status "ran" or
// "failed" (or "lost" when the process running it died), and a short
// summary of its result or error.
type Outcome struct {
	Status  string `json:"status"`
	Summary string `json:"summary,omitempty"`
}

// Call is one pending tool call of a Request and where it stands.
type Call struct {
	ID   string               `json:"id"`
	Tool string               `json:"tool"`
	Kind agentrunner.CallKind `json:"kind"`
	// Route names the route of the routing file that sent the call to its
	// approvers; empty when no route matched.
	Route string `json:"route,omitempty"`
	// Required is how many distinct approvers must approve; at least 1.
	Required int `json:"required"`
	// Rule says why the call waits for a person (RuleTool, RuleArguments,
	// RuleMCP, RuleClient); empty for questions and external calls.
	Rule string `json:"rule,omitempty"`
	// PolicyError is why the route's policy could not decide the call
	// (a CEL runtime error), when it could not: a person decides instead.
	PolicyError string     `json:"policy_error,omitempty"`
	Status      CallStatus `json:"status"`
	Votes       []Vote     `json:"votes,omitempty"`
	DecidedBy   string     `json:"decided_by,omitempty"`
	DecidedAt   time.Time  `json:"decided_at,omitzero"`
	// ByClient: the request's own API client decided the call (its answers
	// are authoritative), and DecidedBy is its name (and who it says
	// answered, after a "/"), not a Slack user.
	ByClient bool `json:"by_client,omitempty"`
	// ApprovedKey is, once the call is approved, the Vote.Key of the
	// arguments approved.
	ApprovedKey string `json:"approved_key,omitempty"`
	// Action is the decision recorded on the call (ActionApprove,
	// ActionDeny, ActionAnswer, ActionFail or ActionRetry); empty while it
	// has none and for a call that ended with its request. The wire form
	// a run receives is built from it and the fields below when results
	// are handed out (Request.Results).
	Action Action `json:"action,omitempty"`
	// Reason is why the call did not run as asked, as people and the
	// model are told it: the denial message, the failure or retry
	// message, or why it ended with no decision (the request's Reason).
	// It is empty for a call approved or answered.
	Reason string `json:"reason,omitempty"`
	// OverrideArgs are the arguments an approver edited the call to run
	// with, or nil.
	OverrideArgs json.RawMessage `json:"override_args,omitempty"`
	// Answer is the answer to a question or the result of an external
	// call, or nil.
	Answer json.RawMessage `json:"answer,omitempty"`
	// Metadata is what the decision gave the tool in the results'
	// metadata; receipts are added only when results are handed out.
	Metadata map[string]any `json:"metadata,omitempty"`
	// Message is the card that shows the call, once posted.
	Message MessageRef `json:"message,omitzero"`
	// Outcome is what the call's tool did, once it ran, so that every
	// later rendering of the card shows it.
	Outcome *Outcome `json:"outcome,omitempty"`
	// StepUp is the step-up proof of the approval that decided the call
	// (DecidedBy's), or nil; each vote of a quorum has its own.
	StepUp *StepUp `json:"step_up,omitempty"`
}

// Decided reports whether the call has a decision (approved, denied,
// answered or failed), as opposed to pending or ended with the request.
func (c *Call) Decided() bool {
	switch c.Status {
	case CallApproved, CallDenied, CallAnswered:
		return true
	case CallFailed:
		return c.Action != "" // else the request failed around it
	}
	return false
}

// QuorumVotes is how many approvals count toward the call's quorum: the
// most any one set of arguments has (votes for different arguments never
// add up), or the approved set's once the call is approved.
func (c *Call) QuorumVotes() int {
	if c.Status == CallApproved && c.ApprovedKey != "" {
		return c.VotesFor(c.ApprovedKey)
	}
	most := 0
	for _, v := range c.Votes {
		most = max(most, c.VotesFor(v.Key))
	}
	return most
}

// VotesFor counts the votes for the arguments with the given key.
func (c *Call) VotesFor(key string) int {
	n := 0
	for _, v := range c.Votes {
		if v.Key == key {
			n++
		}
	}
	return n
}

// AnsweredBy names who decided the call, as the results' answered_by
// does: every approver of the approved arguments for a quorum, the decider
// otherwise (see Approvers).
func (c *Call) AnsweredBy() string { return strings.Join(c.Approvers(), ",") }

// Request is the record of one resume token: the calls a run waits on,
// who asked and where, the decisions so far, and how it ended.
type Request struct {
	Token string `json:"token"`
	// RunID is the run that waits on the token; empty for requests made
	// through the HTTP API.
	RunID    string                           `json:"run_id,omitempty"`
	Origin   Origin                           `json:"origin,omitzero"`
	Requests agentrunner.DeferredToolRequests `json:"requests"`
	// Calls has one entry per pending call, in Requests.IDs order.
	Calls []Call `json:"calls"`
	// Context is free text an API client gave to show on the cards: why
	// the calls are made.
	Context string `json:"context,omitempty"`
	// CallbackURL, when set, is told the outcome when the request ends.
	CallbackURL string    `json:"callback_url,omitempty"`
	CreatedAt   time.Time `json:"created_at,omitzero"`
	ExpiresAt   time.Time `json:"expires_at,omitzero"`
	State       State     `json:"state"`
	EndedAt     time.Time `json:"ended_at,omitzero"`
	EndedBy     string    `json:"ended_by,omitempty"`
	// Reason is what the model is told after agentrunner.NoDecisionPrefix
	// when the request expired, was cancelled or failed.
	Reason string `json:"reason,omitempty"`
	// Given is what a token opened for a run was resolved with before
	// any of its calls was recorded, as given; nil otherwise. Only
	// replicas from before approval became the one writer stored it: it
	// is read so that their records still resume during a rolling deploy.
	// Results hands it out in place of decisions.
	Given *agentrunner.DeferredToolResults `json:"given,omitempty"`
}

// Call returns the call with the given tool_call_id, or nil.
func (r *Request) Call(id string) *Call {
	for i := range r.Calls {
		if r.Calls[i].ID == id {
			return &r.Calls[i]
		}
	}
	return nil
}

// EndErr returns the error of deciding on r once it ended (ErrExpired,
// ErrCancelled, ErrFailed, ErrResolved), or nil while it is pending.
func (r *Request) EndErr() error {
	switch r.State {
	case StatePending:
		return nil
	case StateExpired:
		return ErrExpired
	case StateCancelled:
		return ErrCancelled
	case StateFailed:
		return ErrFailed
	}
	return ErrResolved
}

// NoDecision returns the error a waiter of an expired, cancelled or failed
// request receives, or nil for a pending or resolved one.
func (r *Request) NoDecision() *agentrunner.NoDecisionError {
	reason := func(def string) string {
		if r.Reason == "" {
			return def
		}
		return r.Reason
	}
	switch r.State {
	case StateExpired:
		return &agentrunner.NoDecisionError{Reason: reason(agentrunner.ReasonExpired), Cause: agentrunner.ErrTokenExpired}
	case StateCancelled:
		return &agentrunner.NoDecisionError{Reason: reason(agentrunner.ReasonCancelled), Cause: agentrunner.ErrTokenCancelled}
	case StateFailed:
		return &agentrunner.NoDecisionError{Reason: reason("failed"), Cause: agentrunner.ErrTokenFailed}
	}
	return nil
}
