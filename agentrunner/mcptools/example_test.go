package mcptools_test

import (
	"context"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/slackapprove/slackbot/agentrunner"
	"github.com/slackapprove/slackbot/agentrunner/mcptools"
)

// A Toolset offers the tools of MCP servers to a runner. Here the server
// runs in the same process; in slackbot each server has a command (stdio)
// or a url (streamable HTTP) instead of WithTransport.
func ExampleToolset() {
	ctx := context.Background()
	server := mcp.NewServer(&mcp.Implementation{Name: "tickets", Version: "1"}, nil)
	type ticket struct {
		ID int `json:"id"`
	}
	mcp.AddTool(server, &mcp.Tool{Name: "get_ticket", Description: "Show a ticket."},
		func(_ context.Context, _ *mcp.CallToolRequest, a ticket) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprintf("T-%d: printer on fire", a.ID)}}}, nil, nil
		})
	mcp.AddTool(server, &mcp.Tool{Name: "close_ticket", Description: "Close a ticket."},
		func(_ context.Context, _ *mcp.CallToolRequest, a ticket) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprintf("closed T-%d", a.ID)}}}, nil, nil
		})
	inProcess := mcptools.WithTransport(func(ctx context.Context, _ mcptools.Config) (mcp.Transport, error) {
		client, srv := mcp.NewInMemoryTransports()
		if _, err := server.Connect(ctx, srv, nil); err != nil {
			return nil, err
		}
		return client, nil
	})

	ts, err := mcptools.NewToolset(ctx, []mcptools.Config{{Name: "tickets", ReadOnly: []string{"get_*"}}}, inProcess)
	if err != nil {
		panic(err)
	}
	defer ts.Close()
	for _, t := range ts.Tools() {
		fmt.Println(t.Name(), "needs approval:", t.NeedsApproval())
	}

	r, err := agentrunner.NewRunner(agentrunner.TestModel{}, ts.Tools())
	if err != nil {
		panic(err)
	}
	res, err := r.Run(ctx, agentrunner.RunInput{Prompt: "Close ticket 0.", AllowPending: true})
	if err != nil {
		panic(err)
	}
	for _, p := range r.PendingCalls(*res.Pending) {
		fmt.Println(p.Kind, p.Message)
	}
	// Output:
	// tickets__close_ticket needs approval: true
	// tickets__get_ticket needs approval: false
	// approval Run tickets.close_ticket({"id":0})?
}
