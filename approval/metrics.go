package approval

import "time"

// Outcomes are the outcomes Metrics.Decision is told, every one it can
// be: a call's status after a decision or after its request ended without
// one (CallPending: a vote was recorded and the call's quorum is not
// reached yet), and a policy's decisions (PolicyDecision.Decision:
// approved, denied or failed). Metrics start each at zero from them, so
// rates and alerts have a series before the first of each.
var Outcomes = []string{
	string(CallApproved), string(CallDenied), string(CallAnswered), string(CallFailed),
	string(CallExpired), string(CallCancelled), string(CallPending),
}

// RefusalCodes are the codes Metrics.Refused is told: the refusals
// authorize makes (an API client asking for another client's request is
// told it is not found) and those a door makes itself (EWRONGTEAM).
var RefusalCodes = []string{ENOTFOUND, EWRONGMESSAGE, ENOROUTE, ENOTAPPROVER, ESELFAPPROVAL, EWRONGTEAM}

// countDecision tells the metrics the outcome of call c of r, and how
// long after r was opened it came: at c's decision, at r's end for a call
// that ended with it, else now. A vote short of its quorum (c still
// pending) is counted, not timed.
func (s *Service) countDecision(r *Request, c *Call) {
	waited := time.Duration(-1)
	if c.Status != CallPending && !r.CreatedAt.IsZero() {
		at := c.DecidedAt
		if at.IsZero() {
			at = r.EndedAt
		}
		if at.IsZero() {
			at = s.now()
		}
		waited = max(at.Sub(r.CreatedAt), 0)
	}
	s.metrics.Decision(c.Route, string(c.Status), waited)
}
