package agentrunner

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"
)

// loop asks the model and executes its tool calls until a final answer or
// until calls stay pending.
func (st *run) loop(ctx context.Context) (*RunResult, error) {
	params := RequestParams{Instructions: st.r.instructions}
	for _, t := range st.tools {
		params.Tools = append(params.Tools, t.Definition())
	}
	for step := 0; ; step++ {
		if step >= st.r.maxSteps {
			return nil, fmt.Errorf("%w (%d)", ErrMaxSteps, st.r.maxSteps)
		}
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		resp, err := st.r.model.Request(ctx, st.messages, params)
		if err != nil {
			return nil, fmt.Errorf("model request: %w", err)
		}
		resp.Kind = KindResponse
		resp.RunID = st.id
		if resp.Timestamp.IsZero() {
			resp.Timestamp = time.Now().UTC()
		}
		st.messages = append(st.messages, resp)
		calls := resp.ToolCalls()
		if len(calls) == 0 {
			return st.result(StatusComplete, resp.Text(), nil), nil
		}
		st.step, st.unsaved = len(st.messages), true
		res, err := st.execute(ctx, calls)
		if err != nil || res != nil {
			return res, err
		}
	}
}

// execute runs calls, those of the history's last response, hands what
// they defer to the handlers, and adds the returns to the history. It
// returns the run's pending result when calls stay pending, else nil.
func (st *run) execute(ctx context.Context, calls []ToolCallPart) (*RunResult, error) {
	parts := make([]Part, 0, len(calls))
	deferred := DeferredToolRequests{Metadata: map[string]map[string]any{}}
	for _, c := range calls {
		p, d, err := st.journaled(ctx, c, nil, false)
		if err != nil {
			return nil, err
		}
		if d != "" {
			deferred.add(c, d, p.Metadata)
			continue
		}
		parts = append(parts, p.Part)
	}
	parts, pending, err := st.settle(ctx, parts, deferred)
	if err != nil {
		return nil, err
	}
	st.messages = st.withParts(st.messages, parts)
	if !pending.Empty() {
		return st.result(StatusPending, "", &pending), nil
	}
	return nil, nil
}

func (d *DeferredToolRequests) add(c ToolCallPart, kind CallKind, md map[string]any) {
	if kind == KindApproval {
		d.Approvals = append(d.Approvals, c)
	} else {
		d.Calls = append(d.Calls, c)
	}
	if md != nil {
		if d.Metadata == nil {
			d.Metadata = map[string]map[string]any{}
		}
		d.Metadata[c.ToolCallID] = md
	}
}

// settle hands deferred calls to the handlers, in order, each seeing only
// what the previous ones left, and applies what they decide. Calls that an
// approved tool defers again go through the handlers in turn. What stays
// undecided is returned as pending if the run allows it; otherwise the run
// fails with ErrUndecided before any decision of that round is applied, so
// no tool runs in a run that is about to fail.
func (st *run) settle(ctx context.Context, parts []Part, deferred DeferredToolRequests) ([]Part, DeferredToolRequests, error) {
	pending := DeferredToolRequests{}
	for !deferred.Empty() && len(st.r.handlers) > 0 {
		decided := NewDeferredToolResults()
		rc := &RunContext{RunID: st.id, Deps: st.deps, Runner: st.r, Messages: st.withParts(st.messages, parts), Decided: decided}
		left := deferred
		for _, h := range st.r.handlers {
			if left.Empty() {
				break
			}
			res, err := h.HandleDeferred(ctx, rc, left)
			if err != nil {
				return nil, DeferredToolRequests{}, fmt.Errorf("deferred tool handler: %w", err)
			}
			if res.Len() == 0 {
				continue
			}
			if err := left.Check(res); err != nil {
				return nil, DeferredToolRequests{}, fmt.Errorf("deferred tool handler: %w", err)
			}
			decided.Merge(res)
			left = left.Remaining(decided)
		}
		if !left.Empty() && !st.allow {
			return nil, DeferredToolRequests{}, fmt.Errorf("%w: %s", ErrUndecided, strings.Join(left.IDs(), ", "))
		}
		pending = pending.merge(left)
		if decided.Len() == 0 {
			deferred = DeferredToolRequests{}
			break
		}
		applied, again, err := st.apply(ctx, deferred.without(left), decided)
		if err != nil {
			return nil, DeferredToolRequests{}, err
		}
		parts = append(parts, applied...)
		deferred = again
	}
	pending = pending.merge(deferred)
	if !pending.Empty() && !st.allow {
		return nil, DeferredToolRequests{}, fmt.Errorf("%w: %s", ErrUndecided, strings.Join(pending.IDs(), ", "))
	}
	return parts, pending, nil
}

// withParts returns msgs with parts added as a request to the model. Parts
// join a request that already follows the last response (a resumed run's
// earlier tool returns), so every result of one response reaches the model
// in one message, as providers require. msgs is not modified.
func (st *run) withParts(msgs []Message, parts []Part) []Message {
	if len(parts) == 0 {
		return slices.Clone(msgs)
	}
	out := slices.Clone(msgs)
	if n := len(out); n > 0 && out[n-1].Kind == KindRequest && slices.ContainsFunc(out, isResponse) {
		last := out[n-1]
		last.Parts = append(slices.Clip(last.Parts), st.request(parts...).Parts...)
		out[n-1] = last
		return out
	}
	return append(out, st.request(slices.Clone(parts)...))
}

func isResponse(m Message) bool { return m.Kind == KindResponse }

// without returns r less the calls in o.
func (r DeferredToolRequests) without(o DeferredToolRequests) DeferredToolRequests {
	drop := map[string]bool{}
	for _, id := range o.IDs() {
		drop[id] = true
	}
	out := DeferredToolRequests{Metadata: map[string]map[string]any{}}
	for _, c := range r.Approvals {
		if !drop[c.ToolCallID] {
			out.add(c, KindApproval, r.Metadata[c.ToolCallID])
		}
	}
	for _, c := range r.Calls {
		if !drop[c.ToolCallID] {
			out.add(c, KindExternal, r.Metadata[c.ToolCallID])
		}
	}
	return out
}

// merge returns r plus the calls of o.
func (r DeferredToolRequests) merge(o DeferredToolRequests) DeferredToolRequests {
	out := r.clone()
	for _, c := range o.Approvals {
		out.add(c, KindApproval, o.Metadata[c.ToolCallID])
	}
	for _, c := range o.Calls {
		out.add(c, KindExternal, o.Metadata[c.ToolCallID])
	}
	return out
}

// apply turns answers into tool returns: approved calls execute (with
// override_args, validated again), denials and failures become returns with
// their outcome, results and answers fill in, retries reach the model.
// Calls that defer again come back in the second result.
func (st *run) apply(ctx context.Context, req DeferredToolRequests, results *DeferredToolResults) ([]Part, DeferredToolRequests, error) {
	var parts []Part
	again := DeferredToolRequests{Metadata: map[string]map[string]any{}}
	for _, c := range req.Approvals {
		a, ok := results.Approvals[c.ToolCallID]
		if !ok {
			continue
		}
		st.record(c.ToolCallID, results)
		if !a.Approved {
			parts = append(parts, ToolReturn(c.ToolName, c.ToolCallID, jsonString(a.DenialMessage()), OutcomeDenied))
			continue
		}
		call := c
		if len(a.OverrideArgs) > 0 {
			call.Args = a.OverrideArgs
			if t, ok := st.byName[c.ToolName]; ok {
				if _, err := t.ValidateArgs(call.Args); err != nil {
					// Pydantic AI's semantics: the model hears of it and may
					// try again; say whose arguments were wrong.
					out, _, err := st.retry(c, "The arguments the approver gave instead do not fit the tool: "+err.Error())
					if err != nil {
						return nil, again, err
					}
					parts = append(parts, out.Part)
					continue
				}
			}
		}
		// journaled runs it only if its receipt verifies (unverified).
		out, d, err := st.journaled(ctx, call, results.Metadata[c.ToolCallID], true)
		if err != nil {
			return nil, again, err
		}
		if d != "" {
			again.add(call, d, out.Metadata)
			continue
		}
		parts = append(parts, out.Part)
	}
	for _, c := range req.Calls {
		res, ok := results.Calls[c.ToolCallID]
		if !ok {
			continue
		}
		st.record(c.ToolCallID, results)
		switch {
		case res.Failed:
			parts = append(parts, ToolReturn(c.ToolName, c.ToolCallID, jsonString(res.Message), OutcomeFailed))
		case res.Retry:
			parts = append(parts, RetryPrompt(c.ToolName, c.ToolCallID, res.Message))
		default:
			v := res.Value
			if len(v) == 0 {
				v = json.RawMessage("null")
			}
			parts = append(parts, ToolReturn(c.ToolName, c.ToolCallID, v, OutcomeSuccess))
		}
	}
	return parts, again, nil
}

// record adds the answer to call id to the run's applied results.
func (st *run) record(id string, results *DeferredToolResults) {
	if st.applied == nil {
		st.applied = NewDeferredToolResults()
	}
	if a, ok := results.Approvals[id]; ok {
		st.applied.Approvals[id] = a
	}
	if c, ok := results.Calls[id]; ok {
		st.applied.Calls[id] = c
	}
	if md, ok := results.Metadata[id]; ok {
		st.applied.Metadata[id] = md
	}
	if by, ok := results.AnsweredBy[id]; ok {
		st.applied.AnsweredBy[id] = by
	}
}
