package client

import (
	"time"

	"github.com/slackapprove/slackbot/agentrunner"
)

// Statuses of an approval request.
const (
	StatusPending   = "pending"   // waits for decisions
	StatusResolved  = "resolved"  // every call decided (or answered); Results holds the decisions
	StatusExpired   = "expired"   // its timeout passed first
	StatusCancelled = "cancelled" // cancelled by its client
	StatusFailed    = "failed"    // slackbot could not ask for it
)

// knownStatus reports whether s is a status the API reports.
func knownStatus(s string) bool {
	switch s {
	case StatusPending, StatusResolved, StatusExpired, StatusCancelled, StatusFailed:
		return true
	}
	return false
}

// CreateRequest is the body of a create: Pydantic AI's
// DeferredToolRequests (Calls, Approvals, Metadata) plus slackbot's
// fields. Empty fields are left out, so slackbot's defaults apply.
type CreateRequest struct {
	// Approvals are calls that need a person's approval; Calls are
	// external calls a person answers with a result.
	Approvals []agentrunner.ToolCallPart `json:"approvals,omitempty"`
	Calls     []agentrunner.ToolCallPart `json:"calls,omitempty"`
	Metadata  map[string]map[string]any  `json:"metadata,omitempty"`
	// Route names the route all calls follow; empty lets each call's
	// tool choose.
	Route string `json:"route,omitempty"`
	// Requester is who asks, as the card shows it (a claim of the key,
	// at most 200 bytes); Context says why (at most 2000 bytes).
	Requester string `json:"requester,omitempty"`
	Context   string `json:"context,omitempty"`
	// Timeout is how long people have to decide (1 s to 7 days); zero
	// leaves the route's.
	Timeout     time.Duration `json:"-"`
	CallbackURL string        `json:"callback_url,omitempty"`
	// IdempotencyKey makes a create safe to repeat: the same key and
	// body answer with the request the first create opened.
	IdempotencyKey string `json:"idempotency_key,omitempty"`
}

// Approval is an approval request as slackbot shows it.
type Approval struct {
	Token     string     `json:"token"`
	Status    string     `json:"status"` // one of the Status constants
	CreatedAt time.Time  `json:"created_at"`
	ExpiresAt time.Time  `json:"expires_at"`
	EndedAt   *time.Time `json:"ended_at"`
	Requester string     `json:"requester"`
	Context   string     `json:"context"`
	Calls     []Call     `json:"calls"`
	// Results is what the agent receives once the request ended: the
	// decisions when resolved, "no decision" otherwise. Approved calls
	// carry a receipt in their metadata (package receipt verifies it).
	Results *agentrunner.DeferredToolResults `json:"results"`
}

// Pending reports whether the request still waits for decisions.
func (a *Approval) Pending() bool { return a.Status == StatusPending }

// Call returns the call with tool_call_id id, if the request has it.
func (a *Approval) Call(id string) (Call, bool) {
	for _, c := range a.Calls {
		if c.ToolCallID == id {
			return c, true
		}
	}
	return Call{}, false
}

// Call is one tool call of a request and where it stands.
type Call struct {
	ToolCallID string               `json:"tool_call_id"`
	ToolName   string               `json:"tool_name"`
	Kind       agentrunner.CallKind `json:"kind"`
	State      string               `json:"state"`
	Route      string               `json:"route"`
	DecidedBy  string               `json:"decided_by"` // empty while undecided
	Votes      int                  `json:"votes"`
	Required   int                  `json:"required"`
	// ByClient: the request's own API key decided the call (through
	// Results), not a person, a policy or a grant. Coding-agent hooks
	// run no call their own key approved.
	ByClient bool `json:"by_client"`
	// Outcome is what became of the call once decided, when a run or
	// ReportOutcome reported it; nil until then.
	Outcome *Outcome `json:"outcome,omitempty"`
}

// Outcome is what became of a decided call: Status "ran", "failed",
// "not_run" (approved, but it did not run) or "lost", and a short
// summary of its result or error.
type Outcome struct {
	Status  string `json:"status"`
	Summary string `json:"summary,omitempty"`
}
