package agentrunner

import (
	"errors"
	"fmt"
	"time"
)

// StatusSuspended is the status of a run that handed its deferred calls to
// people or systems under a resume token and returned instead of waiting
// (AskHandler.Suspend, Suspend): RunResult.Suspended names the token,
// RunResult.Pending the calls, RunResult.Messages the history to resume
// from. Nothing of the run is left running.
const StatusSuspended RunStatus = "suspended"

// Suspension is what a suspended run waits on.
type Suspension struct {
	// Token is the resume token the calls were handed out under.
	Token string `json:"token"`
	// Deadline is when the token expires; resuming after it, the calls
	// get no decision (NoDecision with ReasonExpired).
	Deadline time.Time `json:"deadline,omitzero"`
}

// ErrSuspended is what errors.Is matches the error Suspend returns
// against. Run turns that error into a RunResult with StatusSuspended, so
// a caller of Run never sees it.
var ErrSuspended = errors.New("run suspended on a resume token")

// suspendError carries a suspension from a handler up to Run.
type suspendError struct {
	s        Suspension
	messages []Message
	pending  DeferredToolRequests
}

func (e *suspendError) Error() string {
	return fmt.Sprintf("%v (%d calls)", ErrSuspended, len(e.pending.IDs()))
}

func (e *suspendError) Unwrap() error { return ErrSuspended }

// Suspend is what a DeferredHandler returns (as its error) to suspend the
// run of rc instead of answering requests: the calls were handed out under
// token, which expires at deadline. Run then returns at once, with
// StatusSuspended, the token, requests as RunResult.Pending and the history
// to resume from (rc.Messages). Resume with Run and RunInput{RunID,
// History: res.Messages, Pending: res.Pending, Results: the answer}, in
// this process or any other, once the answer is in.
//
// Suspend only where every call of the round is in requests: when an
// earlier handler of the same round decided some (rc.Decided is not
// empty), those decisions are not in the history yet and would be lost;
// AskHandler waits in that case instead.
func Suspend(rc *RunContext, requests DeferredToolRequests, token string, deadline time.Time) error {
	var msgs []Message
	if rc != nil {
		msgs = rc.Messages
	}
	return &suspendError{s: Suspension{Token: token, Deadline: deadline}, messages: msgs, pending: requests.clone()}
}

// suspended returns the result of a run a handler suspended with err, if
// it did.
func (st *run) suspended(err error) (*RunResult, bool) {
	var se *suspendError
	if !errors.As(err, &se) {
		return nil, false
	}
	pending := se.pending
	res := &RunResult{RunID: st.id, Status: StatusSuspended, Pending: &pending, Applied: st.applied, Messages: se.messages}
	s := se.s
	res.Suspended = &s
	return res, true
}

// suspends reports whether the run of rc suspends instead of waiting
// once Ask handed its calls out: with Suspend set, unless earlier handlers
// decided calls of the round.
func (h *AskHandler) suspends(rc *RunContext) bool {
	return h.Suspend && (rc == nil || rc.Decided.Len() == 0)
}
