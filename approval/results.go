package approval

import (
	"encoding/json"
	"fmt"
	"maps"

	"github.com/slackapprove/slackbot/agentrunner"
)

// DecodeResult sets c's decision (Action, Reason, OverrideArgs, Answer)
// from its wire form, Pydantic AI's ApprovalResult for an approval and
// CallResult for a question or external call, as records keep it: a
// record is decoded once, when it is read, and the getters of a call are
// plain fields. c.Kind must be set.
func (c *Call) DecodeResult(wire []byte) error {
	if c.Kind == agentrunner.KindApproval {
		var r agentrunner.ApprovalResult
		if err := json.Unmarshal(wire, &r); err != nil {
			return fmt.Errorf("result of %s: %w", c.ID, err)
		}
		if r.Approved {
			c.Action, c.OverrideArgs = ActionApprove, r.OverrideArgs
		} else {
			c.Action, c.Reason = ActionDeny, r.DenialMessage()
		}
		return nil
	}
	var r agentrunner.CallResult
	if err := json.Unmarshal(wire, &r); err != nil {
		return fmt.Errorf("result of %s: %w", c.ID, err)
	}
	switch {
	case r.Retry:
		c.Action, c.Reason = ActionRetry, r.Message
	case r.Failed:
		c.Action, c.Reason = ActionFail, r.Message
	default:
		c.Action, c.Answer = ActionAnswer, r.Value
	}
	return nil
}

// approvalResult is the wire form of the decision on approval c.
func (c *Call) approvalResult() agentrunner.ApprovalResult {
	if c.Status == CallApproved {
		return agentrunner.ApprovalResult{Approved: true, OverrideArgs: c.OverrideArgs}
	}
	return agentrunner.Deny(c.Reason)
}

// callResult is the wire form of the decision on question or external
// call c.
func (c *Call) callResult() agentrunner.CallResult {
	switch {
	case c.Status == CallAnswered:
		return agentrunner.CallResult{Value: c.Answer}
	case c.Action == ActionRetry:
		return agentrunner.RetryWith(c.Reason)
	}
	return agentrunner.Fail(c.Reason)
}

// Results is what the run waiting on r receives, in Pydantic AI's wire
// format, built from the decisions when results are handed out (to a run
// resumed or woken, to /v1, to /mcp, to a callback): the decisions and
// their metadata when r is resolved, "no decision" for every call when it
// expired, was cancelled or failed, nil while it is pending. Every
// approved call's receipt is signed by s here (AddReceipts; none when s is
// nil), so a read of the record signs nothing and every door hands out
// the same receipts. Each call builds fresh results: the caller may change
// them.
func (r *Request) Results(s Signer) *agentrunner.DeferredToolResults {
	var res *agentrunner.DeferredToolResults
	switch r.State {
	case StateResolved:
		res = r.decisions()
	case StateExpired, StateCancelled, StateFailed:
		res = agentrunner.NoDecision(r.Requests, r.NoDecision().Reason)
	default:
		return nil
	}
	AddReceipts(r, res, s)
	return res
}

// decisions are the results of resolved request r: its decided calls'
// decisions, who gave them and their metadata, or what it was resolved
// with before any call was recorded (Given).
func (r *Request) decisions() *agentrunner.DeferredToolResults {
	res := agentrunner.NewDeferredToolResults()
	if r.Given != nil && len(r.Calls) == 0 {
		res.Merge(r.Given)
		for id, md := range res.Metadata {
			res.Metadata[id] = maps.Clone(md)
		}
		return res
	}
	for i := range r.Calls {
		c := &r.Calls[i]
		if !c.Decided() {
			continue
		}
		if c.Kind == agentrunner.KindApproval {
			res.Approvals[c.ID] = c.approvalResult()
		} else {
			res.Calls[c.ID] = c.callResult()
		}
		if by := c.AnsweredBy(); by != "" {
			res.AnsweredBy[c.ID] = by
		}
		if c.Metadata != nil {
			// A copy: receipts go into the results, never into the record.
			res.Metadata[c.ID] = maps.Clone(c.Metadata)
		}
	}
	return res
}
