package agentrunner

import (
	"context"
	"errors"
	"fmt"
)

// ErrNoPendingRun is returned by PendingRun.Resume when there is nothing to
// resume: the state was never set, or an earlier Resume consumed it.
var ErrNoPendingRun = errors.New("no pending run to resume")

// PendingRun is a run stopped on deferred calls (stop-the-world), in a form
// to save (it marshals to JSON), show to a person and resume later, perhaps
// in another process. A chat UI keeps one per conversation: it shows
// Calls, collects the person's answers by tool_call_id, and calls Resume.
type PendingRun struct {
	// RunID identifies the run; the resumed run keeps it.
	RunID string `json:"run_id"`
	// Messages is the history, ending with the calls that wait.
	Messages []Message `json:"messages"`
	// Requests lists the calls that wait, with their kinds and metadata.
	Requests DeferredToolRequests `json:"requests"`
}

// PendingRun returns the state to save when the run ended pending, and nil
// when it completed.
func (res *RunResult) PendingRun() *PendingRun {
	if res == nil || res.Status != StatusPending || res.Pending == nil {
		return nil
	}
	return &PendingRun{RunID: res.RunID, Messages: res.Messages, Requests: res.Pending.clone()}
}

// Active reports whether p holds a run to resume.
func (p *PendingRun) Active() bool {
	return p != nil && len(p.Messages) > 0 && !p.Requests.Empty()
}

// Calls returns the waiting calls as r's tools would present them to a
// person, each with its confirmation message.
func (p *PendingRun) Calls(r *Runner) []PendingToolCall {
	return r.PendingCalls(p.Requests)
}

// Resume continues the run with results, which must answer every waiting
// call and nothing else, each under its kind.
//
// Resume consumes the state: whatever the outcome, p is cleared before it
// returns, so a confirmation cannot be answered twice and an approved tool
// runs at most once. An answer that names a call that is not waiting
// (ErrNotPending) or leaves one out (ErrIncompleteResults) is rejected
// before anything runs; the person must start over, since their answer and
// the waiting calls disagree. A run that stops on deferred calls again
// returns status pending; its RunResult.PendingRun is the new state to
// keep. Resume on a cleared or empty PendingRun returns ErrNoPendingRun.
func (p *PendingRun) Resume(ctx context.Context, r *Runner, results *DeferredToolResults) (*RunResult, error) {
	if !p.Active() {
		return nil, ErrNoPendingRun
	}
	st := *p
	*p = PendingRun{}
	if results == nil {
		results = NewDeferredToolResults()
	}
	if err := st.Requests.Check(results); err != nil {
		return nil, fmt.Errorf("resume run %s: %w", st.RunID, err)
	}
	if left := st.Requests.Remaining(results); !left.Empty() {
		return nil, fmt.Errorf("resume run %s: %w: no answer for %s", st.RunID, ErrIncompleteResults, sortedList(left.IDs()))
	}
	res, err := r.Run(ctx, RunInput{
		RunID:        st.RunID,
		History:      st.Messages,
		Results:      results,
		Pending:      &st.Requests,
		AllowPending: true,
	})
	if err != nil {
		return nil, fmt.Errorf("resume run %s: %w", st.RunID, err)
	}
	return res, nil
}
