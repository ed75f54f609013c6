package agentrunner

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
)

// resume applies in.Results to the history's unprocessed calls, after
// checking that they answer exactly those, and hands what stays deferred to
// the handlers. It returns what stays pending (non-empty only when the run
// allows pending output).
func (st *run) resume(ctx context.Context, in RunInput) (DeferredToolRequests, error) {
	results := in.Results
	if results == nil {
		results = NewDeferredToolResults()
	}
	if len(st.messages) == 0 {
		return DeferredToolRequests{}, ErrEmptyHistory
	}
	unprocessed, done := unprocessedCalls(st.messages)
	if len(unprocessed) == 0 {
		return DeferredToolRequests{}, ErrNoUnprocessedCalls
	}
	pendingIDs := make(map[string]bool, len(unprocessed))
	for _, c := range unprocessed {
		pendingIDs[c.ToolCallID] = true
	}
	var executed, unknown []string
	for _, ids := range [][]string{mapKeys(results.Approvals), mapKeys(results.Calls), mapKeys(results.Metadata), mapKeys(results.AnsweredBy)} {
		for _, id := range ids {
			switch {
			case done[id]:
				executed = append(executed, id)
			case !pendingIDs[id]:
				unknown = append(unknown, id)
			}
		}
	}
	if len(executed) > 0 {
		return DeferredToolRequests{}, fmt.Errorf("%w: %s", ErrAlreadyExecuted, sortedList(executed))
	}
	if len(unknown) > 0 {
		return DeferredToolRequests{}, fmt.Errorf("%w: %s", ErrNotPending, sortedList(unknown))
	}

	var req DeferredToolRequests
	if in.Pending != nil {
		if err := matchHistory(*in.Pending, pendingIDs); err != nil {
			return DeferredToolRequests{}, err
		}
		req = in.Pending.clone()
	} else {
		// The kind of each call follows from the answer given; calls left
		// unanswered stay approvals, the kind that runs nothing unasked.
		req.Metadata = map[string]map[string]any{}
		for _, c := range unprocessed {
			if _, isCall := results.Calls[c.ToolCallID]; isCall {
				req.Calls = append(req.Calls, c)
			} else {
				req.Approvals = append(req.Approvals, c)
			}
		}
	}
	if err := req.Check(results); err != nil {
		return DeferredToolRequests{}, err
	}
	missing := req.Remaining(results)
	if !missing.Empty() && !st.allow {
		return DeferredToolRequests{}, fmt.Errorf("%w: no result for %s", ErrIncompleteResults, strings.Join(missing.IDs(), ", "))
	}

	parts, again, err := st.apply(ctx, req.without(missing), results)
	if err != nil {
		return DeferredToolRequests{}, err
	}
	parts, pending, err := st.settle(ctx, parts, missing.merge(again))
	if err != nil {
		return DeferredToolRequests{}, err
	}
	if in.Prompt != "" {
		parts = append(parts, UserPrompt(in.Prompt))
	}
	st.messages = st.withParts(st.messages, parts)
	return pending, nil
}

// matchHistory checks that pending lists exactly the unprocessed calls.
func matchHistory(pending DeferredToolRequests, unprocessed map[string]bool) error {
	var problems []string
	listed := map[string]bool{}
	for _, id := range pending.IDs() {
		listed[id] = true
		if !unprocessed[id] {
			problems = append(problems, id+" is not an unprocessed call")
		}
	}
	for id := range unprocessed {
		if !listed[id] {
			problems = append(problems, id+" is not in the requests")
		}
	}
	if len(problems) > 0 {
		return fmt.Errorf("%w: %s", ErrPendingMismatch, sortedList(problems))
	}
	return nil
}

func sortedList(s []string) string {
	slices.Sort(s)
	return strings.Join(slices.Compact(s), ", ")
}

func mapKeys[V any](m map[string]V) []string {
	return slices.Collect(maps.Keys(m))
}
