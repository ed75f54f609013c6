package approval

import (
	"cmp"
	"context"
	"fmt"
	"time"

	"github.com/slackapprove/slackbot/agentrunner"
)

// RunSaver keeps the state of a run that waits on a request, so that any
// process can resume the run when the request ends (package store's run
// state).
type RunSaver interface {
	SaveWaitingRun(ctx context.Context, rc *agentrunner.RunContext, token string, pending agentrunner.DeferredToolRequests, origin Origin, expires time.Time) error
}

// AskHooks is what a run's Deps may implement to be told that its calls
// were handed to people: under which token, and until when the run may
// wait (a run that holds a Slack thread keeps it until then).
type AskHooks interface {
	Asked(token string, until time.Time)
}

// Deadline returns when a run's request must be decided by: the earliest
// of the timeouts of the routes its calls go to, so that no call waits
// longer than its route allows. Its signature fits
// agentrunner.AskHandler.Deadline, so the token's deadline and the cards'
// expiry agree.
func (s *Service) Deadline(rc *agentrunner.RunContext, req agentrunner.DeferredToolRequests) time.Time {
	origin := OriginFrom(rc)
	timeout := time.Duration(0)
	for _, id := range req.IDs() {
		c, _ := req.Call(id)
		if t := s.timeout(s.routes.Match(c.ToolName, origin.Channel)); timeout == 0 || t < timeout {
			timeout = t
		}
	}
	return s.now().Add(cmp.Or(timeout, DefaultTimeout))
}

// Ask is the pipeline's way in for runs in this process (an
// agentrunner.AskFunc): it records the pending calls under token, saves
// the run (saver, when set) before any card can be clicked, and posts one
// card per call to its route's channel, in order. It returns nil results:
// the run waits until a decision resolves the token. The routes' policies
// are not applied here: the run's Policy handler applied them before the
// ask. A call no route matches is denied at once (Policy normally does
// that first); a call whose card cannot be posted ends with the reason, so
// the model can tell the user.
func (s *Service) Ask(saver RunSaver) agentrunner.AskFunc {
	return func(ctx context.Context, rc *agentrunner.RunContext, req agentrunner.DeferredToolRequests, token string) (*agentrunner.DeferredToolResults, error) {
		origin := OriginFrom(rc)
		o := Opening{Token: token, Requests: req, Origin: *origin}
		r, err := s.plan(ctx, o, s.routes)
		if err != nil {
			return nil, err
		}
		r.ExpiresAt = s.Deadline(rc, req)
		if rc != nil {
			r.RunID = rc.RunID
		}
		if err := s.store.Create(ctx, r); err != nil {
			return nil, fmt.Errorf("record request: %w", err)
		}
		if hooks, ok := deps(rc).(AskHooks); ok {
			hooks.Asked(token, r.ExpiresAt)
		}
		// Save the run before any card can be clicked, so that a decision
		// always finds the run to resume, even if this process is gone.
		if saver != nil && r.RunID != "" {
			if err := saver.SaveWaitingRun(ctx, rc, token, req, *origin, r.ExpiresAt); err != nil {
				return nil, fmt.Errorf("save run state: %w", err)
			}
		}
		for i := range r.Calls {
			c := &r.Calls[i]
			if c.Route != "" {
				continue
			}
			d := Decision{CallID: c.ID, By: ByNoRoute, Action: endAction(c.Kind), Reason: NoRouteMessage(c.Tool, origin)}
			res, err := s.store.Decide(ctx, token, d)
			if notInEffect(err) {
				// Not in effect yet, and no card can show the call: it
				// waits, denied once the replicas confirm it, else at
				// its deadline.
				continue
			}
			if err != nil {
				return nil, fmt.Errorf("deny unrouted call %s: %w", c.ID, err)
			}
			if res.Resolved {
				s.resumeRun(ctx, r)
			}
		}
		granted, err := s.applyGrants(ctx, r, nil)
		if err != nil {
			return nil, err
		}
		for i := range r.Calls {
			if c := &r.Calls[i]; c.Route != "" && !granted[c.ID] {
				if err := s.post(ctx, r, c); err != nil {
					return nil, err
				}
			}
		}
		return nil, nil
	}
}

func deps(rc *agentrunner.RunContext) any {
	if rc == nil {
		return nil
	}
	return rc.Deps
}
