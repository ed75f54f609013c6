package mcptools_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/slackapprove/slackbot/agentrunner"
	"github.com/slackapprove/slackbot/agentrunner/mcptools"
)

// ticketServer is an MCP server written with the same SDK, with a
// read-only tool (search_tickets), one that needs approval (close_ticket)
// and one that always fails (lock_ticket). It records every call.
type ticketServer struct {
	srv *mcp.Server

	mu       sync.Mutex
	calls    []call
	metas    []mcp.Meta // of close_ticket's calls
	sessions []*mcp.ServerSession
	down     bool
}

type call struct {
	Tool string
	Args any
}

type searchArgs struct {
	Query string `json:"query" jsonschema:"words to look for"`
}

type closeArgs struct {
	ID     int    `json:"id" jsonschema:"the ticket number"`
	Reason string `json:"reason,omitempty"`
}

func newTicketServer() *ticketServer {
	ts := &ticketServer{srv: mcp.NewServer(&mcp.Implementation{Name: "tickets", Version: "1"}, nil)}
	mcp.AddTool(ts.srv, &mcp.Tool{Name: "search_tickets", Description: "Search tickets."},
		func(_ context.Context, _ *mcp.CallToolRequest, a searchArgs) (*mcp.CallToolResult, any, error) {
			ts.record("search_tickets", a)
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "T-1: printer on fire"}}}, nil, nil
		})
	mcp.AddTool(ts.srv, &mcp.Tool{Name: "close_ticket", Description: "Close a ticket."},
		func(_ context.Context, req *mcp.CallToolRequest, a closeArgs) (*mcp.CallToolResult, any, error) {
			ts.record("close_ticket", a)
			ts.recordMeta(req.Params.Meta)
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprintf("closed T-%d", a.ID)}}}, nil, nil
		})
	mcp.AddTool(ts.srv, &mcp.Tool{Name: "lock_ticket", Description: "Lock a ticket."},
		func(_ context.Context, _ *mcp.CallToolRequest, a closeArgs) (*mcp.CallToolResult, any, error) {
			ts.record("lock_ticket", a)
			return nil, nil, fmt.Errorf("ticket T-%d is locked by someone else", a.ID)
		})
	return ts
}

func (ts *ticketServer) record(tool string, args any) {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	ts.calls = append(ts.calls, call{Tool: tool, Args: args})
}

// recordMeta keeps the _meta of a close_ticket call.
func (ts *ticketServer) recordMeta(m mcp.Meta) {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	ts.metas = append(ts.metas, m)
}

func (ts *ticketServer) Metas() []mcp.Meta {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	return slices.Clone(ts.metas)
}

func (ts *ticketServer) Calls() []call {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	return slices.Clone(ts.calls)
}

var errServerDown = errors.New("connection refused (test server is down)")

// transport connects a client to the server in memory; while the server is
// down (stop), connection attempts fail.
func (ts *ticketServer) transport(ctx context.Context, _ mcptools.Config) (mcp.Transport, error) {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	if ts.down {
		return nil, errServerDown
	}
	ct, st := mcp.NewInMemoryTransports()
	ss, err := ts.srv.Connect(ctx, st, nil)
	if err != nil {
		return nil, err
	}
	ts.sessions = append(ts.sessions, ss)
	return ct, nil
}

// stop closes every session and refuses new ones, as a crashed server.
func (ts *ticketServer) stop() {
	ts.mu.Lock()
	sessions := ts.sessions
	ts.sessions, ts.down = nil, true
	ts.mu.Unlock()
	for _, ss := range sessions {
		_ = ss.Close()
	}
}

func (ts *ticketServer) start() {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	ts.down = false
}

// byServer routes each server of a Toolset to its in-memory test server;
// a server not listed is reached by its command or URL.
func byServer(servers map[string]*ticketServer) mcptools.Option {
	return mcptools.WithTransport(func(ctx context.Context, cfg mcptools.Config) (mcp.Transport, error) {
		if s, ok := servers[cfg.Name]; ok {
			return s.transport(ctx, cfg)
		}
		return nil, nil
	})
}

func newToolset(t *testing.T, cfgs []mcptools.Config, opts ...mcptools.Option) *mcptools.Toolset {
	t.Helper()
	ts, err := mcptools.NewToolset(t.Context(), cfgs, opts...)
	if err != nil {
		t.Fatalf("NewToolset: %v", err)
	}
	t.Cleanup(func() {
		// Closing a session to a server that is gone fails; tests that
		// care about a clean shutdown call Close themselves.
		if err := ts.Close(); err != nil {
			t.Logf("Toolset.Close: %v", err)
		}
	})
	return ts
}

// waitForTools waits until the Toolset's tools satisfy cond, woken by
// Changed. The deadline only keeps a broken test from hanging; nothing
// here measures how fast the change arrives.
func waitForTools(t *testing.T, ts *mcptools.Toolset, what string, cond func(names []string) bool) {
	t.Helper()
	deadline := time.NewTimer(20 * time.Second)
	defer deadline.Stop()
	for {
		changed := ts.Changed()
		names := toolNames(ts.Tools())
		if cond(names) {
			return
		}
		select {
		case <-changed:
		case <-deadline.C:
			t.Fatalf("waiting for %s: tools are %v", what, names)
		}
	}
}

func toolNames(tools []*agentrunner.Tool) []string {
	names := make([]string, len(tools))
	for i, tl := range tools {
		names[i] = tl.Name()
	}
	return names
}

func findTool(t *testing.T, tools []*agentrunner.Tool, name string) *agentrunner.Tool {
	t.Helper()
	for _, tl := range tools {
		if tl.Name() == name {
			return tl
		}
	}
	t.Fatalf("no tool %s in %v", name, toolNames(tools))
	return nil
}
