package bot

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/slackapprove/slackbot/agentrunner"
	"github.com/slackapprove/slackbot/approval"
)

// Errors of AskAPI about routes. Both mean the client may not send the
// request where it asked to; the HTTP API answers them alike.
var (
	// ErrUnknownRoute: the request names a route the routing file does
	// not have.
	ErrUnknownRoute = errors.New("unknown route")
	// ErrRouteForbidden: the request, or one of its calls, goes to a route
	// the API client may not use.
	ErrRouteForbidden = errors.New("route not allowed for this API client")
	// ErrRouteNotForTool: the request names a route whose when.tools do
	// not match one of its calls. Errors wrapping it also wrap
	// ErrRouteForbidden.
	ErrRouteNotForTool = errors.New("the named route does not match the call's tool")
)

// MaxAPITimeout bounds how long an API request may wait for decisions.
const MaxAPITimeout = 7 * 24 * time.Hour

// APIRequest is a request for decisions that comes through the HTTP API
// from an agent in any language, rather than from a run in this process.
type APIRequest struct {
	// Token is the resume token the request is stored under.
	Token    string
	Requests agentrunner.DeferredToolRequests
	// Client is the authenticated API client. Policies see
	// "api:<Client>" as the requester, whatever Requester says.
	Client string
	// Requester is shown on the cards as who asked (free text, escaped
	// when shown); empty means Client.
	Requester string
	// Context is free text shown on the cards: why the calls are made.
	Context string
	// Route, when set, sends every call to the route of that name instead
	// of the first route that matches it; each call's tool must still be
	// one the route's when.tools match (ErrRouteForbidden otherwise).
	Route string
	// AllowedRoutes, when not nil, are the only routes the client may
	// send calls to.
	AllowedRoutes []string
	// Timeout is how long the request waits for decisions, at most
	// MaxAPITimeout; zero means the earliest timeout of the routes its
	// calls go to, as for runs started from Slack.
	Timeout time.Duration
	// Create, when set, records the request instead of the Bot's
	// Approvals.Create, so the HTTP API can store with it what bot does
	// not know about (a callback URL, the quota).
	Create func(ctx context.Context, a *approval.Request) error
}

// AskAPI is the ask of the HTTP API: it routes each call (by tool name,
// runs with no Slack channel, or to req.Route), applies the routes'
// policies exactly as the Policy handler does for runs started from Slack,
// records the approval, records the policies' decisions (a call no route
// matches is denied at once, by "policy:none"), and posts a card for each
// call left to people. It returns the approval as recorded before the
// policies' decisions and the cards: read the store for its current state.
//
// It returns an error wrapping ErrUnknownRoute or ErrRouteForbidden, with
// nothing recorded, when the request may not go where it would; ctx's
// error when ctx ends while posting (the token stays open); and other
// errors when recording fails.
func (b *Bot) AskAPI(ctx context.Context, req APIRequest) (*approval.Request, error) {
	var forced *Route
	if req.Route != "" {
		forced = b.route(req.Route)
		if forced == nil {
			return nil, fmt.Errorf("route %q: %w", req.Route, ErrUnknownRoute)
		}
		if !routeAllowed(req.AllowedRoutes, forced.Name) {
			return nil, fmt.Errorf("route %q: %w", forced.Name, ErrRouteForbidden)
		}
	}
	// Policies judge the authenticated client, never the free-text
	// requester shown to people.
	policyOrigin := &approval.Origin{Client: req.Client}
	routes := b.routes
	if forced != nil {
		// A named route is the only candidate, still only for the tools its
		// when.tools match: naming a route chooses among the routes a call
		// may take, it never puts a call under another tool's policy. Its
		// channels are not checked: API requests come from no channel.
		only := *forced
		only.Channels = nil
		routes = &Routes{DefaultTimeout: b.routes.DefaultTimeout, Routes: []*Route{&only}}
	}
	now := b.now()
	a := &approval.Request{
		Token: req.Token, Requests: req.Requests, Origin: approval.Origin{Client: req.Client, Name: req.Requester},
		Context: req.Context, CreatedAt: now, State: approval.StatePending,
	}
	timeout := time.Duration(0)
	for _, p := range b.pendingViews(req.Requests) {
		cs := approval.Call{ID: p.Call.ToolCallID, Kind: p.Kind, Status: approval.CallPending, Required: 1}
		r := routes.Match(p.Call.ToolName, "")
		if r == nil && forced != nil {
			return nil, fmt.Errorf("call %s (%s), route %q: %w: %w", cs.ID, p.Call.ToolName, forced.Name, ErrRouteNotForTool, ErrRouteForbidden)
		}
		if r != nil {
			if !routeAllowed(req.AllowedRoutes, r.Name) {
				return nil, fmt.Errorf("call %s (%s) goes to route %q: %w", cs.ID, p.Call.ToolName, r.Name, ErrRouteForbidden)
			}
			cs.Route = r.Name
			cs.Required = max(r.RequiredApprovals, 1)
			t := cmp.Or(r.Timeout, routes.DefaultTimeout, DefaultTimeout)
			if timeout == 0 || t < timeout {
				timeout = t
			}
		}
		a.Calls = append(a.Calls, cs)
	}
	if req.Timeout > 0 {
		timeout = req.Timeout
	}
	a.ExpiresAt = now.Add(min(cmp.Or(timeout, DefaultTimeout), MaxAPITimeout))

	pol := &Policy{Routes: routes, Now: b.now, Log: b.log}
	decided, err := pol.HandleDeferred(ctx, &agentrunner.RunContext{Deps: policyOrigin}, req.Requests)
	if err != nil {
		return nil, fmt.Errorf("apply policies: %w", err)
	}

	create := req.Create
	if create == nil {
		create = b.approvals.Create
	}
	if err := create(ctx, a); err != nil {
		return nil, fmt.Errorf("record approval: %w", err)
	}
	for _, c := range a.Calls {
		d, ok := policyDecision(decided, c.ID)
		if !ok {
			continue
		}
		if _, err := b.approvals.Decide(ctx, req.Token, d); err != nil && !errors.Is(err, approval.ErrDecided) {
			return a, fmt.Errorf("record policy decision on %s: %w", c.ID, err)
		}
	}
	for i := range a.Calls {
		c := &a.Calls[i]
		if _, ok := policyDecision(decided, c.ID); ok || c.Route == "" {
			continue
		}
		if err := b.postCard(ctx, a, c); err != nil {
			return a, err
		}
	}
	return a, nil
}

// postCard posts one call's card and records where it went. A card that
// cannot be posted ends its call with no decision, so the agent learns it
// at once; ctx ending leaves the call pending.
func (b *Bot) postCard(ctx context.Context, a *approval.Request, c *approval.Call) error {
	route := b.route(c.Route)
	b.auth.Warm(route.Usergroups...) // the first click need not wait for a lookup
	ref, err := b.post(ctx, route.Channel, b.card(a, c))
	if err != nil && ctx.Err() != nil {
		return ctx.Err()
	}
	if err != nil {
		b.log.ErrorContext(ctx, "post approval card", "err", err, "channel", route.Channel, "call", c.ID)
		action := approval.ActionFail
		if c.Kind == agentrunner.KindApproval {
			action = approval.ActionDeny
		}
		reason := agentrunner.NoDecisionPrefix + "the approval message could not be posted to Slack"
		if _, derr := b.approvals.Decide(ctx, a.Token, approval.Decision{CallID: c.ID, By: "slackbot", Action: action, Reason: reason}); derr != nil {
			return fmt.Errorf("post card for %s: %w (and recording the failure: %v)", c.ID, err, derr)
		}
		return nil
	}
	c.Message = ref
	if err := b.approvals.SetMessage(ctx, a.Token, c.ID, ref); err != nil {
		return fmt.Errorf("record card of %s: %w", c.ID, err)
	}
	return nil
}

// policyDecision turns the Policy handler's answer for a call into the
// decision to record.
func policyDecision(res *agentrunner.DeferredToolResults, id string) (approval.Decision, bool) {
	by := res.AnsweredBy[id]
	if r, ok := res.Approvals[id]; ok {
		if r.Approved {
			return approval.Decision{CallID: id, By: by, Action: approval.ActionApprove}, true
		}
		return approval.Decision{CallID: id, By: by, Action: approval.ActionDeny, Reason: r.DenialMessage()}, true
	}
	if r, ok := res.Calls[id]; ok {
		return approval.Decision{CallID: id, By: by, Action: approval.ActionFail, Reason: r.Message}, true
	}
	return approval.Decision{}, false
}

func routeAllowed(allowed []string, name string) bool {
	return allowed == nil || slices.Contains(allowed, name)
}
