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

// A model's call of an MCP tool with arguments nested deeper than
// agentrunner.MaxArgsDepth never reaches the server, even when the tool's
// schema accepts any object: the model is told why.
func TestDeepArgsNeverReachTheServer(t *testing.T) {
	srv, _, tool := searchAnything(t)
	deep := `{"filter":` + strings.Repeat("[", agentrunner.MaxArgsDepth) + strings.Repeat("]", agentrunner.MaxArgsDepth) + `}`
	told := retryPrompt(t, tool, deep)
	if !strings.Contains(told, "nested deeper than 64 levels") {
		t.Errorf("retry prompt = %q, want the model told the arguments are nested too deeply", told)
	}
	if calls := srv.Calls(); len(calls) != 0 {
		t.Errorf("server calls = %v, want none", calls)
	}

	// At the limit the call goes through.
	ok := `{"filter":` + strings.Repeat("[", agentrunner.MaxArgsDepth-1) + strings.Repeat("]", agentrunner.MaxArgsDepth-1) + `}`
	if got, err := callTool(t, tool, ok); err != nil || got != "nothing" {
		t.Errorf("call at the limit = %v, %v; want nothing", got, err)
	}
}

// retryPrompt has a model call tool once with args and returns what the
// runner told it in a retry prompt ("" for none).
func retryPrompt(t *testing.T, tool *agentrunner.Tool, args string) string {
	t.Helper()
	model := agentrunner.FunctionModel(func(_ context.Context, msgs []agentrunner.Message, _ agentrunner.RequestParams) (agentrunner.Message, error) {
		if len(msgs) == 1 {
			return agentrunner.Message{Parts: []agentrunner.Part{agentrunner.ToolCall(tool.Name(), json.RawMessage(args), "call")}}, nil
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
	return told
}

// searchAnything is the tickets server with one more tool,
// search_anything, whose schema accepts any object and which the
// operator's read_only globs let run with no approval; and its toolset.
func searchAnything(t *testing.T) (*ticketServer, *mcptools.Toolset, *agentrunner.Tool) {
	t.Helper()
	srv := newTicketServer()
	mcp.AddTool(srv.srv, &mcp.Tool{Name: "search_anything", Description: "Search with any filter."},
		func(_ context.Context, _ *mcp.CallToolRequest, a map[string]any) (*mcp.CallToolResult, any, error) {
			srv.record("search_anything", a)
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "nothing"}}}, nil, nil
		})
	ts := newToolset(t, []mcptools.Config{ticketsConfig}, byServer(map[string]*ticketServer{"tickets": srv}))
	return srv, ts, findTool(t, ts.Tools(), "tickets__search_anything")
}
