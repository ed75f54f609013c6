package agentrunner

import (
	"context"
	"errors"
	"fmt"
)

// Journal records, outside the process, that an approved call's tool is
// about to run and what it returned, so that a run resumed elsewhere
// after its process died runs no approved tool twice. The runner consults
// it around each approved call it executes (WithJournal).
type Journal interface {
	// Begin is called before the approved call of run runID executes. It
	// returns nil, nil when the call has not started before (the journal
	// now says it has), the recorded return of a call that already ran
	// (the tool is not run again), or ErrOutcomeLost for a call that
	// started and whose return was never recorded. Any other error fails
	// the run before the tool runs.
	Begin(ctx context.Context, runID string, call ToolCallPart) (*Part, error)
	// End records the return of a call that Begin let run; nil means the
	// call did not run to an outcome (it deferred again), so that it may
	// run later. An error here does not fail the run: the tool ran, and
	// the run goes on with its return.
	End(ctx context.Context, runID string, call ToolCallPart, ret *Part) error
}

// ErrOutcomeLost says that an approved call's tool was started by a
// process that died before its return was recorded: it may have run.
var ErrOutcomeLost = errors.New("the tool may have run; its result was lost")

// OutcomeLostText is the failed tool return the model (and the card) gets
// for a call whose outcome was lost: the tool is not run again.
const OutcomeLostText = "The tool may have run; its result was lost."

// WithJournal makes the runner record each approved call's start and
// return in j, and consult it before running one: a call that already
// ran, or may have, is not run again.
func WithJournal(j Journal) Option { return func(r *Runner) { r.journal = j } }

// journaled executes an approved call through the runner's journal.
func (st *run) journaled(ctx context.Context, c ToolCallPart, md map[string]any) (callOutcome, CallKind, error) {
	j := st.r.journal
	if j == nil {
		return st.call(ctx, c, md, true)
	}
	known, err := j.Begin(ctx, st.id, c)
	switch {
	case errors.Is(err, ErrOutcomeLost):
		return callOutcome{Part: ToolReturn(c.ToolName, c.ToolCallID, jsonString(OutcomeLostText), OutcomeFailed)}, "", nil
	case err != nil:
		return callOutcome{}, "", fmt.Errorf("record the start of %s: %w", c.ToolCallID, err)
	case known != nil:
		return callOutcome{Part: *known}, "", nil
	}
	out, d, err := st.call(ctx, c, md, true)
	if err != nil {
		// Not run (out of retries) or cut short: the mark stays, which
		// errs on the side of never running the tool twice.
		return out, d, err
	}
	var ret *Part
	if d == "" {
		ret = &out.Part
	}
	_ = j.End(context.WithoutCancel(ctx), st.id, c, ret)
	return out, d, nil
}
