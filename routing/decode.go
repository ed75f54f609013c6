package routing

import (
	"errors"
	"fmt"
	"path"
	"strings"
	"time"

	"cel.dev/cel-go/cel"
	"github.com/goccy/go-yaml"
	"github.com/goccy/go-yaml/ast"
	"github.com/goccy/go-yaml/parser"
)

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
	body := d.document(data)
	if body == nil {
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
	if !d.routeList(rs, items) {
		return nil
	}
	return rs
}

// document parses data as YAML and returns the body of its one document,
// or nil, with the problem recorded, when it is not valid YAML, holds more
// than one document or is empty.
func (d *routesDecoder) document(data []byte) ast.Node {
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
	return body
}

// routeList decodes the items of the routes list into rs.Routes, reporting
// duplicate names and routes that a catch-all above them hides. It reports
// false only when the policy environment cannot be built.
func (d *routesDecoder) routeList(rs *Routes, items []ast.Node) bool {
	env, err := policyEnv()
	if err != nil {
		// The environment is fixed; only a cel-go defect could fail it.
		d.problemLine(0, "policy environment: %v", err)
		return false
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
	return true
}

// routeNodes are the nodes of a route that its checks report problems at.
type routeNodes struct {
	quorum                ast.Node // required_approvals, else the route
	approvers             ast.Node // the approvers key, when present
	autoApprove, autoDeny field
	// remindEvery, escalateAfter, grants and alwaysAllow are the values
	// of those fields, when present.
	remindEvery, escalateAfter, grants, alwaysAllow ast.Node
	// stepUp is step_up when it is a condition; stepUpMethods the value
	// of step_up_methods, when present.
	stepUp        field
	stepUpMethods ast.Node
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
	at := routeNodes{quorum: d.resolve(item)}
	for _, fl := range d.known(fields, what, "name", "when", "channel", "approvers",
		"required_approvals", "allow_self_approval", "timeout", "auto_approve", "auto_deny",
		"confirm", "remind_every", "escalate", "grants", "offer_always_allow", "step_up", "step_up_methods") {
		if !d.attentionField(r, fl, &at) && !d.stepUpField(r, fl, &at) {
			d.routeField(r, fl, &at)
		}
	}
	d.checkRoute(r, at)
	d.checkAttention(r, at)
	d.checkStepUp(r, at)
	if at.autoApprove.value != nil && r.AutoApprove != "" {
		r.autoApprove = d.compile(env, at.autoApprove, r.AutoApprove)
	}
	if at.autoDeny.value != nil && r.AutoDeny != "" {
		r.autoDeny = d.compile(env, at.autoDeny, r.AutoDeny)
	}
	return r
}

// routeField decodes one known field of a route into r, noting in at the
// nodes that checkRoute and compile report at.
func (d *routesDecoder) routeField(r *Route, fl field, at *routeNodes) {
	switch fl.key {
	case "name":
		if s, ok := d.str(fl); ok {
			switch {
			case !routeNamePattern.MatchString(s):
				d.problemAt(fl.value, "name %q: use letters, digits, '-', '_' or '.'", s)
			case s == NoRouteName:
				d.problemAt(fl.value, "name %q is reserved: answered_by says policy:%s when no route matches", s, NoRouteName)
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
		at.approvers = fl.keyAt
		d.approvers(r, fl)
	case "required_approvals":
		at.quorum = fl.value
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
		at.autoApprove = fl
		r.AutoApprove, _ = d.str(fl)
	case "auto_deny":
		at.autoDeny = fl
		r.AutoDeny, _ = d.str(fl)
	}
}

// checkRoute reports what a decoded route lacks: a channel, approvers, a
// quorum its approvers can reach.
func (d *routesDecoder) checkRoute(r *Route, at routeNodes) {
	if r.Channel == "" {
		d.problemLine(r.Line, "route %q has no channel: say where its approval requests are posted (channel: C0123ABCD)", r.Name)
	}
	if len(r.Users) == 0 && len(r.Usergroups) == 0 {
		line := r.Line
		if at.approvers != nil {
			line = lineOf(at.approvers)
		}
		d.problemLine(line, "route %q has no approvers: list approvers.users or approvers.usergroups", r.Name)
	}
	switch {
	case r.RequiredApprovals < 1:
		d.problemAt(at.quorum, "required_approvals must be at least 1, got %d", r.RequiredApprovals)
	case len(r.Usergroups) == 0 && len(r.Users) > 0 && r.RequiredApprovals > len(r.Users):
		d.problemAt(at.quorum, "required_approvals is %d but route %q lists only %d approver(s)", r.RequiredApprovals, r.Name, len(r.Users))
	}
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
	r.Users, r.Usergroups = d.approverIDs(fl, "approvers")
}

// approverIDs decodes an approvers mapping (users, usergroups), each id
// checked for its Slack shape and listed once.
func (d *routesDecoder) approverIDs(fl field, what string) (users, usergroups []string) {
	fields, ok := d.mapping(fl.value, what)
	if !ok {
		return nil, nil
	}
	for _, a := range d.known(fields, what, "users", "usergroups") {
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
			users = kept
		} else {
			usergroups = kept
		}
	}
	return users, usergroups
}
