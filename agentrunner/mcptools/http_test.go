package mcptools_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/slackapprove/slackbot/agentrunner/mcptools"
)

// httpTicketServer serves the ticket server over streamable HTTP and
// refuses requests without the bearer token.
func httpTicketServer(t *testing.T, token string) (*ticketServer, *httptest.Server, *atomic.Int64) {
	t.Helper()
	srv := newTicketServer()
	mcpHandler := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv.srv }, nil)
	var refused atomic.Int64
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer "+token {
			refused.Add(1)
			http.Error(w, "missing or wrong bearer token", http.StatusUnauthorized)
			return
		}
		mcpHandler.ServeHTTP(w, r)
	}))
	t.Cleanup(func() {
		hs.CloseClientConnections() // event streams would keep Close waiting
		hs.Close()
	})
	return srv, hs, &refused
}

// Headers reference environment variables, expanded at connect time; the
// server checks them. A wrong token or a missing variable is an error
// naming the server, and the variable.
func TestStreamableHTTP(t *testing.T) {
	srv, hs, refused := httpTicketServer(t, "s3cret")
	cfg := mcptools.Config{
		Name:     "tickets",
		URL:      hs.URL + "/mcp",
		Headers:  map[string]string{"Authorization": "Bearer ${TICKETS_TOKEN}"},
		ReadOnly: []string{"search_tickets"},
	}

	t.Run("token from the environment", func(t *testing.T) {
		t.Setenv("TICKETS_TOKEN", "s3cret")
		ts := newToolset(t, []mcptools.Config{cfg}, mcptools.WithHealthCheck(0))
		search := findTool(t, ts.Tools(), "tickets__search_tickets")
		if search.NeedsApproval() {
			t.Errorf("search_tickets needs approval; it is read-only")
		}
		if !findTool(t, ts.Tools(), "tickets__close_ticket").NeedsApproval() {
			t.Errorf("close_ticket runs without approval")
		}
		if got, err := callTool(t, search, `{"query":"printer"}`); err != nil || got != "T-1: printer on fire" {
			t.Errorf("search_tickets = %v, %v", got, err)
		}
		if got := srv.Calls(); len(got) != 1 || got[0].Tool != "search_tickets" {
			t.Errorf("server calls = %v, want one search_tickets", got)
		}
		if n := refused.Load(); n != 0 {
			t.Errorf("server refused %d requests", n)
		}

		// The server's notification arrives over HTTP too.
		mcp.AddTool(srv.srv, &mcp.Tool{Name: "reopen_ticket", Description: "Reopen a ticket."},
			func(context.Context, *mcp.CallToolRequest, closeArgs) (*mcp.CallToolResult, any, error) {
				return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "reopened"}}}, nil, nil
			})
		waitForTools(t, ts, "reopen_ticket", func(names []string) bool { return slices.Contains(names, "tickets__reopen_ticket") })
	})

	t.Run("wrong token", func(t *testing.T) {
		t.Setenv("TICKETS_TOKEN", "guess")
		_, err := mcptools.Connect(t.Context(), cfg)
		if !errors.Is(err, mcptools.ErrUnavailable) {
			t.Fatalf("Connect = %v, want ErrUnavailable", err)
		}
		want := "MCP server tickets is unavailable (streamable HTTP " + hs.URL + "/mcp)"
		if !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "Unauthorized") {
			t.Errorf("Connect error %q does not say %q and Unauthorized", err, want)
		}
		if strings.Contains(err.Error(), "guess") {
			t.Errorf("Connect error %q shows the token", err)
		}
	})

	t.Run("missing variable", func(t *testing.T) {
		t.Setenv("TICKETS_TOKEN", "")
		before := refused.Load()
		_, err := mcptools.Connect(t.Context(), cfg)
		var missing *mcptools.MissingEnvError
		if !errors.As(err, &missing) || !errors.Is(err, mcptools.ErrMissingEnv) {
			t.Fatalf("Connect = %v, want a *MissingEnvError", err)
		}
		if want := "MCP server tickets: environment variable TICKETS_TOKEN is not set (used in headers.Authorization)"; err.Error() != want {
			t.Errorf("Connect error = %q, want %q", err, want)
		}
		if refused.Load() != before {
			t.Errorf("Connect sent a request without the token")
		}
	})
}

// A server that stops answering makes calls fail with an error naming it;
// Connect to a server that is not there fails the same way, at once.
func TestStreamableHTTPServerDown(t *testing.T) {
	_, hs, _ := httpTicketServer(t, "s3cret")
	t.Setenv("TICKETS_TOKEN", "s3cret")
	cfg := mcptools.Config{Name: "tickets", URL: hs.URL, Headers: map[string]string{"Authorization": "Bearer ${TICKETS_TOKEN}"}}
	ts := newToolset(t, []mcptools.Config{cfg}, mcptools.WithHealthCheck(0))
	search := findTool(t, ts.Tools(), "tickets__search_tickets")

	hs.CloseClientConnections()
	hs.Close()
	_, err := callTool(t, search, `{"query":"x"}`)
	if err == nil || !strings.Contains(err.Error(), "MCP server tickets is unavailable (streamable HTTP "+hs.URL+")") {
		t.Errorf("call with the server down = %v, want it named unavailable", err)
	}

	_, err = mcptools.Connect(t.Context(), cfg)
	if !errors.Is(err, mcptools.ErrUnavailable) || !strings.Contains(err.Error(), "connection refused") {
		t.Errorf("Connect to a closed server = %v, want unavailable: connection refused", err)
	}
}
