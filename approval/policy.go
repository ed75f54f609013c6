package approval

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/slackapprove/slackbot/agentrunner"
	"github.com/slackapprove/slackbot/routing"
)

// Policy is the deferred-call handler that applies the routing file before
// anyone is asked: a call no route matches is denied (or, for a question or
// external call, failed), and a route's auto_deny / auto_approve decide the
// approvals they cover. Everything else is left to the next handler, the
// ask. Decisions are answered by ByPolicyPrefix+route, or ByNoRoute. Open
// applies the same rules to the requests it opens.
type Policy struct {
	Routes *routing.Routes
	// Now is the clock policies see as `now`; nil means time.Now.
	Now func() time.Time
	// Log receives evaluation errors; nil means slog.Default().
	Log *slog.Logger
	// Record, when set, is told every decision the policy makes, for the
	// audit stream: decisions without a person are audited too.
	Record func(ctx context.Context, d PolicyDecision)
	// Signer, when set, signs the receipt of every call auto_approve
	// approves (Request.Results does it for recorded decisions, when
	// they are handed out).
	Signer Signer
}

// PolicyDecision is one decision a policy made without a person.
type PolicyDecision struct {
	RunID     string
	Call      agentrunner.ToolCallPart
	Requester string
	By        string // ByPolicyPrefix+route or ByNoRoute
	Decision  string // "approved", "denied" or "failed"
	Reason    string
}

// HandleDeferred implements agentrunner.DeferredHandler.
func (p *Policy) HandleDeferred(ctx context.Context, rc *agentrunner.RunContext, requests agentrunner.DeferredToolRequests) (*agentrunner.DeferredToolResults, error) {
	runID := ""
	if rc != nil {
		runID = rc.RunID
	}
	return p.decide(ctx, runID, OriginFrom(rc), requests), nil
}

// decide applies the routes to requests from origin.
func (p *Policy) decide(ctx context.Context, runID string, origin *Origin, requests agentrunner.DeferredToolRequests) *agentrunner.DeferredToolResults {
	res := p.unrouted(origin, requests)
	for _, call := range requests.Approvals {
		id := call.ToolCallID
		route := p.Routes.Match(call.ToolName, origin.Channel)
		if route == nil {
			continue // denied by unrouted
		}
		verdict, err := p.evaluate(ctx, route, call, origin, requests.Metadata[id])
		if err != nil {
			p.logger().WarnContext(ctx, "policy could not decide; asking a person",
				"run_id", runID, "tool_call_id", id, "tool", call.ToolName, "route", route.Name, "error", err)
			continue
		}
		switch verdict {
		case routing.AutoDenied:
			res.Approvals[id] = agentrunner.Deny(fmt.Sprintf(
				"The %q route's policy denied this call (auto_deny: %s).", route.Name, routing.OneLine(route.AutoDeny)))
			res.AnsweredBy[id] = ByPolicyPrefix + route.Name
		case routing.AutoApproved:
			res.Approvals[id] = agentrunner.Approve()
			res.AnsweredBy[id] = ByPolicyPrefix + route.Name
			if p.Signer != nil {
				claims, err := receiptOf(call, []string{res.AnsweredBy[id]}, route.Name, "", p.now())
				addReceipt(res, id, claims, err, p.Signer)
			}
		}
	}
	if p.Record != nil {
		p.record(ctx, runID, origin, requests, res)
	}
	return res
}

// unrouted answers the calls of requests that no route matches: an
// approval is denied, a question or external call failed, by ByNoRoute.
func (p *Policy) unrouted(origin *Origin, requests agentrunner.DeferredToolRequests) *agentrunner.DeferredToolResults {
	res := agentrunner.NewDeferredToolResults()
	for _, call := range requests.Approvals {
		if p.Routes.Match(call.ToolName, origin.Channel) == nil {
			res.Approvals[call.ToolCallID] = agentrunner.Deny(NoRouteMessage(call.ToolName, origin))
			res.AnsweredBy[call.ToolCallID] = ByNoRoute
		}
	}
	for _, call := range requests.Calls {
		if p.Routes.Match(call.ToolName, origin.Channel) == nil {
			res.Calls[call.ToolCallID] = agentrunner.Fail(NoRouteMessage(call.ToolName, origin))
			res.AnsweredBy[call.ToolCallID] = ByNoRoute
		}
	}
	return res
}

func (p *Policy) record(ctx context.Context, runID string, origin *Origin, requests agentrunner.DeferredToolRequests, res *agentrunner.DeferredToolResults) {
	for _, id := range requests.IDs() {
		by, ok := res.AnsweredBy[id]
		if !ok {
			continue
		}
		call, _ := requests.Call(id)
		d := PolicyDecision{RunID: runID, Call: call, Requester: origin.Requester(), By: by}
		if a, ok := res.Approvals[id]; ok {
			d.Decision = "approved"
			if !a.Approved {
				d.Decision, d.Reason = "denied", a.DenialMessage()
			}
		} else if c, ok := res.Calls[id]; ok {
			d.Decision, d.Reason = "failed", c.Message
		}
		p.Record(ctx, d)
	}
}

func (p *Policy) evaluate(ctx context.Context, route *routing.Route, call agentrunner.ToolCallPart, origin *Origin, md map[string]any) (routing.Verdict, error) {
	if !route.HasPolicy() {
		return routing.Undecided, nil
	}
	args, err := routing.ArgsForPolicy(call)
	if err != nil {
		return routing.Undecided, fmt.Errorf("route %s: %w", route.Name, err)
	}
	return route.Evaluate(ctx, routing.PolicyInput{
		Tool: call.ToolName, Args: args, Requester: origin.Requester(), Channel: origin.Channel, Metadata: md, Now: p.now(),
	})
}

func (p *Policy) now() time.Time {
	if p.Now != nil {
		return p.Now()
	}
	return time.Now()
}

func (p *Policy) logger() *slog.Logger {
	if p.Log != nil {
		return p.Log
	}
	return slog.Default()
}

// policyDecision turns the policy's answer for a call into the decision
// to record.
func policyDecision(res *agentrunner.DeferredToolResults, id string) (Decision, bool) {
	by := res.AnsweredBy[id]
	if r, ok := res.Approvals[id]; ok {
		if r.Approved {
			return Decision{CallID: id, By: by, Action: ActionApprove}, true
		}
		return Decision{CallID: id, By: by, Action: ActionDeny, Reason: r.DenialMessage()}, true
	}
	if r, ok := res.Calls[id]; ok {
		return Decision{CallID: id, By: by, Action: ActionFail, Reason: r.Message}, true
	}
	return Decision{}, false
}

// NoRouteMessage is what the model is told when no route matches a call.
func NoRouteMessage(tool string, origin *Origin) string {
	return fmt.Sprintf("No approval route matches %s from %s; the call was denied. Ask an admin to add a route.",
		tool, describeOrigin(origin))
}

func describeOrigin(o *Origin) string {
	switch {
	case o == nil:
		return "an unknown origin"
	case o.Channel != "":
		return o.Channel
	case o.Client != "":
		return "API client " + o.Client
	}
	return "outside Slack"
}
