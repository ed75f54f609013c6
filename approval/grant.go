package approval

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/slackapprove/slackbot/agentrunner"
	"github.com/slackapprove/slackbot/receipt"
	"github.com/slackapprove/slackbot/routing"
)

// ByGrantPrefix + an approver's user id: that approver's grant approved
// the call, without a card.
const ByGrantPrefix = "grant:"

// Grant approves, until Until, every call of Tool with the same canonical
// arguments, asked for by Requester as Name, on Route: an approver's
// "Approve for 8 h". It never widens: another tool, other arguments,
// another requester (or the same API key claiming another name: another
// working directory, another MCP client) or another route is a normal
// card.
type Grant struct {
	// ID names the grant in its store (the same for the same route,
	// requester, name, tool and canonical arguments).
	ID        string
	Route     string
	Requester string // Origin.Requester() of the calls it approves
	// Name is Origin.Claim() of the calls it approves: who the card named
	// besides the API key; empty for a Slack user's calls.
	Name string
	Tool string
	Args json.RawMessage
	// By is the approver who granted it.
	By        string
	CreatedAt time.Time
	Until     time.Time
	// StepUp is the step-up proof of the click that made the grant, on a
	// route with step_up: the calls the grant approves carry it (their
	// receipts' amr). A grant without one approves no call that needs a
	// step-up.
	StepUp *StepUp
}

// GrantStore keeps grants. Package store implements it over Redis.
type GrantStore interface {
	// SaveGrant stores g until g.Until (replacing a grant of the same
	// route, requester, name, tool and arguments) and sets g.ID.
	SaveGrant(ctx context.Context, g *Grant) error
	// FindGrant returns the grant in force with call's Route, Requester,
	// Name, Tool and Args, or nil.
	FindGrant(ctx context.Context, call Grant) (*Grant, error)
	// Grants returns the grants in force that approver made, soonest to
	// end first.
	Grants(ctx context.Context, approver string) ([]Grant, error)
	// RevokeGrant ends the grant id that by made, at once, and returns
	// it; ENOTFOUND when by has no such grant in force.
	RevokeGrant(ctx context.Context, id, by string) (*Grant, error)
}

// GrantNotifier is what a Poster may implement to tell the requester that
// a grant approved their call without a card.
type GrantNotifier interface {
	Granted(ctx context.Context, r *Request, c *Call, g *Grant) error
}

// checkGrant refuses a grant the call's route does not offer: only an
// approval, never with edited arguments, for one of the lengths the route
// offers (none on a quorum route), and for arguments a grant can hold
// exactly (receipt.ExactNumbers).
func (s *Service) checkGrant(r *Request, c *Call, d Decision) error {
	route := s.Route(c.Route)
	call, _ := r.Requests.Call(c.ID)
	args, argsErr := call.ArgsObject()
	switch {
	case d.Action != ActionApprove || c.Kind != agentrunner.KindApproval:
		return Errorf(EINVALID, "only an approval can grant")
	case len(d.OverrideArgs) > 0:
		return Errorf(EINVALID, "a grant approves the arguments asked for; edited arguments cannot be granted")
	case route == nil || !route.AllowsGrant(d.Grant):
		return Errorf(EINVALID, "The route of this call does not grant approvals for %s.", d.Grant)
	case argsErr != nil || !receipt.ExactNumbers(args):
		return Errorf(EINVALID, "These arguments hold a number that later calls could not be told apart from, so they cannot be granted; Approve approves this call once.")
	}
	return nil
}

// checkGrantor refuses a grant by someone who may decide c only because
// it escalated: a grant approves later calls, which never escalated, so
// only the route's own approvers may make one. Authorize has let by
// decide c already.
func (s *Service) checkGrantor(ctx context.Context, r *Request, c *Call, by Decider) error {
	own, err := s.Route(c.Route).IsApprover(ctx, by.User, s.dir.Members)
	if err != nil {
		return approversUnavailable("grant by "+by.User, err)
	}
	if !own {
		refused := Errorf(ENOTAPPROVER, "Only an approver of %s requests can approve for longer; you may approve this call once.", c.Route)
		s.Refuse(ctx, r, c, by, refused)
		return refused
	}
	return nil
}

// grantHolds reports whether grant g may still approve call c of r: the
// grant is within the length the route now allows, and its approver could
// approve c now, by the same authorization as a click (still one of the
// route's approvers after the routing file or a usergroup changed, and not
// approving their own call against the route).
func (s *Service) grantHolds(ctx context.Context, r *Request, c *Call, route *routing.Route, g *Grant) bool {
	if !s.now().Before(g.CreatedAt.Add(route.Grants)) {
		return false
	}
	err := s.authorize(ctx, r, c, Decider{User: g.By, Message: c.Message}, ActionApprove)
	if ErrorCode(err) == EUNAVAILABLE {
		s.log.WarnContext(ctx, "look up a grant's approver; asking a person", "err", err, "call", c.ID)
	}
	return err == nil
}

// grant saves the grant a decision made, once the call is approved.
func (s *Service) grant(ctx context.Context, r *Request, c *Call, d Decision) {
	if s.grants == nil {
		return
	}
	call, _ := r.Requests.Call(c.ID)
	now := s.now()
	g := &Grant{Route: c.Route, Requester: r.Origin.Requester(), Name: r.Origin.Claim(), Tool: call.ToolName, Args: call.Args,
		By: d.By, CreatedAt: now, Until: now.Add(d.Grant), StepUp: d.StepUp}
	if err := s.grants.SaveGrant(ctx, g); err != nil {
		s.log.ErrorContext(ctx, "save a grant", "err", err, "route", c.Route, "call", c.ID)
		return
	}
	if err := s.store.Note(ctx, r.Token, c.ID, "granted", fmt.Sprintf("%s until %s (grant %s)", d.By, g.Until.UTC().Format(time.RFC3339), g.ID)); err != nil {
		s.log.ErrorContext(ctx, "audit a grant", "err", err)
	}
}

// applyGrants decides by grant the pending approvals of r that a grant in
// force covers (except those skip names: decided already), and reports
// which calls it decided: they get no card.
func (s *Service) applyGrants(ctx context.Context, r *Request, skip func(id string) bool) (map[string]bool, error) {
	if s.grants == nil {
		return nil, nil
	}
	var decided map[string]bool
	for i := range r.Calls {
		c := &r.Calls[i]
		route := s.Route(c.Route)
		if c.Kind != agentrunner.KindApproval || c.Status != CallPending || route == nil || route.Grants <= 0 || c.Required > 1 || (skip != nil && skip(c.ID)) {
			continue
		}
		call, _ := r.Requests.Call(c.ID)
		g, err := s.grants.FindGrant(ctx, Grant{Route: c.Route, Requester: r.Origin.Requester(), Name: r.Origin.Claim(), Tool: call.ToolName, Args: call.Args})
		if err != nil {
			s.log.ErrorContext(ctx, "look up a grant; asking a person", "err", err, "call", c.ID)
			continue
		}
		if g == nil || !s.grantHolds(ctx, r, c, route, g) {
			continue
		}
		if _, need := s.needsStepUp(ctx, c, call.Args); need && (g.StepUp == nil || !route.AllowsStepUp(g.StepUp.Method)) {
			continue // made without the proof this call needs: a card
		}
		// Counted, and the run resumed if it decided the last pending
		// call, as every decision without a person is. The grant's proof
		// goes with it.
		d := Decision{CallID: c.ID, By: ByGrantPrefix + g.By, Action: ActionApprove, StepUp: g.StepUp}
		_, err = s.decideBySystem(ctx, r, d)
		if notInEffect(err) {
			continue // not in effect yet: the call gets its card
		}
		if err != nil && ErrorCode(err) != EDECIDED {
			return decided, fmt.Errorf("record the grant's approval of %s: %w", c.ID, err)
		}
		if decided == nil {
			decided = map[string]bool{}
		}
		decided[c.ID] = true
		if n, ok := s.poster.(GrantNotifier); ok {
			if err := n.Granted(ctx, r, c, g); err != nil {
				s.log.WarnContext(ctx, "tell the requester a grant approved their call", "err", err)
			}
		}
	}
	return decided, nil
}

// Revoke ends a grant that user made (App Home's Revoke).
func (s *Service) Revoke(ctx context.Context, id, user string) (*Grant, error) {
	if s.grants == nil {
		return nil, fmt.Errorf("revoke: %w", ErrNotFound)
	}
	g, err := s.grants.RevokeGrant(ctx, id, user)
	if err != nil {
		return nil, err
	}
	s.log.InfoContext(ctx, "grant revoked", "grant", id, "by", user, "route", g.Route)
	return g, nil
}

// Grants returns the grants in force that user made.
func (s *Service) Grants(ctx context.Context, user string) ([]Grant, error) {
	if s.grants == nil {
		return nil, nil
	}
	return s.grants.Grants(ctx, user)
}
