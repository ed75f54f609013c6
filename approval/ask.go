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

// Ask is Open for runs in this process (an agentrunner.AskFunc): the
// pending calls are opened under token, until the run's Deadline, with the
// routes' policies left out (the run's Policy handler applied them before
// the ask), and the run is saved (saver, when set) once the request is
// recorded and before any card can be clicked. It returns nil results:
// the run waits until a decision resolves the token. A call no route
// matches is denied at once (Policy normally does that first); a call
// whose card cannot be posted ends with the reason, so the model can tell
// the user.
func (s *Service) Ask(saver RunSaver) agentrunner.AskFunc {
	return func(ctx context.Context, rc *agentrunner.RunContext, req agentrunner.DeferredToolRequests, token string) (*agentrunner.DeferredToolResults, error) {
		_, err := s.Open(ctx, s.runOpening(saver, rc, req, token, s.Deadline(rc, req)))
		return nil, err
	}
}

// Asker returns the agentrunner.Asker of runs in this process: its Ask
// is Open for a run, as Ask's, with the run saved by saver (when set)
// once its request is recorded; its Fail ends the request through Fail,
// as every end without a person. Through it the runner writes nothing of
// a request itself.
func (s *Service) Asker(saver RunSaver) agentrunner.Asker { return runAsker{s: s, saver: saver} }

type runAsker struct {
	s     *Service
	saver RunSaver
}

func (a runAsker) Ask(ctx context.Context, rc *agentrunner.RunContext, ask agentrunner.Asking) error {
	o := a.s.runOpening(a.saver, rc, ask.Requests, ask.Token, ask.Deadline)
	if ask.Recorded != nil {
		save := o.Recorded
		o.Recorded = func(ctx context.Context, r *Request) error {
			if err := ask.Recorded(ctx); err != nil {
				return err
			}
			return save(ctx, r)
		}
	}
	_, err := a.s.Open(ctx, o)
	return err
}

func (a runAsker) Fail(ctx context.Context, token string, nd *agentrunner.NoDecisionError) error {
	_, err := a.s.Fail(ctx, token, nd.Reason)
	return err
}

// runOpening is the Opening of a run's ask: its calls under token until
// deadline, from the run's origin, saved by saver once recorded.
func (s *Service) runOpening(saver RunSaver, rc *agentrunner.RunContext, req agentrunner.DeferredToolRequests, token string, deadline time.Time) Opening {
	origin := OriginFrom(rc)
	o := Opening{Token: token, Requests: req, Origin: *origin, ExpiresAt: deadline, PolicyApplied: true}
	if rc != nil {
		o.RunID = rc.RunID
	}
	o.Recorded = func(ctx context.Context, r *Request) error {
		if hooks, ok := deps(rc).(AskHooks); ok {
			hooks.Asked(token, r.ExpiresAt)
		}
		// Save the run before any card can be clicked, so that a decision
		// always finds the run to resume, even if this process is gone.
		if saver != nil && r.RunID != "" {
			if err := saver.SaveWaitingRun(ctx, rc, token, req, *origin, r.ExpiresAt); err != nil {
				return fmt.Errorf("save run state: %w", err)
			}
		}
		return nil
	}
	return o
}

func deps(rc *agentrunner.RunContext) any {
	if rc == nil {
		return nil
	}
	return rc.Deps
}
