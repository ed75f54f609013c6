package mcptools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/slackapprove/slackbot/agentrunner"
)

// OfferedTool is an upstream server's tool as an MCP gateway offers it to
// MCP clients: the server's own definition (description, schemas,
// annotations) under the name the routes match, ToolName(server, tool).
type OfferedTool struct {
	// Tool is a copy of the server's definition with Name set to
	// ToolName(Server, Remote) and an object InputSchema. Do not modify it.
	Tool *mcp.Tool
	// Server is the server's configured name; Remote the tool's own name
	// on it.
	Server, Remote string
	// ReadOnly reports whether the tool matches the server's read_only
	// globs and so needs no approval.
	ReadOnly bool

	agent *agentrunner.Tool
}

// ValidateArgs checks args against the tool's input schema, as the agent
// runner does before a tool runs, and returns them as a JSON object; the
// error (an *agentrunner.ArgsError) lists every problem. Arguments that
// agentrunner.CheckArgs refuses (nested too deeply, a member named twice,
// text or numbers two parsers read differently) are refused, the place
// named.
func (o *OfferedTool) ValidateArgs(args json.RawMessage) (json.RawMessage, error) {
	if err := agentrunner.CheckArgs(args); err != nil {
		return nil, &agentrunner.ArgsError{Tool: o.Tool.Name, Problems: []string{err.Error()}}
	}
	return o.agent.ValidateArgs(args)
}

// offer builds the offered tools of a server from its list and the agent
// tools built from it: only tools that were built (their schema compiled,
// their name unique), so a gateway offers what the agent runner would.
func offer(cfg Config, list []*mcp.Tool, built []*agentrunner.Tool) []*OfferedTool {
	byName := make(map[string]*agentrunner.Tool, len(built))
	for _, t := range built {
		byName[t.Name()] = t
	}
	out := make([]*OfferedTool, 0, len(built))
	for _, mt := range list {
		name := ToolName(cfg.Name, mt.Name)
		agent, ok := byName[name]
		if !ok {
			continue
		}
		delete(byName, name) // a repeated name was left out of built too
		t := *mt
		t.Name = name
		t.InputSchema = agent.Schema()
		out = append(out, &OfferedTool{Tool: &t, Server: cfg.Name, Remote: mt.Name, ReadOnly: cfg.IsReadOnly(mt.Name), agent: agent})
	}
	return out
}

// offeredFingerprint identifies what MCP clients see of offered tools
// beyond what fingerprint covers: titles, annotations and output schemas.
func offeredFingerprint(offered []*OfferedTool) string {
	var b strings.Builder
	for _, o := range offered {
		ann, _ := json.Marshal(o.Tool.Annotations)
		out, _ := json.Marshal(o.Tool.OutputSchema)
		fmt.Fprintf(&b, "%s\x01%s\x01%s\x01%s\x02", o.Tool.Name, o.Tool.Title, ann, out)
	}
	return b.String()
}

// Offered returns the current tools of every server as an MCP gateway
// offers them, in the order of Tools. A server that is down keeps its last
// known tools; Reachable says whether it can be called now.
func (ts *Toolset) Offered() []*OfferedTool {
	var out []*OfferedTool
	for _, s := range ts.servers {
		s.mu.Lock()
		out = append(out, s.offered...)
		s.mu.Unlock()
	}
	return out
}

// Reachable pings the server named server and returns nil if it answered
// within a few seconds, else the *UnavailableError saying why not (or that
// no server has that name); a failed ping also asks for a health check, so
// the Toolset reconnects. A gateway asks before it asks people to approve
// a call that could not run.
func (ts *Toolset) Reachable(ctx context.Context, server string) error {
	s := ts.server(server)
	if s == nil {
		return &UnavailableError{Server: server, Transport: "none", Err: fmt.Errorf("no MCP server is named %q", server)}
	}
	c, err := s.current()
	if err != nil {
		return err
	}
	pctx, cancel := context.WithTimeout(ctx, reachableTimeout)
	defer cancel()
	err = c.ping(pctx)
	if errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil {
		err = &UnavailableError{Server: server, Transport: s.transport, Err: fmt.Errorf("no answer to a ping within %s", reachableTimeout)}
	}
	s.checkAfter(err)
	return err
}

// reachableTimeout bounds Reachable's ping.
const reachableTimeout = 5 * time.Second

// CallTool calls the offered tool named name (ToolName(server, tool))
// with args, and meta as the request's _meta (nil: none), and returns the server's result as it sent it, isError and
// all, bounded by the server's timeout. It fails with an *UnavailableError
// when the server cannot be reached, wrapping ErrTimeout when it did not
// answer in time, and with an error naming the tool when no server offers
// it.
func (ts *Toolset) CallTool(ctx context.Context, name string, args json.RawMessage, meta map[string]any) (*mcp.CallToolResult, error) {
	for _, s := range ts.servers {
		s.mu.Lock()
		remote := ""
		for _, o := range s.offered {
			if o.Tool.Name == name {
				remote = o.Remote
			}
		}
		s.mu.Unlock()
		if remote == "" {
			continue
		}
		c, err := s.current()
		if err != nil {
			s.observe(err)
			return nil, err
		}
		res, err := c.callResult(ctx, remote, args, meta)
		s.checkAfter(err)
		s.observe(err)
		return res, err
	}
	return nil, fmt.Errorf("no MCP server offers the tool %q", name)
}

func (ts *Toolset) server(name string) *server {
	for _, s := range ts.servers {
		if s.cfg.Name == name {
			return s
		}
	}
	return nil
}
