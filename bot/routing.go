package bot

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"cel.dev/cel-go/cel"
	"github.com/goccy/go-yaml"
	"github.com/goccy/go-yaml/ast"
	"github.com/goccy/go-yaml/parser"

	"github.com/slackapprove/slackbot/agentrunner/mcptools"
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

// MCPServer is one entry of the routing file's mcp_servers section: an MCP
// server whose tools the agent is offered, as "<name>__<tool>", each
// requiring approval (and so following the routes) unless listed in
// ReadOnly. ${VAR} references in Env, URL and Headers are kept as written
// and expanded from the environment only when the servers start (see
// agentrunner/mcptools), so `slackbot routes check` needs no secrets; the
// loader checks that they are well formed.
//
//	mcp_servers:
//	  - name: github                            # letters, digits, single - or _
//	    command: ["github-mcp-server", "stdio"]  # stdio: the server's argv
//	    env: {GITHUB_TOKEN: "${GITHUB_TOKEN}"}   # added to the child's environment
//	  - name: tickets
//	    url: https://mcp.example.com/mcp         # streamable HTTP
//	    headers: {Authorization: "Bearer ${TICKETS_TOKEN}"}
//	    read_only: ["search_tickets", "get_*"]  # globs on the server's tool names
//	    timeout: 30s                             # per call; default 1m
type MCPServer struct {
	Name    string
	Command []string
	Env     map[string]string
	URL     string
	Headers map[string]string
	// ReadOnly are globs on the server's own tool names; those tools run
	// without approval.
	ReadOnly []string
	// Timeout bounds one call; zero means mcptools.DefaultTimeout.
	Timeout time.Duration
	// Line is the entry's line in its file (0 when not from a file).
	Line int
}

// Config returns the server's configuration for mcptools.NewToolset.
func (s MCPServer) Config() mcptools.Config {
	return mcptools.Config{
		Name: s.Name, Command: s.Command, Env: s.Env, URL: s.URL,
		Headers: s.Headers, ReadOnly: s.ReadOnly, Timeout: s.Timeout,
	}
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
		panic(fmt.Sprintf("bot: built-in demo routes: %v", err))
	}
	return r
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

// Describe writes what `slackbot routes check FILE` shows: each route in
// order with what it matches, where it posts, who approves, how many must,
// the timeout, and its policies.
func (rs *Routes) Describe(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "ROUTE\tTOOLS\tFROM\tPOSTS TO\tAPPROVERS\tNEEDS\tSELF\tTIMEOUT\n")
	for _, r := range rs.Routes {
		self := "no"
		if r.AllowSelfApproval {
			self = "yes"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%d\t%s\t%s\n",
			r.Name, listOr(r.Tools, "any"), listOr(r.Channels, "any"), r.Channel,
			r.approversText(), r.RequiredApprovals, self, formatDuration(r.Timeout))
	}
	if err := tw.Flush(); err != nil {
		return fmt.Errorf("describe routes: %w", err)
	}

	var policies []string
	for _, r := range rs.Routes {
		if r.AutoDeny != "" {
			policies = append(policies, fmt.Sprintf("  %s\tauto_deny\t%s\n", r.Name, squashSpace(r.AutoDeny)))
		}
		if r.AutoApprove != "" {
			policies = append(policies, fmt.Sprintf("  %s\tauto_approve\t%s\n", r.Name, squashSpace(r.AutoApprove)))
		}
	}
	if len(policies) > 0 {
		fmt.Fprintf(tw, "\nPolicies (auto_deny is checked first; an error leaves the call to a person):\n")
		for _, p := range policies {
			fmt.Fprint(tw, p)
		}
	}
	fmt.Fprintf(tw, "\nFirst match wins. A call no route matches is denied.\n")
	if len(rs.MCPServers) > 0 {
		fmt.Fprintf(tw, "\nMCP servers (tools are <name>__<tool>; each needs approval unless read-only):\n")
		fmt.Fprintf(tw, "  SERVER\tTRANSPORT\tREAD-ONLY\tTIMEOUT\n")
		for _, m := range rs.MCPServers {
			timeout := mcptools.DefaultTimeout
			if m.Timeout > 0 {
				timeout = m.Timeout
			}
			fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\n", m.Name, m.Config().Transport(), listOr(m.ReadOnly, "none"), formatDuration(timeout))
		}
	}
	if err := tw.Flush(); err != nil {
		return fmt.Errorf("describe routes: %w", err)
	}
	return nil
}

func (r *Route) approversText() string {
	all := slices.Clone(r.Users)
	for _, g := range r.Usergroups {
		all = append(all, "@"+g)
	}
	return strings.Join(all, ", ")
}

func listOr(l []string, empty string) string {
	if len(l) == 0 {
		return empty
	}
	return strings.Join(l, ", ")
}

// squashSpace puts a multi-line expression on one line.
func squashSpace(s string) string { return strings.Join(strings.Fields(s), " ") }

// formatDuration writes 30m, 1h30m, 2d rather than Go's 30m0s.
func formatDuration(d time.Duration) string {
	if d <= 0 {
		return d.String()
	}
	var b strings.Builder
	for _, u := range []struct {
		suffix string
		size   time.Duration
	}{{"d", 24 * time.Hour}, {"h", time.Hour}, {"m", time.Minute}, {"s", time.Second}} {
		if n := d / u.size; n > 0 {
			fmt.Fprintf(&b, "%d%s", n, u.suffix)
			d -= n * u.size
		}
	}
	if d > 0 || b.Len() == 0 {
		b.WriteString(d.String())
	}
	return b.String()
}

// parseDuration accepts Go durations and a leading whole number of days:
// "30m", "1h30m", "2d", "1d12h".
func parseDuration(s string) (time.Duration, error) {
	s = strings.TrimSpace(s)
	var days time.Duration
	if i := strings.IndexByte(s, 'd'); i > 0 {
		n, err := strconv.Atoi(s[:i])
		if err != nil || n < 0 {
			return 0, fmt.Errorf("invalid duration %q", s)
		}
		days = time.Duration(n) * 24 * time.Hour
		s = s[i+1:]
		if s == "" {
			return days, nil
		}
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, err
	}
	return days + d, nil
}

// Slack id shapes: channels (public C, private G, direct D), users (U, or
// W on Enterprise Grid) and usergroups (S).
var (
	channelIDPattern   = regexp.MustCompile(`^[CGD][A-Z0-9]{2,}$`)
	userIDPattern      = regexp.MustCompile(`^[UW][A-Z0-9]{2,}$`)
	usergroupIDPattern = regexp.MustCompile(`^S[A-Z0-9]{2,}$`)
	routeNamePattern   = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]*$`)
)

// noRouteName is what answered_by names when no route matched; a route may
// not take it.
const noRouteName = "none"

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

// routesDecoder walks the YAML syntax tree itself rather than decoding into
// structs, so that it can report every unknown field, wrong type and
// invalid value of a file at once, each at its own line.
type routesDecoder struct {
	file     string
	problems []Problem
	anchors  map[string][]anchorDef
}

type anchorDef struct {
	offset int
	value  ast.Node
}

// field is one key: value of a mapping, with merge keys already applied.
type field struct {
	key   string
	keyAt ast.Node
	value ast.Node
}

func (d *routesDecoder) problemAt(n ast.Node, format string, args ...any) {
	p := Problem{File: d.file, Message: fmt.Sprintf(format, args...)}
	if n != nil {
		if tk := n.GetToken(); tk != nil && tk.Position != nil {
			p.Line, p.Column = tk.Position.Line, tk.Position.Column
		}
	}
	d.problems = append(d.problems, p)
}

func (d *routesDecoder) problemLine(line int, format string, args ...any) {
	d.problems = append(d.problems, Problem{File: d.file, Line: line, Message: fmt.Sprintf(format, args...)})
}

func lineOf(n ast.Node) int {
	if n == nil {
		return 0
	}
	if tk := n.GetToken(); tk != nil && tk.Position != nil {
		return tk.Position.Line
	}
	return 0
}

func (d *routesDecoder) decode(data []byte) *Routes {
	f, err := parser.ParseBytes(data, 0)
	if err != nil {
		p := Problem{File: d.file, Message: fmt.Sprintf("not valid YAML: %v", err)}
		var ye yaml.Error
		if errors.As(err, &ye) {
			p.Message = "not valid YAML: " + ye.GetMessage()
			if tk := ye.GetToken(); tk != nil && tk.Position != nil {
				p.Line, p.Column = tk.Position.Line, tk.Position.Column
			}
		}
		d.problems = append(d.problems, p)
		return nil
	}
	var body ast.Node
	for i, doc := range f.Docs {
		if doc.Body == nil || doc.Body.Type() == ast.CommentType {
			continue
		}
		if body != nil {
			d.problemAt(doc.Body, "a routing file holds one YAML document; found document %d", i+1)
			return nil
		}
		body = doc.Body
	}
	if body == nil {
		d.problemLine(0, "the file is empty; it needs a routes list")
		return nil
	}
	d.collectAnchors(body)

	rs := &Routes{DefaultTimeout: DefaultRouteTimeout, File: d.file}
	top, ok := d.mapping(body, "the routing file")
	if !ok {
		return nil
	}
	var routesNode ast.Node
	for _, fl := range d.known(top, "the routing file", "default_timeout", "routes", "mcp_servers") {
		switch fl.key {
		case "default_timeout":
			if v, ok := d.duration(fl); ok {
				rs.DefaultTimeout = v
			}
		case "routes":
			routesNode = fl.value
		case "mcp_servers":
			rs.MCPServers = d.mcpServers(fl)
		}
	}
	if routesNode == nil || isNull(d.resolve(routesNode)) {
		d.problemAt(body, "no routes: add a routes list; a call no route matches is denied")
		return rs
	}
	items, ok := d.sequence(field{key: "routes", value: routesNode})
	if !ok {
		return rs
	}
	if len(items) == 0 {
		d.problemAt(routesNode, "no routes: add a route; a call no route matches is denied")
		return rs
	}

	env, err := policyEnv()
	if err != nil {
		// The environment is fixed; only a cel-go defect could fail it.
		d.problemLine(0, "policy environment: %v", err)
		return nil
	}
	names := map[string]int{}
	var catchAll *Route
	for i, item := range items {
		r := d.route(env, item, i+1, rs.DefaultTimeout)
		if r == nil {
			continue
		}
		if first, dup := names[r.Name]; dup {
			d.problemLine(r.Line, "route name %q is already used by the route on line %d", r.Name, first)
		} else {
			names[r.Name] = r.Line
		}
		if catchAll != nil {
			d.problemLine(r.Line, "route %q is never used: route %q on line %d above it matches every call", r.Name, catchAll.Name, catchAll.Line)
		} else if r.matchesEverything() {
			catchAll = r
		}
		rs.Routes = append(rs.Routes, r)
	}
	return rs
}

func (d *routesDecoder) route(env *cel.Env, item ast.Node, index int, defaultTimeout time.Duration) *Route {
	fields, ok := d.mapping(item, fmt.Sprintf("route %d", index))
	if !ok {
		return nil
	}
	// Messages name the route as its author did, when they did.
	what := fmt.Sprintf("route %d", index)
	for _, fl := range fields {
		if n, ok := d.resolve(fl.value).(*ast.StringNode); ok && fl.key == "name" && n.Value != "" {
			what = fmt.Sprintf("route %q", n.Value)
		}
	}
	r := &Route{
		Name:              fmt.Sprintf("route-%d", index),
		Line:              lineOf(d.resolve(item)),
		RequiredApprovals: 1,
		Timeout:           defaultTimeout,
	}
	var (
		quorumAt                  = d.resolve(item)
		approversAt               ast.Node
		autoApproveAt, autoDenyAt field
	)
	for _, fl := range d.known(fields, what, "name", "when", "channel", "approvers",
		"required_approvals", "allow_self_approval", "timeout", "auto_approve", "auto_deny") {
		switch fl.key {
		case "name":
			if s, ok := d.str(fl); ok {
				switch {
				case !routeNamePattern.MatchString(s):
					d.problemAt(fl.value, "name %q: use letters, digits, '-', '_' or '.'", s)
				case s == noRouteName:
					d.problemAt(fl.value, "name %q is reserved: answered_by says policy:%s when no route matches", s, noRouteName)
				default:
					r.Name = s
				}
			}
		case "when":
			d.when(r, fl)
		case "channel":
			if s, ok := d.str(fl); ok {
				r.Channel = s
				if !channelIDPattern.MatchString(s) {
					d.problemAt(fl.value, "channel %q is not a Slack channel id (like C0123ABCD); names change, ids do not: copy it from the channel's details", s)
				}
			}
		case "approvers":
			approversAt = fl.keyAt
			d.approvers(r, fl)
		case "required_approvals":
			quorumAt = fl.value
			if n, ok := d.integer(fl); ok {
				r.RequiredApprovals = n
			}
		case "allow_self_approval":
			if b, ok := d.boolean(fl); ok {
				r.AllowSelfApproval = b
			}
		case "timeout":
			if v, ok := d.duration(fl); ok {
				r.Timeout = v
			}
		case "auto_approve":
			autoApproveAt = fl
			r.AutoApprove, _ = d.str(fl)
		case "auto_deny":
			autoDenyAt = fl
			r.AutoDeny, _ = d.str(fl)
		}
	}

	if r.Channel == "" {
		d.problemLine(r.Line, "route %q has no channel: say where its approval requests are posted (channel: C0123ABCD)", r.Name)
	}
	if len(r.Users) == 0 && len(r.Usergroups) == 0 {
		at := r.Line
		if approversAt != nil {
			at = lineOf(approversAt)
		}
		d.problemLine(at, "route %q has no approvers: list approvers.users or approvers.usergroups", r.Name)
	}
	switch {
	case r.RequiredApprovals < 1:
		d.problemAt(quorumAt, "required_approvals must be at least 1, got %d", r.RequiredApprovals)
	case len(r.Usergroups) == 0 && len(r.Users) > 0 && r.RequiredApprovals > len(r.Users):
		d.problemAt(quorumAt, "required_approvals is %d but route %q lists only %d approver(s)", r.RequiredApprovals, r.Name, len(r.Users))
	}
	if autoApproveAt.value != nil && r.AutoApprove != "" {
		r.autoApprove = d.compile(env, autoApproveAt, r.AutoApprove)
	}
	if autoDenyAt.value != nil && r.AutoDeny != "" {
		r.autoDeny = d.compile(env, autoDenyAt, r.AutoDeny)
	}
	return r
}

func (d *routesDecoder) when(r *Route, fl field) {
	fields, ok := d.mapping(fl.value, "when")
	if !ok {
		return
	}
	for _, w := range d.known(fields, "when", "tools", "channels") {
		globs, ok := d.strings(w)
		if !ok {
			continue
		}
		for i, g := range globs {
			at := d.itemNode(w.value, i)
			if g == "" {
				d.problemAt(at, "%s: empty pattern", w.key)
				continue
			}
			if _, err := path.Match(g, ""); err != nil {
				d.problemAt(at, "%s: pattern %q is not a valid glob: %v", w.key, g, err)
				continue
			}
			if w.key == "channels" && !strings.ContainsAny(g, `*?[\`) && !channelIDPattern.MatchString(g) {
				d.problemAt(at, "channels: %q is not a Slack channel id (like C0123ABCD)", g)
			}
		}
		if w.key == "tools" {
			r.Tools = globs
		} else {
			r.Channels = globs
		}
	}
}

func (d *routesDecoder) approvers(r *Route, fl field) {
	fields, ok := d.mapping(fl.value, "approvers")
	if !ok {
		return
	}
	for _, a := range d.known(fields, "approvers", "users", "usergroups") {
		ids, ok := d.strings(a)
		if !ok {
			continue
		}
		pattern, example := userIDPattern, "U0123ABCD"
		if a.key == "usergroups" {
			pattern, example = usergroupIDPattern, "S0123ABCD"
		}
		seen := map[string]bool{}
		var kept []string
		for i, id := range ids {
			at := d.itemNode(a.value, i)
			switch {
			case !pattern.MatchString(id):
				d.problemAt(at, "%s: %q is not a Slack id (like %s)", a.key, id, example)
			case seen[id]:
				d.problemAt(at, "%s: %s is listed twice", a.key, id)
			default:
				seen[id] = true
				kept = append(kept, id)
			}
		}
		if a.key == "users" {
			r.Users = kept
		} else {
			r.Usergroups = kept
		}
	}
}

// mcpServers parses the mcp_servers section, a list of MCPServer entries:
//
//	mcp_servers:
//	  - name: github                  # required, unique
//	    command: ["srv", "stdio"]     # stdio argv; or
//	    url: https://host/mcp         # streamable HTTP (http or https)
//	    env: {K: "${VAR}"}            # stdio only
//	    headers: {H: "Bearer ${VAR}"} # HTTP only
//	    read_only: ["get_*"]          # globs on the server's tool names
//	    timeout: 30s                  # per call
//
// Each entry's values are checked by mcptools.Config.Validate, whose
// problems are reported at the line of the field they name; ${VAR}
// references are checked for form only, never looked up.
func (d *routesDecoder) mcpServers(fl field) []MCPServer {
	items, ok := d.sequence(fl)
	if !ok {
		return nil
	}
	names := map[string]int{}
	var out []MCPServer
	for i, item := range items {
		s, ok := d.mcpServer(item, i+1)
		if !ok {
			continue
		}
		if first, dup := names[s.Name]; dup && s.Name != "" {
			d.problemLine(s.Line, "MCP server name %q is already used on line %d", s.Name, first)
		} else {
			names[s.Name] = s.Line
		}
		out = append(out, s)
	}
	return out
}

func (d *routesDecoder) mcpServer(item ast.Node, index int) (MCPServer, bool) {
	what := fmt.Sprintf("mcp_servers item %d", index)
	fields, ok := d.mapping(item, what)
	if !ok {
		return MCPServer{}, false
	}
	s := MCPServer{Line: lineOf(d.resolve(item))}
	// at maps the field names of mcptools.ConfigProblem to their nodes;
	// failed holds the fields whose YAML was wrong, already reported.
	at := map[string]ast.Node{"": d.resolve(item)}
	failed := map[string]bool{}
	for _, fl := range d.known(fields, what, "name", "command", "env", "url", "headers", "read_only", "timeout") {
		at[fl.key] = fl.value
		good := true
		switch fl.key {
		case "name":
			s.Name, good = d.str(fl)
		case "command":
			s.Command, good = d.strings(fl)
		case "env":
			s.Env, good = d.stringMap(fl, at, failed)
		case "url":
			s.URL, good = d.str(fl)
		case "headers":
			s.Headers, good = d.stringMap(fl, at, failed)
		case "read_only":
			s.ReadOnly, good = d.strings(fl)
			for i := range s.ReadOnly {
				at[fmt.Sprintf("read_only[%d]", i)] = d.itemNode(fl.value, i)
			}
		case "timeout":
			s.Timeout, good = d.duration(fl)
		}
		failed[fl.key] = !good
	}

	err := s.Config().Validate()
	var ce *mcptools.ConfigError
	if !errors.As(err, &ce) {
		return s, true
	}
	label := what
	if mcptools.ValidateName(s.Name) == nil {
		label = fmt.Sprintf("MCP server %q", s.Name)
	}
	for _, p := range ce.Problems {
		root, _, _ := strings.Cut(p.Field, ".")
		root, _, _ = strings.Cut(root, "[")
		if failed[p.Field] || failed[root] || p.Field == "" && (failed["command"] || failed["url"]) {
			continue // a consequence of a problem already reported
		}
		n := at[p.Field]
		if n == nil {
			n = at[root]
		}
		if n == nil {
			n = at[""]
		}
		if p.Field == "" {
			d.problemAt(n, "%s: %s", label, p.Message)
		} else {
			d.problemAt(n, "%s: %s: %s", label, p.Field, p.Message)
		}
	}
	return s, true
}

// stringMap decodes a mapping of names to text, such as env or headers,
// and records each value's node in at as "<field>.<name>", or the name in
// failed when its value is not text. It reports false when fl is not a
// mapping at all.
func (d *routesDecoder) stringMap(fl field, at map[string]ast.Node, failed map[string]bool) (map[string]string, bool) {
	if isNull(d.resolve(fl.value)) {
		return nil, true
	}
	fields, ok := d.mapping(fl.value, fl.key)
	if !ok {
		return nil, false
	}
	out := make(map[string]string, len(fields))
	for _, kv := range fields {
		name := fl.key + "." + kv.key
		at[name] = kv.value
		v, ok := d.str(field{key: name, value: kv.value})
		if !ok {
			failed[name] = true
			continue
		}
		out[kv.key] = v
	}
	return out, true
}

// collectAnchors records every anchor with its offset, so that an alias
// resolves to the nearest anchor of that name before it, as YAML says.
func (d *routesDecoder) collectAnchors(root ast.Node) {
	d.anchors = map[string][]anchorDef{}
	ast.Walk(anchorVisitor(func(a *ast.AnchorNode) {
		name := a.Name.String()
		d.anchors[name] = append(d.anchors[name], anchorDef{offset: a.GetToken().Position.Offset, value: a.Value})
	}), root)
}

type anchorVisitor func(*ast.AnchorNode)

func (v anchorVisitor) Visit(n ast.Node) ast.Visitor {
	if a, ok := n.(*ast.AnchorNode); ok {
		v(a)
	}
	return v
}

// resolve follows anchors, aliases and tags to the node holding the value.
func (d *routesDecoder) resolve(n ast.Node) ast.Node {
	for range 32 { // bounds alias chains and self-referencing aliases
		switch v := n.(type) {
		case *ast.AnchorNode:
			n = v.Value
		case *ast.TagNode:
			n = v.Value
		case *ast.AliasNode:
			defs := d.anchors[v.Value.String()]
			off := v.GetToken().Position.Offset
			var target ast.Node
			for _, def := range defs {
				if def.offset < off {
					target = def.value
				}
			}
			if target == nil {
				return v
			}
			n = target
		default:
			return n
		}
	}
	return n
}

func isNull(n ast.Node) bool {
	return n == nil || n.Type() == ast.NullType
}

// mapping returns the fields of a mapping node, applying merge keys (<<).
func (d *routesDecoder) mapping(n ast.Node, what string) ([]field, bool) {
	n = d.resolve(n)
	if _, ok := n.(*ast.AliasNode); ok {
		d.problemAt(n, "%s: unknown alias %s", what, n.String())
		return nil, false
	}
	m, ok := n.(*ast.MappingNode)
	if !ok {
		d.problemAt(n, "%s must be a mapping of fields, got %s", what, describeNode(n))
		return nil, false
	}
	var own, merged []field
	for _, mv := range m.Values {
		if mv.Key.IsMergeKey() {
			merged = append(merged, d.mergeSources(mv.Value, what)...)
			continue
		}
		own = append(own, field{key: mv.Key.String(), keyAt: mv.Key, value: mv.Value})
	}
	// Own fields win over merged ones, as in YAML's merge key.
	out := own
	for _, fl := range merged {
		if !slices.ContainsFunc(out, func(o field) bool { return o.key == fl.key }) {
			out = append(out, fl)
		}
	}
	return out, true
}

func (d *routesDecoder) mergeSources(n ast.Node, what string) []field {
	n = d.resolve(n)
	if seq, ok := n.(*ast.SequenceNode); ok {
		var out []field
		for _, v := range seq.Values {
			for _, fl := range d.mergeSources(v, what) {
				if !slices.ContainsFunc(out, func(o field) bool { return o.key == fl.key }) {
					out = append(out, fl)
				}
			}
		}
		return out
	}
	fields, _ := d.mapping(n, what+": merge key <<")
	return fields
}

// known returns the fields named in names and reports every other one.
func (d *routesDecoder) known(fields []field, what string, names ...string) []field {
	var out []field
	for _, fl := range fields {
		if slices.Contains(names, fl.key) {
			out = append(out, fl)
			continue
		}
		msg := fmt.Sprintf("unknown field %q in %s", fl.key, what)
		if s := closest(fl.key, names); s != "" {
			msg += fmt.Sprintf("; did you mean %q?", s)
		} else {
			msg += fmt.Sprintf(" (known fields: %s)", strings.Join(names, ", "))
		}
		d.problemAt(fl.keyAt, "%s", msg)
	}
	return out
}

// closest returns the name within edit distance 2 of s, if any.
func closest(s string, names []string) string {
	best, bestD := "", 3
	for _, n := range names {
		if dist := editDistance(s, n); dist < bestD {
			best, bestD = n, dist
		}
	}
	return best
}

func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

func describeNode(n ast.Node) string {
	switch n.Type() {
	case ast.MappingType:
		return "a mapping"
	case ast.SequenceType:
		return "a list"
	case ast.NullType:
		return "nothing"
	case ast.StringType, ast.LiteralType:
		return fmt.Sprintf("the text %q", scalarText(n))
	default:
		return fmt.Sprintf("%s %s", strings.ToLower(n.Type().String()), n.String())
	}
}

func scalarText(n ast.Node) string {
	switch v := n.(type) {
	case *ast.StringNode:
		return v.Value
	case *ast.LiteralNode:
		return v.Value.Value
	}
	return n.String()
}

func (d *routesDecoder) str(fl field) (string, bool) {
	n := d.resolve(fl.value)
	switch n.(type) {
	case *ast.StringNode, *ast.LiteralNode:
		return scalarText(n), true
	case *ast.NullNode:
		return "", true
	}
	d.problemAt(n, "%s: want text, got %s (quote it if it is text)", fl.key, describeNode(n))
	return "", false
}

func (d *routesDecoder) sequence(fl field) ([]ast.Node, bool) {
	n := d.resolve(fl.value)
	switch v := n.(type) {
	case *ast.SequenceNode:
		return v.Values, true
	case *ast.NullNode:
		return nil, true
	}
	d.problemAt(n, "%s: want a list, got %s", fl.key, describeNode(n))
	return nil, false
}

// itemNode returns the i-th item of a list node, for problem lines.
func (d *routesDecoder) itemNode(list ast.Node, i int) ast.Node {
	if seq, ok := d.resolve(list).(*ast.SequenceNode); ok && i < len(seq.Values) {
		return seq.Values[i]
	}
	return list
}

func (d *routesDecoder) strings(fl field) ([]string, bool) {
	n := d.resolve(fl.value)
	if _, ok := n.(*ast.SequenceNode); !ok && !isNull(n) {
		d.problemAt(n, "%s: want a list, like [\"%s\"], got %s", fl.key, scalarText(n), describeNode(n))
		return nil, false
	}
	items, _ := d.sequence(fl)
	out := make([]string, 0, len(items))
	ok := true
	for _, it := range items {
		s, good := d.str(field{key: fl.key, value: it})
		if !good {
			ok = false
			continue
		}
		out = append(out, s)
	}
	return out, ok
}

func (d *routesDecoder) integer(fl field) (int, bool) {
	n := d.resolve(fl.value)
	if v, ok := n.(*ast.IntegerNode); ok {
		switch x := v.Value.(type) {
		case int64:
			return int(x), true
		case uint64:
			if x <= 1<<31 {
				return int(x), true
			}
		}
	}
	d.problemAt(n, "%s: want a whole number, got %s", fl.key, describeNode(n))
	return 0, false
}

func (d *routesDecoder) boolean(fl field) (bool, bool) {
	n := d.resolve(fl.value)
	if v, ok := n.(*ast.BoolNode); ok {
		return v.Value, true
	}
	d.problemAt(n, "%s: want true or false, got %s", fl.key, describeNode(n))
	return false, false
}

func (d *routesDecoder) duration(fl field) (time.Duration, bool) {
	n := d.resolve(fl.value)
	s, isText := n.(*ast.StringNode)
	if !isText {
		d.problemAt(n, "%s: want a duration like 30m, 2h or 1d, got %s", fl.key, describeNode(n))
		return 0, false
	}
	v, err := parseDuration(s.Value)
	if err != nil {
		d.problemAt(n, "%s: %q is not a duration (like 30m, 2h or 1d)", fl.key, s.Value)
		return 0, false
	}
	if v <= 0 {
		d.problemAt(n, "%s: must be more than zero, got %s", fl.key, s.Value)
		return 0, false
	}
	return v, true
}
