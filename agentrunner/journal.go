package agentrunner

import (
	"context"
	"errors"
	"fmt"
	"slices"
)

// Journal records, outside the process, that a call's tool is about to
// run and what it returned, and how far the run got, so that a run taken
// over by another process after its process died runs no tool twice,
// approved or not. The runner consults it around every tool it executes
// (WithJournal).
type Journal interface {
	// Begin is called before a call of run runID executes; at says where
	// the run stands. It returns a zero Begun when the call has not
	// started before (the journal now says it has), Begun.Return for a
	// call that already ran (the tool is not run again), Begun.Progress
	// when the journal knows of a later state of the run (the call is not
	// begun: the run goes on from there), or ErrOutcomeLost for a call
	// that started and whose return was never recorded. Any other error
	// fails the run before the tool runs.
	Begin(ctx context.Context, runID string, call ToolCallPart, at Checkpoint) (Begun, error)
	// End records the return of a call that Begin let run; nil means the
	// call did not run to an outcome (it deferred again), so that it may
	// run later. An error here does not fail the run: the tool ran, and
	// the run goes on with its return.
	End(ctx context.Context, runID string, call ToolCallPart, ret *Part) error
}

// Checkpoint is where a run stands as one of its calls begins.
type Checkpoint struct {
	// Step is the length of the run's history up to and including the
	// model response that made the call; it only grows in a run.
	Step int
	// Messages, when set, is that history (it ends with the response),
	// for the journal to keep as the run's progress. The runner sets it
	// with the first call it begins of a response it got from the model.
	Messages []Message
}

// Begun is what the journal knows of a call as it begins.
type Begun struct {
	// Return is the recorded return of a call that already ran.
	Return *Part
	// Progress is the history of the run as a process that ran it further
	// recorded it (Checkpoint.Messages of a later step, or of the same
	// step with another response of the model): the run continues from
	// there, executing its last response's calls through the journal.
	Progress []Message
}

// ErrOutcomeLost says that a call's tool was started by a process that
// died before its return was recorded: it may have run.
var ErrOutcomeLost = errors.New("the tool may have run; its result was lost")

// OutcomeLostText is the failed tool return the model (and the card) gets
// for a call whose outcome was lost: the tool is not run again.
const OutcomeLostText = "The tool may have run; its result was lost."

// WithJournal makes the runner record each tool call's start and return
// in j, with the run's progress, and consult it before running one: a
// call that already ran, or may have, is not run again, and a run that
// another process got further with goes on from where that one was.
func WithJournal(j Journal) Option { return func(r *Runner) { r.journal = j } }

// progressError unwinds a run to the later state the journal knows of.
type progressError struct{ messages []Message }

func (e *progressError) Error() string {
	return fmt.Sprintf("the run went on elsewhere, to step %d", len(e.messages))
}

// journaled executes a call through the runner's journal. Calls that run
// no tool (an unknown tool, arguments that do not fit, a call that waits
// for approval) skip it.
func (st *run) journaled(ctx context.Context, c ToolCallPart, md map[string]any, approved bool) (callOutcome, CallKind, error) {
	j := st.r.journal
	if j == nil || !st.runsTool(c, approved) {
		if refused, ok := st.unverified(c, md, approved); ok {
			return refused, "", nil
		}
		return st.call(ctx, c, md, approved)
	}
	at := Checkpoint{Step: st.step}
	if st.unsaved {
		at.Messages = slices.Clone(st.messages[:st.step])
	}
	known, err := j.Begin(ctx, st.id, c, at)
	switch {
	case errors.Is(err, ErrOutcomeLost):
		st.unsaved = false
		return callOutcome{Part: ToolReturn(c.ToolName, c.ToolCallID, jsonString(OutcomeLostText), OutcomeFailed)}, "", nil
	case err != nil:
		return callOutcome{}, "", fmt.Errorf("record the start of %s: %w", c.ToolCallID, err)
	case known.Progress != nil:
		return callOutcome{}, "", &progressError{known.Progress}
	}
	st.unsaved = false
	if known.Return != nil {
		// It ran (or was refused) before: what happened stands, whatever
		// its receipt says now (it may have expired since).
		return callOutcome{Part: *known.Return}, "", nil
	}
	if refused, ok := st.unverified(c, md, approved); ok {
		_ = j.End(context.WithoutCancel(ctx), st.id, c, &refused.Part)
		return refused, "", nil
	}
	out, d, err := st.call(ctx, c, md, approved)
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

// runsTool reports whether call would run its tool (st.call checks the
// same before running it).
func (st *run) runsTool(c ToolCallPart, approved bool) bool {
	t, ok := st.byName[c.ToolName]
	if !ok || (t.requiresApproval && !approved) {
		return false
	}
	_, err := t.ValidateArgs(c.Args)
	return err == nil
}

// takeOver continues the run from the later state p the journal knows of:
// the calls of its last response execute (through the journal: those that
// ran are not run again), then the loop goes on.
func (st *run) takeOver(ctx context.Context, p *progressError) (*RunResult, error) {
	calls, _ := unprocessedCalls(p.messages)
	if n := len(p.messages); n == 0 || p.messages[n-1].Kind != KindResponse || len(calls) == 0 {
		return nil, fmt.Errorf("the journal's progress of run %s does not end with a model response's calls", st.id)
	}
	st.messages = slices.Clone(p.messages)
	st.step, st.unsaved = len(st.messages), false
	res, err := st.execute(ctx, calls)
	if err != nil || res != nil {
		return res, err
	}
	return st.loop(ctx)
}

// recordAll adds every answer of results (nil: none) to the run's applied
// results: a run that goes on from a later state applied them there.
func (st *run) recordAll(results *DeferredToolResults) {
	if results == nil {
		return
	}
	for _, ids := range [][]string{mapKeys(results.Approvals), mapKeys(results.Calls)} {
		for _, id := range ids {
			st.record(id, results)
		}
	}
}

// lastResponse is the index of the history's last model response, or -1.
func lastResponse(msgs []Message) int {
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Kind == KindResponse {
			return i
		}
	}
	return -1
}
