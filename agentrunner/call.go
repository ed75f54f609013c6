package agentrunner

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// ToolFailedPrefix starts the text the model gets for a tool that returned
// an error: "Tool failed: " and the error.
const ToolFailedPrefix = "Tool failed: "

func jsonString(s string) json.RawMessage {
	b, _ := json.Marshal(s)
	return b
}

// callOutcome is what executing (or trying to execute) one call produced.
type callOutcome struct {
	Part     Part
	Metadata map[string]any
}

// call validates and executes one tool call. It returns the part for the
// model, or the kind the call was deferred as. Only running out of retries
// is an error of the run.
func (st *run) call(ctx context.Context, c ToolCallPart, md map[string]any, approved bool) (callOutcome, CallKind, error) {
	t, ok := st.byName[c.ToolName]
	if !ok {
		names := make([]string, 0, len(st.tools))
		for _, t := range st.tools {
			names = append(names, t.name)
		}
		msg := fmt.Sprintf("Unknown tool name: %q. Available tools: %s", c.ToolName, strings.Join(names, ", "))
		return st.retry(c, msg)
	}
	args, err := t.ValidateArgs(c.Args)
	if err != nil {
		return st.retry(c, err.Error())
	}
	if t.requiresApproval && !approved {
		return callOutcome{}, KindApproval, nil
	}
	tc := &ToolContext{
		RunID: st.id, ToolName: c.ToolName, ToolCallID: c.ToolCallID,
		Approved: approved, Metadata: md, Retry: st.retries[c.ToolName], Deps: st.deps,
	}
	v, err := st.runTool(ctx, t, tc, args)
	var (
		needApproval *ApprovalRequiredError
		deferCall    *CallDeferredError
		retry        *RetryError
	)
	switch {
	case errors.As(err, &needApproval):
		if approved {
			return callOutcome{Part: ToolReturn(c.ToolName, c.ToolCallID,
				jsonString("The tool asked for approval again after it was approved."), OutcomeFailed)}, "", nil
		}
		return callOutcome{Metadata: needApproval.Metadata}, KindApproval, nil
	case errors.As(err, &deferCall):
		kind := KindExternal
		if _, q := deferCall.Metadata[MetadataQuestion]; q {
			kind = KindQuestion
		}
		return callOutcome{Metadata: deferCall.Metadata}, kind, nil
	case errors.As(err, &retry):
		return st.retry(c, retry.Message)
	case err != nil:
		if ctx.Err() != nil {
			return callOutcome{}, "", ctx.Err()
		}
		return callOutcome{Part: ToolReturn(c.ToolName, c.ToolCallID, jsonString(ToolFailedPrefix+err.Error()), OutcomeFailed)}, "", nil
	}
	delete(st.retries, c.ToolName)
	b, err := json.Marshal(v)
	if err != nil {
		return callOutcome{Part: ToolReturn(c.ToolName, c.ToolCallID, jsonString("Tool result is not JSON: "+err.Error()), OutcomeFailed)}, "", nil
	}
	return callOutcome{Part: ToolReturn(c.ToolName, c.ToolCallID, b, OutcomeSuccess)}, "", nil
}

func (st *run) retry(c ToolCallPart, msg string) (callOutcome, CallKind, error) {
	st.retries[c.ToolName]++
	if st.retries[c.ToolName] > st.r.maxRetries {
		return callOutcome{}, "", fmt.Errorf("tool %q %w count of %d: %s", c.ToolName, ErrMaxRetries, st.r.maxRetries, msg)
	}
	return callOutcome{Part: RetryPrompt(c.ToolName, c.ToolCallID, msg)}, "", nil
}

// ToolObserver is told of every tool the runner runs, as it starts: it
// returns the context the tool runs in and a function told the tool's
// error (nil when it returned) as it returns. A tracer starts a span per
// tool call with it.
type ToolObserver func(ctx context.Context, tc *ToolContext) (context.Context, func(err error))

// WithToolObserver makes the runner tell o of every tool it runs.
func WithToolObserver(o ToolObserver) Option { return func(r *Runner) { r.observe = o } }

// runTool runs t's function, under the runner's observer if it has one.
func (st *run) runTool(ctx context.Context, t *Tool, tc *ToolContext, args json.RawMessage) (any, error) {
	if st.r.observe == nil {
		return t.fn(ctx, tc, args)
	}
	ctx, done := st.r.observe(ctx, tc)
	v, err := t.fn(ctx, tc, args)
	done(err)
	return v, err
}
