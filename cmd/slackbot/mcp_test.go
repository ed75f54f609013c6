package main

import (
	"context"
	"encoding/json"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/slackapprove/slackbot/bot"
	"github.com/slackapprove/slackbot/internal/slackfake"
	"github.com/slackapprove/slackbot/internal/slackfaketest"
	"github.com/slackapprove/slackbot/store/redistest"
)

type closeTicketArgs struct {
	ID int `json:"id"`
}

// ticketsServer serves an MCP server (the Go SDK over streamable HTTP)
// whose close_ticket tool records the ids it closed, behind a check of
// the Authorization header when token is set. It returns the server's
// base URL and the ids closed so far.
func ticketsServer(t *testing.T, token string) (string, func() []int) {
	t.Helper()
	var mu sync.Mutex
	var closed []int
	srv := mcp.NewServer(&mcp.Implementation{Name: "tickets", Version: "1"}, nil)
	mcp.AddTool(srv, &mcp.Tool{Name: "close_ticket", Description: "Close a ticket."},
		func(_ context.Context, _ *mcp.CallToolRequest, a closeTicketArgs) (*mcp.CallToolResult, any, error) {
			mu.Lock()
			closed = append(closed, a.ID)
			mu.Unlock()
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "closed"}}}, nil, nil
		})
	handler := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil)
	mcpSrv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if token != "" && r.Header.Get("Authorization") != "Bearer "+token {
			http.Error(w, "no", http.StatusUnauthorized)
			return
		}
		handler.ServeHTTP(w, r)
	}))
	t.Cleanup(func() { mcpSrv.CloseClientConnections(); mcpSrv.Close() })
	return mcpSrv.URL, func() []int {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(closed)
	}
}

// serveWithRoutes starts `slackbot serve` against a fake Slack workspace
// and a Redis of its own, with routes as its ROUTES_FILE and extra added
// to its environment. It returns the base URL, the workspace and stop
// (startRunStop's).
func serveWithRoutes(t *testing.T, routes string, extra map[string]string) (string, *slackfake.Server, func() error) {
	t.Helper()
	fake, fakeSrv := slackfaketest.NewTestServer(t, slackfake.WithDemoWorkspace())
	rs := redistest.StartServer(t)
	file := filepath.Join(t.TempDir(), "routes.yaml")
	if err := os.WriteFile(file, []byte(routes), 0o600); err != nil {
		t.Fatal(err)
	}
	vars := map[string]string{
		"SLACK_BOT_TOKEN": fake.Token(), "SLACK_SIGNING_SECRET": testSecret, "SLACK_API_URL": slackfaketest.APIURL(fakeSrv),
		"REDIS_URL": rs.URL(), "ROUTES_FILE": file, "ADDR": "127.0.0.1:0", "MODEL": "test", "TOOLS": "",
	}
	maps.Copy(vars, extra)
	base, _, stop := startRunStop(t, vars, "serve")
	return base, fake, stop
}

// TestServeWithMCPServer runs `slackbot serve` with an MCP server (the Go
// SDK over streamable HTTP, with a bearer token from the environment) in
// the routing file: its tool is offered to the model, needs approval, and
// runs on the MCP server once approved in Slack.
func TestServeWithMCPServer(t *testing.T) {
	t.Parallel()
	mcpURL, closedIDs := ticketsServer(t, "tk-123")

	base, fake, _ := serveWithRoutes(t, `
routes:
  - name: tickets
    when: {tools: ["tickets__*"]}
    channel: C0APPROVALS
    approvers: {users: [U0ALICE]}
mcp_servers:
  - name: tickets
    url: `+mcpURL+`/mcp
    headers: {Authorization: "Bearer ${TICKETS_TOKEN}"}
`, map[string]string{"TICKETS_TOKEN": "tk-123"})

	full := "<@" + fake.BotUserID() + "> close the ticket"
	msg, err := fake.PostAsUser(general, carol, full, "")
	if err != nil {
		t.Fatal(err)
	}
	event, _ := json.Marshal(map[string]any{
		"type": "event_callback", "team_id": "T0FAKE", "event_id": "EvMCP", "event_time": time.Now().Unix(),
		"event": map[string]any{"type": "app_mention", "user": carol, "text": full, "ts": msg.TS, "channel": general},
	})
	postSigned(t, base+"/slack/events", "application/json", event)
	e := &env{t: t, slack: fake}
	card := e.waitCards(1)[0]
	if !strings.Contains(cardText(card), "tickets") || !strings.Contains(cardText(card), "close_ticket") {
		t.Errorf("card does not name the MCP tool: %s", card.BlocksJSON)
	}
	if n := len(closedIDs()); n != 0 {
		t.Fatal("the MCP tool ran before approval")
	}
	// The server's series exist before its first call (issue 31's
	// metrics contract), and it answered its connection.
	upstream := func(want map[string]float64) {
		t.Helper()
		fams := scrape(t, base)
		for key, v := range want {
			name, result, _ := strings.Cut(key, " ")
			labels := map[string]string{"server": "tickets"}
			if result != "" {
				labels["result"] = result
			}
			if m := series(fams[name], labels); m == nil || value(m) != v {
				t.Errorf("%s%v: got %v, want %v", name, labels, m, v)
			}
		}
	}
	upstream(map[string]float64{"slackbot_mcp_upstream_up": 1, "slackbot_mcp_upstream_calls_total ok": 0, "slackbot_mcp_upstream_calls_total error": 0})
	postSigned(t, base+"/slack/interactivity", "application/x-www-form-urlencoded", e.clickPayload(alice, "T0FAKE", card, bot.ActionIDApprove))
	if got, want := e.waitReply(general, msg.TS), `{"tickets__close_ticket":"closed"}`; got != want {
		t.Errorf("answer: got %q, want %q", got, want)
	}
	if closed := closedIDs(); len(closed) != 1 || closed[0] != 0 {
		t.Errorf("MCP server saw close_ticket %v, want once with id 0", closed)
	}
	upstream(map[string]float64{"slackbot_mcp_upstream_up": 1, "slackbot_mcp_upstream_calls_total ok": 1, "slackbot_mcp_upstream_calls_total error": 0})
}
