package main

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/slackapprove/slackbot/bot"
	"github.com/slackapprove/slackbot/receipt"
)

const gatewayKey = "laptop-key-0123456789abcdef"

type bearerTransport struct{ key string }

func (b bearerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.key)
	return http.DefaultTransport.RoundTrip(r)
}

// connectGateway connects an MCP client, as Claude Code 2.1.0 with
// gatewayKey, to the /mcp of the slackbot at base; the session closes with
// the test.
func connectGateway(t *testing.T, base string) *mcp.ClientSession {
	t.Helper()
	client := mcp.NewClient(&mcp.Implementation{Name: "claude-code", Version: "2.1.0"}, nil)
	cs, err := client.Connect(t.Context(), &mcp.StreamableClientTransport{Endpoint: base + "/mcp", HTTPClient: &http.Client{Transport: bearerTransport{gatewayKey}}}, nil)
	if err != nil {
		t.Fatalf("connect to /mcp: %v", err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

// TestServeMCPGateway runs `slackbot serve` with API keys and an MCP
// server in the routing file: /mcp offers the server's tools and
// approval_prompt; a call waits for a signed click on its card in Slack,
// then runs on the upstream once. Without API keys /mcp is not served.
func TestServeMCPGateway(t *testing.T) {
	t.Parallel()
	upURL, closedIDs := ticketsServer(t, "")

	routes := `
routes:
  - name: tickets
    when: {tools: ["tickets__*", "Bash"]}
    channel: C0APPROVALS
    approvers: {users: [U0ALICE]}
mcp_servers:
  - name: tickets
    url: ` + upURL + `/mcp
`
	base, fake, _ := serveWithRoutes(t, routes, map[string]string{"API_KEYS": "laptop=" + gatewayKey})

	cs := connectGateway(t, base)
	list, err := cs.ListTools(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range list.Tools {
		names = append(names, tool.Name)
	}
	if strings.Join(names, ",") != "approval_prompt,tickets__close_ticket" {
		t.Errorf("tools %v; want approval_prompt and the upstream's", names)
	}

	e := &env{t: t, slack: fake}
	type result struct {
		res *mcp.CallToolResult
		err error
	}
	done := make(chan result, 1)
	go func() {
		res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "tickets__close_ticket", Arguments: map[string]any{"id": 7}})
		done <- result{res, err}
	}()
	card := e.waitCards(1)[0]
	if !strings.Contains(cardText(card), "laptop via claude-code 2.1.0") {
		t.Errorf("card %s; want the requester: the key's name via the MCP client", card.BlocksJSON)
	}
	postSigned(t, base+"/slack/interactivity", "application/x-www-form-urlencoded", e.clickPayload(alice, "T0FAKE", card, bot.ActionIDApprove))
	select {
	case r := <-done:
		if r.err != nil || r.res.IsError || len(r.res.Content) != 1 || r.res.Content[0].(*mcp.TextContent).Text != "closed" {
			t.Errorf("call: %+v, %v; want the upstream's result", r.res, r.err)
		}
		// The result carries the call's receipt, signed with the key
		// slackbot serves.
		token, callID := cardCall(t, card)
		jws, _ := r.res.Meta["slackbot_receipt"].(string)
		if _, err := jwks(t, base).Verify(jws, receipt.Expect{CallID: callID, Tool: "tickets__close_ticket", Args: json.RawMessage(`{"id":7}`), Token: token}); err != nil {
			t.Errorf("the result's receipt: %v (_meta %v)", err, r.res.Meta)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("no result 20s after the click")
	}
	if closed := closedIDs(); len(closed) != 1 || closed[0] != 7 {
		t.Errorf("upstream saw close_ticket %v; want once with id 7", closed)
	}

	go func() {
		in := json.RawMessage(`{"tool_name":"Bash","input":{"command":"rm -rf build/"},"tool_use_id":"toolu_e2e"}`)
		res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "approval_prompt", Arguments: in})
		done <- result{res, err}
	}()
	card = e.waitCards(2)[1]
	if text := cardText(card); !strings.Contains(text, "Claude Code wants to run a command") || !strings.Contains(text, `*Command*\n`+"```"+`\nrm -rf build/\n`+"```") {
		t.Errorf("prompt card %s; want it to lead with the command, as code", card.BlocksJSON)
	}
	postSigned(t, base+"/slack/interactivity", "application/x-www-form-urlencoded", e.clickPayload(alice, "T0FAKE", card, bot.ActionIDApprove))
	select {
	case r := <-done:
		want := `{"behavior":"allow","updatedInput":{"command":"rm -rf build/"}}`
		if r.err != nil || len(r.res.Content) != 1 || r.res.Content[0].(*mcp.TextContent).Text != want {
			t.Errorf("approval_prompt: %+v, %v; want %s", r.res, r.err, want)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("no approval_prompt result 20s after the click")
	}

	base, _, _ = serveWithRoutes(t, routes, nil)
	resp, err := http.Post(base+"/mcp", "application/json", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("/mcp without API_KEYS: %d; want 404", resp.StatusCode)
	}
}

// TestShutdownEndsMCPWaits: a replica shutting down does not wait for the
// calls waiting on /mcp (a decision may take hours): they are told at
// once to call again, and their requests stay pending for the retry.
func TestShutdownEndsMCPWaits(t *testing.T) {
	t.Parallel()
	base, fake, stop := serveWithRoutes(t, "routes:\n  - name: shell\n    when: {tools: [Bash]}\n    channel: C0APPROVALS\n    approvers: {users: [U0ALICE]}\n",
		map[string]string{"API_KEYS": "laptop=" + gatewayKey})
	cs := connectGateway(t, base)
	done := make(chan *mcp.CallToolResult, 1)
	go func() {
		in := json.RawMessage(`{"tool_name":"Bash","input":{"command":"make deploy"},"tool_use_id":"toolu_shutdown"}`)
		res, _ := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "approval_prompt", Arguments: in})
		done <- res
	}()
	(&env{t: t, slack: fake}).waitCards(1)
	start := time.Now()
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took > 10*time.Second {
		t.Errorf("shutdown took %s with a call waiting on /mcp; want it not to wait for the decision", took)
	}
	select {
	case res := <-done:
		if res == nil || !strings.Contains(res.Content[0].(*mcp.TextContent).Text, "call the tool again") {
			t.Errorf("the waiting call got %+v; want a deny asking to call again", res)
		}
	case <-time.After(10 * time.Second):
		t.Error("the waiting call got no answer at shutdown")
	}
}
