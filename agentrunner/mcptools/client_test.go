package mcptools_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/slackapprove/slackbot/agentrunner"
	"github.com/slackapprove/slackbot/agentrunner/mcptools"
)

var ticketsConfig = mcptools.Config{Name: "tickets", ReadOnly: []string{"search_*"}}

// Tools are listed with the server's schemas, named <server>__<tool>;
// only the read-only ones run without approval, and the confirmation
// names the server's own tool.
func TestClientTools(t *testing.T) {
	srv := newTicketServer()
	c, err := mcptools.Connect(t.Context(), ticketsConfig, mcptools.WithTransport(srv.transport))
	if err != nil {
		t.Fatalf("Connect: %v", err)
	}
	t.Cleanup(func() { _ = c.Close() })

	tools, err := c.Tools(t.Context())
	if err != nil {
		t.Fatalf("Tools: %v", err)
	}
	type view struct {
		Name, Description string
		Properties        []string
		Approval          bool
		ReadOnly          bool
	}
	var got []view
	for _, tl := range tools {
		var schema struct {
			Type       string                     `json:"type"`
			Properties map[string]json.RawMessage `json:"properties"`
		}
		if err := json.Unmarshal(tl.Schema(), &schema); err != nil {
			t.Fatalf("%s: schema %s: %v", tl.Name(), tl.Schema(), err)
		}
		if schema.Type != "object" {
			t.Errorf("%s: schema type = %q, want object", tl.Name(), schema.Type)
		}
		props := make([]string, 0, len(schema.Properties))
		for p := range schema.Properties {
			props = append(props, p)
		}
		slices.Sort(props)
		got = append(got, view{tl.Name(), tl.Description(), props, tl.NeedsApproval(), tl.IsReadOnly()})
	}
	want := []view{
		{"tickets__close_ticket", "Close a ticket.", []string{"id", "reason"}, true, false},
		{"tickets__lock_ticket", "Lock a ticket.", []string{"id", "reason"}, true, false},
		{"tickets__search_tickets", "Search tickets.", []string{"query"}, false, true},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("tools mismatch (-want +got):\n%s", diff)
	}

	closeTool := findTool(t, tools, "tickets__close_ticket")
	confirm := closeTool.Confirm(agentrunner.ToolCallPart{ToolName: "tickets__close_ticket", Args: json.RawMessage(`{"id": 7}`), ToolCallID: "c1"})
	if want := `Run tickets.close_ticket({"id":7})?`; confirm != want {
		t.Errorf("Confirm = %q, want %q", confirm, want)
	}
	if _, err := closeTool.ValidateArgs(json.RawMessage(`{"id":"seven"}`)); err == nil {
		t.Errorf("ValidateArgs accepted a string id; the server's schema says integer")
	}
}

// Through a Runner: the read-only tool runs at once, the other waits for
// approval and reaches the server, with the model's arguments, only once
// approved. A tool that fails on the server is a failed outcome.
func TestRunnerApprovesMCPTool(t *testing.T) {
	srv := newTicketServer()
	ts := newToolset(t, []mcptools.Config{ticketsConfig}, byServer(map[string]*ticketServer{"tickets": srv}))

	model := agentrunner.FunctionModel(func(_ context.Context, msgs []agentrunner.Message, _ agentrunner.RequestParams) (agentrunner.Message, error) {
		if len(msgs) == 1 {
			return agentrunner.Message{Parts: []agentrunner.Part{
				agentrunner.ToolCall("tickets__search_tickets", json.RawMessage(`{"query":"printer"}`), "s1"),
				agentrunner.ToolCall("tickets__close_ticket", json.RawMessage(`{"id":42,"reason":"duplicate"}`), "c1"),
				agentrunner.ToolCall("tickets__lock_ticket", json.RawMessage(`{"id":43}`), "l1"),
			}}, nil
		}
		return agentrunner.Message{Parts: []agentrunner.Part{agentrunner.Text("done")}}, nil
	})
	r, err := agentrunner.NewRunner(model, ts.Tools())
	if err != nil {
		t.Fatalf("NewRunner: %v", err)
	}
	res, err := r.Run(t.Context(), agentrunner.RunInput{Prompt: "close the printer ticket", AllowPending: true})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if res.Status != agentrunner.StatusPending {
		t.Fatalf("status = %s, want pending", res.Status)
	}
	if got, want := res.Pending.IDs(), []string{"c1", "l1"}; !slices.Equal(got, want) {
		t.Errorf("pending = %v, want %v", got, want)
	}
	if got, want := srv.Calls(), []call{{"search_tickets", searchArgs{Query: "printer"}}}; !cmp.Equal(got, want) {
		t.Errorf("server calls before approval = %v, want %v", got, want)
	}
	pending := r.PendingCalls(*res.Pending)
	if got, want := pending[0].Message, `Run tickets.close_ticket({"id":42,"reason":"duplicate"})?`; got != want {
		t.Errorf("confirmation = %q, want %q", got, want)
	}

	answer := agentrunner.NewDeferredToolResults()
	answer.Approvals["c1"] = agentrunner.Approve()
	answer.Approvals["l1"] = agentrunner.Approve()
	// The answer's receipt goes to the server, which runs the tool.
	answer.Metadata["c1"] = map[string]any{"slackbot_receipt": "receipt-of-c1", "note": "not forwarded"}
	res, err = r.Run(t.Context(), agentrunner.RunInput{History: res.Messages, Pending: res.Pending, Results: answer})
	if err != nil {
		t.Fatalf("resume: %v", err)
	}
	if res.Status != agentrunner.StatusComplete {
		t.Fatalf("status = %s, want complete", res.Status)
	}
	wantCalls := []call{
		{"search_tickets", searchArgs{Query: "printer"}},
		{"close_ticket", closeArgs{ID: 42, Reason: "duplicate"}},
		{"lock_ticket", closeArgs{ID: 43}},
	}
	if diff := cmp.Diff(wantCalls, srv.Calls()); diff != "" {
		t.Errorf("server calls after approval (-want +got):\n%s", diff)
	}
	if metas := srv.Metas(); len(metas) != 1 || metas[0]["slackbot_receipt"] != "receipt-of-c1" || metas[0]["note"] != nil {
		t.Errorf("close_ticket's _meta = %v; want the receipt and none of the answer's other metadata", metas)
	}
	returns := toolReturns(res.Messages)
	if got, want := returns["s1"], (ret{`"T-1: printer on fire"`, agentrunner.OutcomeSuccess}); got != want {
		t.Errorf("search_tickets return = %v, want %v", got, want)
	}
	if got, want := returns["c1"], (ret{`"closed T-42"`, agentrunner.OutcomeSuccess}); got != want {
		t.Errorf("close_ticket return = %v, want %v", got, want)
	}
	if got := returns["l1"]; got.Outcome != agentrunner.OutcomeFailed || !strings.Contains(got.Value, "tickets.lock_ticket: ticket T-43 is locked by someone else") {
		t.Errorf("lock_ticket return = %v, want a failed outcome with the server's message", got)
	}
}

type ret struct {
	Value   string
	Outcome agentrunner.Outcome
}

func toolReturns(msgs []agentrunner.Message) map[string]ret {
	out := map[string]ret{}
	for _, m := range msgs {
		for _, p := range m.Parts {
			if p.PartKind == agentrunner.PartToolReturn {
				out[p.ToolCallID] = ret{string(p.Return), p.Outcome}
			}
		}
	}
	return out
}

// A tool the server adds or removes at runtime appears in, or leaves,
// Tools after Changed fires; the new tool works through the same Toolset.
func TestToolsetPicksUpToolListChanges(t *testing.T) {
	srv := newTicketServer()
	ts := newToolset(t, []mcptools.Config{ticketsConfig}, byServer(map[string]*ticketServer{"tickets": srv}),
		mcptools.WithHealthCheck(0)) // only the server's notification can tell
	changed := ts.Changed()

	mcp.AddTool(srv.srv, &mcp.Tool{Name: "reopen_ticket", Description: "Reopen a ticket."},
		func(_ context.Context, _ *mcp.CallToolRequest, a closeArgs) (*mcp.CallToolResult, any, error) {
			srv.record("reopen_ticket", a)
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "reopened"}}}, nil, nil
		})
	waitForTools(t, ts, "reopen_ticket", func(names []string) bool { return slices.Contains(names, "tickets__reopen_ticket") })
	select {
	case <-changed:
	default:
		t.Errorf("the channel Changed returned before the change is still open")
	}
	reopen := findTool(t, ts.Tools(), "tickets__reopen_ticket")
	if !reopen.NeedsApproval() {
		t.Errorf("a tool added at runtime runs without approval; it is not in read_only")
	}
	if got, err := callTool(t, reopen, `{"id":5}`); err != nil || got != "reopened" {
		t.Errorf("reopen_ticket = %v, %v; want reopened", got, err)
	}

	srv.srv.RemoveTools("lock_ticket")
	waitForTools(t, ts, "lock_ticket to go", func(names []string) bool { return !slices.Contains(names, "tickets__lock_ticket") })
}

// callTool runs a tool the way a Runner does once it may run.
func callTool(t *testing.T, tl *agentrunner.Tool, args string) (any, error) {
	t.Helper()
	model := agentrunner.FunctionModel(func(_ context.Context, msgs []agentrunner.Message, _ agentrunner.RequestParams) (agentrunner.Message, error) {
		if len(msgs) == 1 {
			return agentrunner.Message{Parts: []agentrunner.Part{agentrunner.ToolCall(tl.Name(), json.RawMessage(args), "call")}}, nil
		}
		return agentrunner.Message{Parts: []agentrunner.Part{agentrunner.Text("done")}}, nil
	})
	approveAll := agentrunner.HandlerFunc(func(_ context.Context, _ *agentrunner.RunContext, req agentrunner.DeferredToolRequests) (*agentrunner.DeferredToolResults, error) {
		res := agentrunner.NewDeferredToolResults()
		for _, c := range req.Approvals {
			res.Approvals[c.ToolCallID] = agentrunner.Approve()
		}
		return res, nil
	})
	r, err := agentrunner.NewRunner(model, []*agentrunner.Tool{tl}, agentrunner.WithHandlers(approveAll))
	if err != nil {
		t.Fatalf("NewRunner: %v", err)
	}
	res, err := r.Run(t.Context(), agentrunner.RunInput{Prompt: "go"})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	got := toolReturns(res.Messages)["call"]
	var s string
	if err := json.Unmarshal([]byte(got.Value), &s); err != nil {
		return got.Value, nil
	}
	if got.Outcome != agentrunner.OutcomeSuccess {
		return nil, errors.New(s)
	}
	return s, nil
}

// A server that is down at start-up does not stop the Toolset or the other
// servers; one that goes away makes its tools fail with a clear error the
// model sees; when it comes back the Toolset reconnects and sees its new
// tools.
func TestToolsetServerDown(t *testing.T) {
	tickets, wiki := newTicketServer(), newTicketServer()
	wiki.stop()
	ts := newToolset(t, []mcptools.Config{ticketsConfig, {Name: "wiki"}},
		byServer(map[string]*ticketServer{"tickets": tickets, "wiki": wiki}),
		mcptools.WithBackoff(time.Millisecond, 10*time.Millisecond))

	status := ts.Status()
	if !status[0].Connected || status[0].Tools != 3 {
		t.Errorf("tickets status = %+v, want connected with 3 tools", status[0])
	}
	if status[1].Connected || !errors.Is(status[1].Err, mcptools.ErrUnavailable) || !strings.Contains(status[1].Err.Error(), "MCP server wiki is unavailable") {
		t.Errorf("wiki status = %+v, want not connected with an error naming it", status[1])
	}
	search := findTool(t, ts.Tools(), "tickets__search_tickets")
	if got, err := callTool(t, search, `{"query":"x"}`); err != nil || got != "T-1: printer on fire" {
		t.Errorf("search_tickets with wiki down = %v, %v", got, err)
	}

	tickets.stop()
	got, err := callTool(t, search, `{"query":"x"}`)
	if err == nil || !strings.Contains(err.Error(), "MCP server tickets is unavailable") {
		t.Errorf("search_tickets with tickets down = %v, %v; want the model told the server is unavailable", got, err)
	}

	mcp.AddTool(tickets.srv, &mcp.Tool{Name: "reopen_ticket", Description: "Reopen a ticket."},
		func(context.Context, *mcp.CallToolRequest, closeArgs) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "reopened"}}}, nil, nil
		})
	tickets.start()
	wiki.start()
	waitForTools(t, ts, "both servers back", func(names []string) bool {
		return slices.Contains(names, "tickets__reopen_ticket") && slices.Contains(names, "wiki__search_tickets")
	})
	// The tool built before the outage reaches the new session.
	if got, err := callTool(t, search, `{"query":"x"}`); err != nil || got != "T-1: printer on fire" {
		t.Errorf("search_tickets after reconnecting = %v, %v", got, err)
	}
}

// A tool of a closed Toolset fails with ErrClosed rather than hanging or
// panicking.
func TestToolsetClosed(t *testing.T) {
	srv := newTicketServer()
	ts, err := mcptools.NewToolset(t.Context(), []mcptools.Config{ticketsConfig}, byServer(map[string]*ticketServer{"tickets": srv}))
	if err != nil {
		t.Fatalf("NewToolset: %v", err)
	}
	search := findTool(t, ts.Tools(), "tickets__search_tickets")
	if err := ts.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	_, err = callTool(t, search, `{"query":"x"}`)
	if err == nil || !strings.Contains(err.Error(), mcptools.ErrClosed.Error()) {
		t.Errorf("call after Close: %v, want %v", err, mcptools.ErrClosed)
	}
}

// NewToolset refuses bad configurations, all at once, before starting
// anything.
func TestNewToolsetRefusesConfig(t *testing.T) {
	srv := newTicketServer()
	var attempts int
	count := mcptools.WithTransport(func(ctx context.Context, cfg mcptools.Config) (mcp.Transport, error) {
		attempts++
		return srv.transport(ctx, cfg)
	})
	lookup := mcptools.WithLookupEnv(func(string) (string, bool) { return "", false })
	_, err := mcptools.NewToolset(t.Context(), []mcptools.Config{
		{Name: "tickets"},
		{Name: "tickets"},
		{Name: "bad name"},
		{Name: "api", URL: "https://api.example.com/mcp", Headers: map[string]string{"Authorization": "Bearer ${API_TOKEN}"}},
	}, count, lookup)
	if err == nil {
		t.Fatal("NewToolset accepted a bad configuration")
	}
	for _, want := range []string{`"tickets" is used twice`, `"bad name"`, "MCP server api: environment variable API_TOKEN is not set (used in headers.Authorization)"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
	if !errors.Is(err, mcptools.ErrMissingEnv) || !errors.Is(err, mcptools.ErrInvalidConfig) {
		t.Errorf("error %v wraps neither ErrMissingEnv nor ErrInvalidConfig", err)
	}
	if attempts != 0 {
		t.Errorf("%d connection attempts, want none", attempts)
	}
}

// A call the server does not answer within the server's timeout fails,
// saying it may still take effect; the session goes on.
func TestCallTimeout(t *testing.T) {
	srv := newTicketServer()
	mcp.AddTool(srv.srv, &mcp.Tool{Name: "hang", Description: "Never answers."},
		func(ctx context.Context, _ *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
			<-ctx.Done() // cancelled by the client giving up
			return nil, nil, ctx.Err()
		})
	cfg := ticketsConfig
	cfg.Timeout = time.Millisecond
	cfg.ReadOnly = []string{"*"}
	c, err := mcptools.Connect(t.Context(), cfg, mcptools.WithTransport(srv.transport))
	if err != nil {
		t.Fatalf("Connect: %v", err)
	}
	t.Cleanup(func() { _ = c.Close() })
	tools, err := c.Tools(t.Context())
	if err != nil {
		t.Fatalf("Tools: %v", err)
	}

	_, err = callTool(t, findTool(t, tools, "tickets__hang"), `{}`)
	if want := "MCP server tickets: hang: no answer in time after 1ms; the call may still take effect"; err == nil || err.Error() != "Tool failed: "+want {
		t.Errorf("hang = %v, want %q", err, want)
	}
	// Listing is not bounded by the call timeout: the session is alive.
	if _, err := c.Tools(t.Context()); err != nil {
		t.Errorf("Tools after a timeout: %v", err)
	}
}
