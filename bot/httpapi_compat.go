package bot

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"time"

	"github.com/slackapprove/slackbot/agentrunner"
	"github.com/slackapprove/slackbot/approval"
)

// What package httpapi still calls bot for, over approval.Service: the
// names httpapi's Bot interface is written in, until httpapi is on
// approval.Service itself (issue 12, branch i12api). Delete this file,
// and Config.Store, with that merge; nothing else in bot uses them.

// Errors of AskAPI about routes: the Service's ENOROUTE and EFORBIDDEN, as
// httpapi matches them.
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
	// ErrEditRefused is wrapped by every *EditRefusedError.
	ErrEditRefused = errors.New("edited arguments refused")
)

// MaxAPITimeout is approval.MaxTimeout.
const MaxAPITimeout = approval.MaxTimeout

// AnsweredByNoRoute is approval.ByNoRoute.
const AnsweredByNoRoute = approval.ByNoRoute

// APIRequest is an approval.Opening as httpapi builds it.
type APIRequest struct {
	Token         string
	Requests      agentrunner.DeferredToolRequests
	Client        string
	Requester     string
	Context       string
	Route         string
	AllowedRoutes []string
	Timeout       time.Duration
	// Create records the request instead of the store's Create.
	Create func(ctx context.Context, a *approval.Request) error
}

// AskAPI opens req through approval.Service.Open, recording it with
// req.Create.
func (b *Bot) AskAPI(ctx context.Context, req APIRequest) (*approval.Request, error) {
	st := b.store
	if req.Create != nil {
		st = createVia{Store: b.store, create: req.Create}
	}
	svc := approval.New(approval.Config{
		Store: st, Poster: b.cards, Directory: b.groups, Routes: b.svc.Routes(), Tools: b.cards.tools, Log: b.log, Now: b.now,
	})
	r, err := svc.Open(ctx, approval.Opening{
		Token: req.Token, Requests: req.Requests, Origin: approval.Origin{Client: req.Client, Name: req.Requester},
		Context: req.Context, Route: req.Route, AllowedRoutes: req.AllowedRoutes, Timeout: req.Timeout,
	})
	switch approval.ErrorCode(err) {
	case approval.ENOROUTE:
		return nil, errors.Join(err, ErrUnknownRoute)
	case approval.EFORBIDDEN:
		if strings.Contains(approval.ErrorMessage(err), "does not match the call's tool") {
			return nil, errors.Join(err, ErrRouteNotForTool, ErrRouteForbidden)
		}
		return nil, errors.Join(err, ErrRouteForbidden)
	}
	return r, err
}

type createVia struct {
	approval.Store
	create func(ctx context.Context, a *approval.Request) error
}

func (c createVia) Create(ctx context.Context, a *approval.Request) error { return c.create(ctx, a) }

// UpdateCards is approval.Service.UpdateCards.
func (b *Bot) UpdateCards(ctx context.Context, token string) error {
	return b.svc.UpdateCards(ctx, token)
}

// EditedCall is a call whose arguments someone edited before approving it.
type EditedCall struct {
	Call      agentrunner.ToolCallPart
	Route     string
	Requester string
	Channel   string
	Metadata  map[string]any
	Args      json.RawMessage
}

// EditRefusedError is approval.Service.CheckEdit's refusal.
type EditRefusedError struct {
	Reason string
}

// Error returns the reason.
func (e *EditRefusedError) Error() string { return "edited arguments refused: " + e.Reason }

// Unwrap lets callers test for ErrEditRefused.
func (e *EditRefusedError) Unwrap() error { return ErrEditRefused }

// CheckEdit is approval.Service.CheckEdit.
func (b *Bot) CheckEdit(ctx context.Context, e EditedCall) (json.RawMessage, error) {
	origin := approval.Origin{User: e.Requester, Channel: e.Channel}
	if client, ok := strings.CutPrefix(e.Requester, approval.APIClientPrefix); ok {
		origin = approval.Origin{Client: client, Channel: e.Channel}
	}
	id := e.Call.ToolCallID
	r := &approval.Request{
		Requests: agentrunner.DeferredToolRequests{Approvals: []agentrunner.ToolCallPart{e.Call}, Metadata: map[string]map[string]any{id: e.Metadata}},
		Origin:   origin,
	}
	args, err := b.svc.CheckEdit(ctx, r, &approval.Call{ID: id, Route: e.Route, Tool: e.Call.ToolName}, e.Args)
	if code := approval.ErrorCode(err); code == approval.EINVALID || code == approval.EPOLICY {
		return nil, &EditRefusedError{Reason: approval.ErrorMessage(err)}
	}
	return args, err
}
