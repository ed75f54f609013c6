package approval

import (
	"encoding/json"
	"time"
)

// Action is what a decision does to a call.
type Action string

// Decision actions: Approve and Deny for approvals, Answer and Fail for
// questions and external calls, and Retry, which an API client may answer
// an external call with: the model is asked to try again, told Reason
// (the wire format's model-retry).
const (
	ActionApprove Action = "approve"
	ActionDeny    Action = "deny"
	ActionAnswer  Action = "answer"
	ActionFail    Action = "fail"
	ActionRetry   Action = "retry"
)

// Decision is one person's (or policy's, or API client's) decision on one
// call.
type Decision struct {
	CallID string
	// By is who decided: a Slack user id, "policy:<route>", an API client.
	By     string
	Action Action
	// Reason is the denial reason, or the message with ActionFail and
	// ActionRetry.
	Reason string
	// OverrideArgs, with ActionApprove, runs the call with these arguments
	// instead (a JSON object, or a JSON string holding one).
	OverrideArgs json.RawMessage
	// Answer, with ActionAnswer, is the answer to a question or the result
	// of an external call.
	Answer json.RawMessage
	// Metadata goes into the results' metadata for the call.
	Metadata map[string]any
	// Grant, with ActionApprove by a person, also approves every later
	// call of the same tool with the same arguments by the same requester
	// on the same route for this long (a Grant), if the route offers it
	// (any other non-zero length is refused, EINVALID).
	Grant time.Duration
	// AlwaysAllow, with ActionApprove by a person, also gives the coding
	// agent the always-allow rule the request offered for the call
	// (agentrunner.MetaAlwaysAllow), if the route offers it: the results'
	// metadata carries that rule, and no other.
	AlwaysAllow bool
	// StepUp, with ActionApprove by a person, is the verified step-up
	// proof the approval came with. Only CompleteStepUp sets it (a door's
	// decision carrying one is refused), and a grant's approval carries
	// the proof of the click that made the grant.
	StepUp *StepUp
	// NotAfter, when set, is the last instant, by the store's clock, at
	// which the decision may be recorded: one that reaches the store later
	// records nothing (ETOOLATE), so a caller that gave up waiting at
	// NotAfter knows the decision is either recorded or never will be.
	NotAfter time.Time
	// CardJob, when set, names the update of the call's card that follows
	// the decision (a random name, agentrunner.NewToken): with a decision
	// that changes the call, the store schedules that update durably, in
	// the same step, for any replica to do after a delay unless the
	// decider drops it first (Store.ReleaseCard), and takes the card's
	// lease for holder CardJob if it is free (Decided.CardLeased).
	CardJob string
}

// Decided says what recording a decision did.
type Decided struct {
	// Request is the whole record after the decision.
	Request *Request
	// Call is the call after the decision; with EDECIDED, the decision
	// already made.
	Call *Call
	// Changed is false for a repeat of a decision already recorded (a
	// double click, a retry) and with every error.
	Changed bool
	// Resolved is true for the one decision that resolved the request.
	Resolved bool
	// Votes counts the distinct approvers of the arguments this decision
	// (or, when the call is decided, the decision made) concerns; Required
	// is how many the call needs.
	Votes, Required int
	// CardLeased is true when the store took the card's lease for
	// Decision.CardJob with the decision: Request is the state under it,
	// and the decider must release it (Store.ReleaseCard).
	CardLeased bool
}
