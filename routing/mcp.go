package routing

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/goccy/go-yaml/ast"

	"github.com/slackapprove/slackbot/agentrunner/mcptools"
)

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
//	    limits: {response: 4MiB, tools: 1000, description: 8KiB, schema: 64KiB}
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
	// Limits bound what the server may send; zero fields take mcptools'
	// defaults.
	Limits mcptools.Limits
	// Line is the entry's line in its file (0 when not from a file).
	Line int
}

// Config returns the server's configuration for mcptools.NewToolset.
func (s MCPServer) Config() mcptools.Config {
	return mcptools.Config{
		Name: s.Name, Command: s.Command, Env: s.Env, URL: s.URL,
		Headers: s.Headers, ReadOnly: s.ReadOnly, Timeout: s.Timeout, Limits: s.Limits,
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
//	    limits:                       # what the server may send (see mcpLimits)
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
	for _, fl := range d.known(fields, what, "name", "command", "env", "url", "headers", "read_only", "timeout", "limits") {
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
		case "limits":
			s.Limits, good = d.mcpLimits(fl, at, failed)
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

// mcpLimits decodes an entry's limits on what its server may send, each
// optional (mcptools.Limits says what each bounds, and the defaults):
//
//	limits:
//	  response: 4MiB      # one message from the server, in bytes
//	  tools: 1000         # tools it may list
//	  description: 8KiB   # a tool's description; a longer one is cut
//	  schema: 64KiB       # a tool's input schema, and its output schema
//
// Sizes are whole numbers of bytes or take B, KiB or MiB. Each value's
// node is recorded in at as "limits.<name>", or the name in failed when
// it is wrong. It reports false when fl is not a mapping at all.
func (d *routesDecoder) mcpLimits(fl field, at map[string]ast.Node, failed map[string]bool) (mcptools.Limits, bool) {
	var l mcptools.Limits
	if isNull(d.resolve(fl.value)) {
		return l, true
	}
	fields, ok := d.mapping(fl.value, fl.key)
	if !ok {
		return l, false
	}
	for _, kv := range d.known(fields, fl.key, "response", "tools", "description", "schema") {
		name := fl.key + "." + kv.key
		at[name] = kv.value
		sub := field{key: name, value: kv.value}
		var n int64
		good := false
		if kv.key == "tools" {
			var v int
			if v, good = d.integer(sub); good && v <= 0 {
				d.problemAt(d.resolve(kv.value), "%s: must be more than zero, got %d", name, v)
				good = false
			}
			n = int64(v)
		} else {
			n, good = d.byteSize(sub)
		}
		failed[name] = !good
		switch kv.key {
		case "response":
			l.Response = n
		case "tools":
			l.Tools = int(n)
		case "description":
			l.Description = int(min(n, math.MaxInt32))
		case "schema":
			l.Schema = int(min(n, math.MaxInt32))
		}
	}
	return l, true
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

// MCPTool reports whether name is the model's name of a tool of one of
// the file's MCP servers ("<server>__<tool>"), and which.
func (rs *Routes) MCPTool(name string) (server, tool string, ok bool) {
	if rs == nil {
		return "", "", false
	}
	for _, m := range rs.MCPServers {
		if t, found := strings.CutPrefix(name, m.Name+"__"); found && t != "" {
			return m.Name, t, true
		}
	}
	return "", "", false
}
