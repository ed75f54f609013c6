package mcptools_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/slackapprove/slackbot/agentrunner"
	"github.com/slackapprove/slackbot/agentrunner/mcptools"
)

// TestOffered: a Toolset offers its tools as an MCP gateway shows them
// (the server's definitions under "<server>__<tool>", read-only by the
// operator's globs), checks arguments against their schemas, calls them
// with the server's result as it came, and says when a server is out of
// reach.
func TestOffered(t *testing.T) {
	srv := newTicketServer()
	ts := newToolset(t, []mcptools.Config{{Name: "tickets", ReadOnly: []string{"search_*"}}}, byServer(map[string]*ticketServer{"tickets": srv}))

	byName := map[string]*mcptools.OfferedTool{}
	for _, o := range ts.Offered() {
		byName[o.Tool.Name] = o
	}
	search, closeT := byName["tickets__search_tickets"], byName["tickets__close_ticket"]
	if search == nil || closeT == nil || len(byName) != 3 {
		t.Fatalf("offered %v; want the three tools as tickets__<tool>", byName)
	}
	if !search.ReadOnly || closeT.ReadOnly || closeT.Remote != "close_ticket" || closeT.Server != "tickets" || closeT.Tool.Description != "Close a ticket." {
		t.Errorf("close_ticket offered as %+v, search read-only %v", closeT, search.ReadOnly)
	}
	schema, _ := json.Marshal(closeT.Tool.InputSchema)
	if !strings.Contains(string(schema), `"id"`) {
		t.Errorf("schema %s; want the server's", schema)
	}

	if _, err := closeT.ValidateArgs(json.RawMessage(`{"id":"seven"}`)); err == nil || !strings.Contains(err.Error(), "/id") {
		t.Errorf("ValidateArgs of a string id: %v; want an error at /id", err)
	}
	deep := strings.Repeat("[", agentrunner.MaxArgsDepth+1) + strings.Repeat("]", agentrunner.MaxArgsDepth+1)
	if _, err := closeT.ValidateArgs(json.RawMessage(`{"id":1,"x":` + deep + `}`)); err == nil {
		t.Error("ValidateArgs accepted arguments nested too deep")
	}

	res, err := ts.CallTool(t.Context(), "tickets__close_ticket", json.RawMessage(`{"id":7}`), nil)
	if err != nil || res.IsError || res.Content[0].(*mcp.TextContent).Text != "closed T-7" {
		t.Errorf("CallTool: %+v, %v; want the server's result", res, err)
	}
	res, err = ts.CallTool(t.Context(), "tickets__lock_ticket", json.RawMessage(`{"id":7}`), nil)
	if err != nil || !res.IsError {
		t.Errorf("CallTool of a failing tool: %+v, %v; want its isError result as it came", res, err)
	}
	if _, err := ts.CallTool(t.Context(), "tickets__nope", json.RawMessage(`{}`), nil); err == nil {
		t.Error("CallTool of an unknown tool: no error")
	}

	if err := ts.Reachable(t.Context(), "tickets"); err != nil {
		t.Errorf("Reachable: %v", err)
	}
	if err := ts.Reachable(t.Context(), "nope"); !errors.Is(err, mcptools.ErrUnavailable) {
		t.Errorf("Reachable of an unknown server: %v; want ErrUnavailable", err)
	}
	srv.stop()
	if err := ts.Reachable(t.Context(), "tickets"); !errors.Is(err, mcptools.ErrUnavailable) {
		t.Errorf("Reachable of a stopped server: %v; want ErrUnavailable", err)
	}
	if _, err := ts.CallTool(t.Context(), "tickets__close_ticket", json.RawMessage(`{"id":7}`), nil); !errors.Is(err, mcptools.ErrUnavailable) {
		t.Errorf("CallTool of a stopped server: %v; want ErrUnavailable", err)
	}
	if n := len(ts.Offered()); n != 3 {
		t.Errorf("%d tools offered while the server is down; want its last known 3", n)
	}
}
