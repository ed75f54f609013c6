package bot

import "github.com/slackapprove/slackbot/routing"

// Temporary aliases for the move of the routing file to package routing (issue 12); removed once every caller names routing directly.

type (
	// Routes is routing.Routes.
	Routes = routing.Routes
	// Route is routing.Route.
	Route = routing.Route
	// MCPServer is routing.MCPServer.
	MCPServer = routing.MCPServer
	// Problem is routing.Problem.
	Problem = routing.Problem
	// RoutesError is routing.RoutesError.
	RoutesError = routing.RoutesError
	// UsergroupMembers is routing.UsergroupMembers.
	UsergroupMembers = routing.UsergroupMembers
	// PolicyInput is routing.PolicyInput.
	PolicyInput = routing.PolicyInput
	// Verdict is routing.Verdict.
	Verdict = routing.Verdict
)

// Verdicts and the default timeout, as in package routing.
const (
	Undecided           = routing.Undecided
	AutoApproved        = routing.AutoApproved
	AutoDenied          = routing.AutoDenied
	DefaultRouteTimeout = routing.DefaultRouteTimeout
)

var (
	// ErrInvalidRoutes is routing.ErrInvalidRoutes.
	ErrInvalidRoutes = routing.ErrInvalidRoutes
	// LoadRoutes is routing.LoadRoutes.
	LoadRoutes = routing.LoadRoutes
	// ParseRoutes is routing.ParseRoutes.
	ParseRoutes = routing.ParseRoutes
	// DemoRoutes is routing.DemoRoutes.
	DemoRoutes = routing.DemoRoutes

	argsForPolicy = routing.ArgsForPolicy
	squashSpace   = routing.OneLine
)
