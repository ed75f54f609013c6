package routing

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"
	"time"

	"cel.dev/cel-go/cel"
)

// DefaultRouteTimeout is how long an approval request waits for a decision
// when neither its route nor the file's default_timeout says otherwise.
const DefaultRouteTimeout = time.Hour

// Routes is a parsed routing file: which route each tool call follows, in
// order, first match wins.
type Routes struct {
	// DefaultTimeout applies to routes without a timeout of their own.
	DefaultTimeout time.Duration
	// Routes in file order.
	Routes []*Route
	// File names where the routes came from, for messages.
	File string
	// MCPServers are the MCP servers whose tools the agent is offered, in
	// file order; see MCPServer. Nil when the file has no mcp_servers.
	MCPServers []MCPServer
}

// Route says where approval requests for some tool calls go, who may decide
// them, and which of them a policy decides without a person.
type Route struct {
	// Name identifies the route in messages, metrics and answered_by
	// ("policy:<name>"). Unique within a file; "route-N" when not given.
	Name string
	// Line is the route's line in its file (0 when not from a file).
	Line int

	// Tools are globs on the tool name (path.Match syntax, but `*` and `?`
	// match any character, `/` included); empty matches every tool.
	Tools []string
	// Channels are globs on the channel the run was started from; empty
	// matches every channel, including runs not started from Slack.
	Channels []string

	// Channel is the Slack channel id approval messages are posted to.
	Channel string
	// Users and Usergroups may approve; usergroup members are resolved when
	// someone clicks (see IsApprover).
	Users      []string
	Usergroups []string
	// RequiredApprovals is how many distinct approvers must approve (N of M).
	RequiredApprovals int
	// AllowSelfApproval lets the requester approve their own call.
	AllowSelfApproval bool
	// Timeout bounds the wait for a decision.
	Timeout time.Duration

	// AutoApprove and AutoDeny are CEL expressions over tool, args,
	// requester, channel, metadata and now; true decides the call without a
	// person. AutoDeny is evaluated first. They are compiled by
	// ParseRoutes; a Route built by hand decides nothing by policy.
	AutoApprove string
	AutoDeny    string

	// Confirm makes Approve ask "Are you sure?" in Slack's confirm dialog.
	Confirm bool
	// RemindEvery, when set, reminds the approvers in the card's thread
	// while the call is pending, at most MaxReminders times (Reminders).
	RemindEvery time.Duration
	// Escalate, when set, lets more approvers decide a call nobody
	// decided in time (EscalatesAt, IsEscalationApprover).
	Escalate *Escalation
	// Grants, when set, lets an approver approve a call and its repeats
	// (same tool, same arguments, same requester) for a while, up to
	// Grants (GrantChoices).
	Grants time.Duration
	// OfferAlwaysAllow offers, on a coding agent's card that carries the
	// agent's own "always allow" rule (agentrunner.MetaAlwaysAllow), an
	// "Approve and always allow <rule>" button (offer_always_allow: true).
	OfferAlwaysAllow bool
	// StepUp, when on, makes a person's approval of the route's calls need
	// a step-up proof first (step_up: true, or a CEL condition on args;
	// NeedsStepUp). StepUpMethods are the methods that count
	// (step_up_methods: webauthn, totp); empty means webauthn.
	StepUp        StepUp
	StepUpMethods []string

	autoApprove cel.Program
	autoDeny    cel.Program
}

// ErrInvalidRoutes is wrapped by every *RoutesError.
var ErrInvalidRoutes = errors.New("invalid routing file")

// Problem is one reason a routing file is refused.
type Problem struct {
	File    string
	Line    int // 1-based; 0 when the problem is about the whole file
	Column  int // 1-based; 0 when unknown
	Message string
}

// String formats the problem as FILE:LINE: message, like a compiler.
func (p Problem) String() string {
	if p.Line == 0 {
		return p.File + ": " + p.Message
	}
	return fmt.Sprintf("%s:%d: %s", p.File, p.Line, p.Message)
}

// RoutesError lists every problem found in a routing file, in file order.
type RoutesError struct {
	File     string
	Problems []Problem
}

// Error returns one problem per line.
func (e *RoutesError) Error() string {
	lines := make([]string, len(e.Problems))
	for i, p := range e.Problems {
		lines[i] = p.String()
	}
	return strings.Join(lines, "\n")
}

// Unwrap lets callers test for ErrInvalidRoutes.
func (e *RoutesError) Unwrap() error { return ErrInvalidRoutes }

// LoadRoutes reads and validates the routing file at path. A file with any
// problem is refused with a *RoutesError naming every problem with its line.
func LoadRoutes(path string) (*Routes, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("load routes: %w", err)
	}
	return ParseRoutes(data, path)
}

//go:embed demo_routes.yaml
var demoRoutesYAML []byte

// DemoRoutes returns the built-in routing `slackbot dev` uses when no
// ROUTES_FILE is set: approvals go to C0APPROVALS, refunds up to 100 are
// approved by policy, deletions need both U0ALICE and U0BOB.
func DemoRoutes() *Routes {
	r, err := ParseRoutes(demoRoutesYAML, "demo_routes.yaml")
	if err != nil {
		// The file is embedded and tested; failing here is a build defect.
		panic(fmt.Sprintf("routing: built-in demo routes: %v", err))
	}
	return r
}

// Named returns the route named name, or nil.
func (rs *Routes) Named(name string) *Route {
	if rs == nil {
		return nil
	}
	for _, r := range rs.Routes {
		if r.Name == name {
			return r
		}
	}
	return nil
}

// Match returns the first route whose globs match the tool name and the
// channel the run was started from, or nil when none does.
func (rs *Routes) Match(toolName, sourceChannel string) *Route {
	if rs == nil {
		return nil
	}
	for _, r := range rs.Routes {
		if r.Matches(toolName, sourceChannel) {
			return r
		}
	}
	return nil
}

// Matches reports whether the route applies to a call of toolName made by
// a run started in sourceChannel ("" when not started from Slack).
func (r *Route) Matches(toolName, sourceChannel string) bool {
	return matchAny(r.Tools, toolName) && matchAny(r.Channels, sourceChannel)
}

func matchAny(globs []string, s string) bool {
	if len(globs) == 0 {
		return true
	}
	for _, g := range globs {
		if matchGlob(g, s) {
			return true
		}
	}
	return false
}

// matchesEverything reports whether the route matches every call, so that
// routes after it can never be used.
func (r *Route) matchesEverything() bool {
	return (len(r.Tools) == 0 || slices.Contains(r.Tools, "*")) &&
		(len(r.Channels) == 0 || slices.Contains(r.Channels, "*"))
}

// UsergroupMembers returns the user ids in a Slack usergroup; in slackbot
// it calls usergroups.users.list (through a cache).
type UsergroupMembers func(ctx context.Context, usergroup string) ([]string, error)

// IsApprover reports whether user is one of the route's approvers: listed
// by id, or a member of a listed usergroup. Usergroups are looked up only
// when the user is not listed directly. A failed lookup is returned as an
// error unless another group already names the user; the caller must then
// treat the user as not authorized. It does not check self-approval; see
// AllowSelfApproval.
func (r *Route) IsApprover(ctx context.Context, user string, members UsergroupMembers) (bool, error) {
	if user == "" {
		return false, nil
	}
	if slices.Contains(r.Users, user) {
		return true, nil
	}
	if len(r.Usergroups) == 0 {
		return false, nil
	}
	if members == nil {
		return false, fmt.Errorf("route %s: usergroups %s need a member lookup", r.Name, strings.Join(r.Usergroups, ", "))
	}
	var errs []error
	for _, g := range r.Usergroups {
		ids, err := members(ctx, g)
		if err != nil {
			errs = append(errs, fmt.Errorf("usergroup %s: %w", g, err))
			continue
		}
		if slices.Contains(ids, user) {
			return true, nil
		}
	}
	if len(errs) > 0 {
		return false, fmt.Errorf("route %s: %w", r.Name, errors.Join(errs...))
	}
	return false, nil
}

// Slack id shapes: channels (public C, private G, direct D), users (U, or
// W on Enterprise Grid) and usergroups (S).
var (
	channelIDPattern   = regexp.MustCompile(`^[CGD][A-Z0-9]{2,}$`)
	userIDPattern      = regexp.MustCompile(`^[UW][A-Z0-9]{2,}$`)
	usergroupIDPattern = regexp.MustCompile(`^S[A-Z0-9]{2,}$`)
	routeNamePattern   = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]*$`)
)

// NoRouteName is what answered_by names when no route matched; a route may
// not take it.
const NoRouteName = "none"

// ParseRoutes parses and validates a routing file; filename is used in
// messages only. Every problem is reported, each with its line, in one
// *RoutesError.
func ParseRoutes(data []byte, filename string) (*Routes, error) {
	d := &routesDecoder{file: filename}
	rs := d.decode(data)
	if len(d.problems) > 0 {
		slices.SortStableFunc(d.problems, func(a, b Problem) int { return a.Line - b.Line })
		return nil, &RoutesError{File: filename, Problems: d.problems}
	}
	return rs, nil
}
