package mcptools_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/slackapprove/slackbot/agentrunner"
	"github.com/slackapprove/slackbot/agentrunner/mcptools"
)

// Arguments that repeat a member never reach an MCP server, whether a
// model calls a read-only tool (which runs with no approval) or a gateway
// checks a client's call (OfferedTool.ValidateArgs): the server would
// read the last value, a person the first.
func TestDuplicateNamesNeverReachTheServer(t *testing.T) {
	srv := newTicketServer()
	mcp.AddTool(srv.srv, &mcp.Tool{Name: "search_anything", Description: "Search with any filter."},
		func(_ context.Context, _ *mcp.CallToolRequest, a map[string]any) (*mcp.CallToolResult, any, error) {
			srv.record("search_anything", a)
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "nothing"}}}, nil, nil
		})
	ts := newToolset(t, []mcptools.Config{ticketsConfig}, byServer(map[string]*ticketServer{"tickets": srv}))
	tool := findTool(t, ts.Tools(), "tickets__search_anything")
	if tool.NeedsApproval() {
		t.Fatal("search_anything needs approval; want a tool that runs at once")
	}

	const dup = `{"filter":{"owner":"me","owner":"everyone"}}`
	model := agentrunner.FunctionModel(func(_ context.Context, msgs []agentrunner.Message, _ agentrunner.RequestParams) (agentrunner.Message, error) {
		if len(msgs) == 1 {
			return agentrunner.Message{Parts: []agentrunner.Part{agentrunner.ToolCall(tool.Name(), json.RawMessage(dup), "call")}}, nil
		}
		return agentrunner.Message{Parts: []agentrunner.Part{agentrunner.Text("done")}}, nil
	})
	r, err := agentrunner.NewRunner(model, []*agentrunner.Tool{tool})
	if err != nil {
		t.Fatalf("NewRunner: %v", err)
	}
	res, err := r.Run(t.Context(), agentrunner.RunInput{Prompt: "go"})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	var told string
	for _, m := range res.Messages {
		for _, p := range m.Parts {
			if p.PartKind == agentrunner.PartRetryPrompt && p.ToolCallID == "call" {
				told = p.Content
			}
		}
	}
	if !strings.Contains(told, `duplicate member "owner" at /filter`) {
		t.Errorf("retry prompt = %q; want the model told which member is repeated", told)
	}
	if calls := srv.Calls(); len(calls) != 0 {
		t.Errorf("server calls = %v, want none", calls)
	}

	var offered *mcptools.OfferedTool
	for _, o := range ts.Offered() {
		if o.Tool.Name == "tickets__close_ticket" {
			offered = o
		}
	}
	if _, err := offered.ValidateArgs(json.RawMessage(`{"id":1,"\u0069d":2}`)); err == nil || !strings.Contains(err.Error(), `duplicate member "id" at /`) {
		t.Errorf("ValidateArgs = %v; want refused naming the duplicate member", err)
	}
}
