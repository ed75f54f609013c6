package bot

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/slackapprove/slackbot/agentrunner"
)

// Approval is one resume token's pending calls, as bot sees them. The
// store keeps it; cmd/slackbot adapts the store to Approvals.
type Approval struct {
	Token     string
	RunID     string
	Requests  agentrunner.DeferredToolRequests
	Origin    Origin
	Context   string // free text from an API client, shown on the cards
	CreatedAt time.Time
	ExpiresAt time.Time
	State     ApprovalState
	Calls     []*CallStatus // in the order the calls were asked

	// Client is the authenticated API client that owns the token (Origin
	// holds the requester it named, free text); empty for Slack runs.
	// Policies see "api:<Client>" as the requester.
	Client string
}

// Call returns the status of the call with the given tool_call_id.
func (a *Approval) Call(id string) *CallStatus {
	for _, c := range a.Calls {
		if c.ID == id {
			return c
		}
	}
	return nil
}

// ApprovalState is the state of a whole token.
type ApprovalState string

// Token states.
const (
	ApprovalPending   ApprovalState = "pending"
	ApprovalResolved  ApprovalState = "resolved"
	ApprovalExpired   ApprovalState = "expired"
	ApprovalCancelled ApprovalState = "cancelled"
	ApprovalFailed    ApprovalState = "failed"
)

// CallStatus is the state of one pending call and its Slack message.
type CallStatus struct {
	ID           string
	Kind         agentrunner.CallKind
	Route        string
	Required     int // distinct approvals needed
	State        CardState
	Votes        []Vote
	DecidedBy    string
	DecidedAt    time.Time
	Reason       string          // denial reason or failure message
	OverrideArgs json.RawMessage // set when approved with edited arguments
	Answer       json.RawMessage // answer to a question, external result
	Message      MessageRef      // where the call's card was posted
	Outcome      *ToolOutcome    // what the tool did, once it ran
}

// Action is what a decision does to a call.
type Action string

// Decision actions.
const (
	ActionApprove Action = "approve"
	ActionDeny    Action = "deny"
	ActionAnswer  Action = "answer"
	ActionFail    Action = "fail"
)

// Decision is one person's (or policy's) decision on one call.
type Decision struct {
	CallID       string
	By           string // Slack user id, "policy:<route>", API client
	Action       Action
	Reason       string          // denial reason, failure message
	OverrideArgs json.RawMessage // approve with these arguments instead
	Answer       json.RawMessage // for ActionAnswer
	// NotAfter, when set, is the last instant the decision may be
	// recorded at: one that reaches the store later records nothing
	// (ErrTooLate), so a click answered "nothing changed" at its
	// deadline stays unchanged.
	NotAfter time.Time
}

// Decided reports what a decision did.
type Decided struct {
	Approval *Approval   // the token after the decision
	Call     *CallStatus // the call after the decision
	// Changed is false when the decision repeated one already recorded
	// (a double click, a retry): nothing changed.
	Changed bool
	// Resolved is true for the one decision that resolved the token.
	Resolved bool
}

// Refusal is a click that was not allowed, for the audit stream.
type Refusal struct {
	Token, CallID, User, Reason string
}

// Approvals is what bot needs from the approval store.
type Approvals interface {
	// Create stores a new approval with every call pending. It returns an
	// error if the token exists.
	Create(ctx context.Context, a *Approval) error
	// Get returns the approval for token, or ErrNotFound.
	Get(ctx context.Context, token string) (*Approval, error)
	// SetMessage records where a call's card was posted.
	SetMessage(ctx context.Context, token, callID string, ref MessageRef) error
	// Decide records a decision atomically. It returns ErrNotFound,
	// ErrExpired, ErrCancelled, ErrResolved, ErrTooLate past d.NotAfter,
	// or ErrDecided with the Decided describing the decision already made.
	Decide(ctx context.Context, token string, d Decision) (*Decided, error)
	// Refused records a refused click in the audit stream.
	Refused(ctx context.Context, r Refusal) error
	// Outcome records what a decided call's tool did, on the call (so every
	// later rendering of its card shows it) and in the audit stream.
	Outcome(ctx context.Context, token, callID string, o ToolOutcome) error
}

// RunSaver keeps the state of a run that waits on a token, so that another
// process can resume it when the token ends (durable resume). Approvals
// implementations that can, implement it too.
type RunSaver interface {
	SaveRun(ctx context.Context, rc *agentrunner.RunContext, token string, pending agentrunner.DeferredToolRequests, origin Origin, expires time.Time) error
}

// Locker serializes the re-rendering of one card across processes, so the
// update that lands last was rendered from the latest state (a click's
// update and the tool's outcome race otherwise). Approvals
// implementations that can, implement it too.
type Locker interface {
	Lock(ctx context.Context, name string, ttl time.Duration) (release func(), err error)
}

// Errors of Approvals, in bot's vocabulary.
var (
	ErrNotFound  = errors.New("approval request not found")
	ErrExpired   = errors.New("approval request expired")
	ErrCancelled = errors.New("approval request cancelled")
	ErrResolved  = errors.New("approval request already resolved")
	ErrDecided   = errors.New("tool call already decided")
	// ErrTooLate: the decision reached the store after its NotAfter and
	// was not recorded.
	ErrTooLate = errors.New("decision arrived too late to be recorded")
)
