package approval

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/slackapprove/slackbot/agentrunner"
	"github.com/slackapprove/slackbot/routing"
)

// DefaultTimeout bounds a wait when neither a route nor the routing file
// sets a timeout.
const DefaultTimeout = time.Hour

// MaxTimeout bounds how long a request opened through Open may wait.
const MaxTimeout = 7 * 24 * time.Hour

// Who decides without a person, as Decision.By and answered_by name them.
const (
	// ByPolicyPrefix + a route's name: that route's auto_approve or
	// auto_deny decided.
	ByPolicyPrefix = "policy:"
	// ByNoRoute: no route matched the call, so it was denied.
	ByNoRoute = ByPolicyPrefix + routing.NoRouteName
	// BySlackbot: slackbot itself ended the call (its card could not be
	// posted).
	BySlackbot = "slackbot"
)

// Opening is a request for decisions as a door brings it in.
type Opening struct {
	// Token is the resume token the request is stored under.
	Token string
	// RunID is the run that waits on the token; empty for API requests.
	RunID    string
	Requests agentrunner.DeferredToolRequests
	Origin   Origin
	// Context is free text shown on the cards: why the calls are made.
	Context string
	// CallbackURL, when set, is told the outcome when the request ends.
	CallbackURL string
	// Route, when set, sends every call to the route of that name instead
	// of the first route that matches it; each call's tool must still be
	// one the route's when.tools match.
	Route string
	// AllowedRoutes, when not nil, are the only routes the calls may go to.
	AllowedRoutes []string
	// Timeout is how long the request waits, at most MaxTimeout; zero
	// means the earliest timeout of the routes its calls go to.
	Timeout time.Duration
	// ExpiresAt, when set, is the request's deadline instead: a run's,
	// which its token waits until (Deadline).
	ExpiresAt time.Time
	// PolicyApplied says that the routes' policies were applied already,
	// by the run's Policy handler: only the calls no route matches are
	// decided here (denied, by ByNoRoute).
	PolicyApplied bool
	// Admit, when set, is called once the request is routed and its
	// deadline set, right before it is recorded: an error refuses the
	// request with nothing recorded (the HTTP API takes the client's
	// quota there, when nothing else can refuse the request).
	Admit func(ctx context.Context, r *Request) error
	// Recorded, when set, is called right after the request is recorded
	// and before any card shows its token (a run saves its state there, so
	// a decision always finds the run to resume).
	Recorded func(ctx context.Context, r *Request) error
}

// Open is the pipeline's one way in, for runs (Ask) and API clients (the
// HTTP API, the MCP gateway) alike: it routes each call, decides by the
// routes' policies (unless o.PolicyApplied), records the request, records
// those decisions (a call no route matches is denied at once, by
// ByNoRoute) and the grants' as every decision without a person is
// (decideBySystem), and posts a card for every call left to people. It
// returns the request as recorded before the policies' decisions and the
// cards: read the store for its current state.
//
// It returns EINVALID, with nothing recorded, for a call whose arguments
// agentrunner.CheckArgs refuses (wrapping its error); ENOROUTE for a route the routing file does not have and
// EFORBIDDEN for a route the request may not use, with nothing recorded;
// Admit's error, with nothing recorded; Recorded's error, with the request
// recorded and no card posted;
// ctx's error when ctx ends while posting (the request stays pending); and
// the store's errors.
func (s *Service) Open(ctx context.Context, o Opening) (*Request, error) {
	routes, err := s.routesFor(o)
	if err != nil {
		return nil, err
	}
	r, err := s.plan(ctx, o, routes)
	if err != nil {
		return nil, err
	}
	decided := s.prejudge(ctx, o, routes)
	if err := s.record(ctx, r, o); err != nil {
		return nil, err
	}
	notInForce := map[string]bool{} // decisions held or not made (REDIS_WAIT_REPLICAS)
	for _, c := range r.Calls {
		d, ok := policyDecision(decided, c.ID)
		if !ok {
			continue
		}
		if _, err := s.decideBySystem(ctx, r, d); err != nil && ErrorCode(err) != EDECIDED {
			if !notInEffect(err) {
				return r, fmt.Errorf("record policy decision on %s: %w", c.ID, err)
			}
			notInForce[c.ID] = true
		}
	}
	granted, err := s.applyGrants(ctx, r, func(id string) bool {
		_, ok := policyDecision(decided, id)
		return ok
	})
	if err != nil {
		return r, err
	}
	for i := range r.Calls {
		c := &r.Calls[i]
		if _, ok := policyDecision(decided, c.ID); (ok && !notInForce[c.ID]) || c.Route == "" || granted[c.ID] {
			continue
		}
		if err := s.post(ctx, r, c); err != nil {
			return r, err
		}
	}
	return r, nil
}

// prejudge is what the routes decide about o's calls before anyone is
// asked: their policies' decisions, or, when a run's Policy handler
// applied them already, only the denials of the calls no route matches.
func (s *Service) prejudge(ctx context.Context, o Opening, routes *routing.Routes) *agentrunner.DeferredToolResults {
	pol := &Policy{Routes: routes, Now: s.now, Log: s.log}
	if o.PolicyApplied {
		return pol.unrouted(&o.Origin, o.Requests)
	}
	// Policies judge the authenticated client, never the free-text name.
	return pol.decide(ctx, o.RunID, &Origin{Client: o.Origin.Client}, o.Requests)
}

// notInEffect reports whether err says a decision Open or Ask records
// without a person (a policy's, a grant's) is not in effect: held until
// Redis's replicas confirm it (EUNCONFIRMED), or refused while another
// change of the request is (ERECORDING). The request was recorded and is
// pending: its call gets its card, which a held decision, once applied,
// updates, and whose buttons stay if a failover loses it. Failing the
// request instead would tell its client it was not opened, and the
// confirmer would then decide it all the same.
func notInEffect(err error) bool {
	code := ErrorCode(err)
	return code == EUNCONFIRMED || code == ERECORDING
}

// routesFor returns the routes o's calls may take: every route, or only
// the one it names (still only for the tools its when.tools match: naming a
// route chooses among the routes a call may take, it never puts a call
// under another tool's policy; its channels are not checked, requests
// through Open come from no channel).
func (s *Service) routesFor(o Opening) (*routing.Routes, error) {
	if o.Route == "" {
		return s.routes, nil
	}
	forced := s.Route(o.Route)
	if forced == nil {
		return nil, Errorf(ENOROUTE, "route %q: no such route in the routing file", o.Route)
	}
	if !routeAllowed(o.AllowedRoutes, forced.Name) {
		return nil, Errorf(EFORBIDDEN, "route %q: not allowed for this API client", forced.Name)
	}
	only := *forced
	only.Channels = nil
	return &routing.Routes{DefaultTimeout: s.routes.DefaultTimeout, Routes: []*routing.Route{&only}}, nil
}

// plan routes every call of o and sets the request's deadline.
func (s *Service) plan(ctx context.Context, o Opening, routes *routing.Routes) (*Request, error) {
	now := s.now()
	r := &Request{
		Token: o.Token, RunID: o.RunID, Requests: o.Requests, Origin: o.Origin,
		Context: o.Context, CallbackURL: o.CallbackURL, CreatedAt: now, State: StatePending,
	}
	if err := checkOffered(o.Requests); err != nil {
		return nil, err
	}
	timeout := time.Duration(0)
	for _, id := range o.Requests.IDs() {
		call, _ := o.Requests.Call(id)
		if err := call.CheckArgs(); err != nil {
			// Whatever the door checked: a card, a policy and the tool
			// must never read the arguments two ways.
			return nil, Errorf(EINVALID, "%w; nothing was asked", err)
		}
		c := Call{ID: id, Tool: call.ToolName, Kind: o.Requests.Kind(id), Status: CallPending, Required: 1}
		route := routes.Match(call.ToolName, o.Origin.Channel)
		switch {
		case route == nil && o.Route != "":
			return nil, Errorf(EFORBIDDEN, "call %s (%s), route %q: %w", id, call.ToolName, o.Route, ErrRouteNotForTool)
		case route != nil && !routeAllowed(o.AllowedRoutes, route.Name):
			return nil, Errorf(EFORBIDDEN, "call %s (%s) goes to route %q, which this API client may not use", id, call.ToolName, route.Name)
		case route != nil:
			c.Route, c.Required = route.Name, max(route.RequiredApprovals, 1)
			if t := s.timeout(route); timeout == 0 || t < timeout {
				timeout = t
			}
			s.explain(ctx, &c, call, route, o, o.Requests.Metadata[id])
		}
		r.Calls = append(r.Calls, c)
	}
	if o.Timeout > 0 {
		timeout = o.Timeout
	}
	r.ExpiresAt = now.Add(min(cmp.Or(timeout, DefaultTimeout), MaxTimeout))
	if !o.ExpiresAt.IsZero() {
		r.ExpiresAt = o.ExpiresAt
	}
	return r, nil
}

// record admits and stores r and lets o's Recorded hook run before any
// card exists.
func (s *Service) record(ctx context.Context, r *Request, o Opening) error {
	if o.Admit != nil {
		if err := o.Admit(ctx, r); err != nil {
			return err
		}
	}
	if err := s.store.Create(ctx, r); err != nil {
		if ErrorCode(err) == EUNCONFIRMED && o.Recorded != nil && o.RunID == "" {
			// On the Redis primary, not on enough replicas: recorded,
			// so the caller undoes it as a request it could not ask for.
			// (A run's ask fails its token instead; nothing of the run
			// is saved for it.)
			_ = o.Recorded(ctx, r)
		}
		return fmt.Errorf("record request: %w", err)
	}
	if o.Recorded != nil {
		if err := o.Recorded(ctx, r); err != nil {
			return err
		}
	}
	return nil
}

// post posts one call's card and records where it went. A card that
// cannot be posted ends its call with no decision, so the agent learns it
// at once; ctx ending leaves the call pending.
func (s *Service) post(ctx context.Context, r *Request, c *Call) error {
	if route := s.Route(c.Route); route != nil {
		s.dir.Warm(route.Usergroups...) // the first click need not wait for a lookup
	}
	ref, err := s.poster.Post(ctx, r, c)
	if err != nil && ctx.Err() != nil {
		// Shutting down: leave the request pending; nobody is told "no
		// decision" for a card never shown.
		return ctx.Err()
	}
	if err != nil {
		s.log.ErrorContext(ctx, "post approval card", "err", err, "route", c.Route, "call", c.ID)
		d := Decision{CallID: c.ID, By: BySlackbot, Action: endAction(c.Kind),
			Reason: agentrunner.NoDecisionPrefix + "the approval message could not be posted to Slack"}
		if _, derr := s.decideBySystem(ctx, r, d); derr != nil {
			return fmt.Errorf("post card for %s: %w (and recording the failure: %w)", c.ID, err, derr)
		}
		return nil
	}
	c.Message = ref
	if err := s.store.SetMessage(ctx, r.Token, c.ID, ref); err != nil {
		return fmt.Errorf("record card of %s: %w", c.ID, err)
	}
	s.schedule(ctx, r, c)
	s.homeChanged(ctx, r, c)
	return nil
}

// endAction is how a call is ended without a person: denied if it is an
// approval, failed otherwise.
func endAction(kind agentrunner.CallKind) Action {
	if kind == agentrunner.KindApproval {
		return ActionDeny
	}
	return ActionFail
}

func routeAllowed(allowed []string, name string) bool {
	return allowed == nil || slices.Contains(allowed, name)
}
