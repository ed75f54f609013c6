package main

import (
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/slackapprove/slackbot/bot"
)

// TestMCPCallerCannotApproveThroughTheAPI is the attack as it was made on
// `slackbot serve`: an MCP client's call waits for approval; the client
// reads the resume token from the card's button value and posts an
// approval to /v1/approvals/{token}/results with its own key. slackbot
// answers 403 self_approval, the upstream tool does not run, and the call
// waits on until a person decides.
func TestMCPCallerCannotApproveThroughTheAPI(t *testing.T) {
	t.Parallel()
	upURL, closedIDs := ticketsServer(t, "")
	routes := `
routes:
  - name: tickets
    when: {tools: ["tickets__*"]}
    channel: C0APPROVALS
    approvers: {users: [U0ALICE]}
mcp_servers:
  - name: tickets
    url: ` + upURL + `/mcp
`
	base, fake, _ := serveWithRoutes(t, routes, map[string]string{"API_KEYS": "laptop=" + gatewayKey})
	cs := connectGateway(t, base)
	type result struct {
		res *mcp.CallToolResult
		err error
	}
	done := make(chan result, 1)
	go func() {
		res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "tickets__close_ticket", Arguments: map[string]any{"id": 7}})
		done <- result{res, err}
	}()
	e := &env{t: t, slack: fake}
	card := e.waitCards(1)[0]
	token, callID := cardCall(t, card)

	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, base+"/v1/approvals/"+token+"/results",
		strings.NewReader(`{"approvals":{"`+callID+`":true}}`))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+gatewayKey)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden || !strings.Contains(string(body), `"code":"self_approval"`) {
		t.Fatalf("the MCP client's key approves its own call through /v1: got %d %s, want 403 self_approval", resp.StatusCode, body)
	}
	select {
	case r := <-done:
		t.Fatalf("the MCP call returned with nobody deciding: %+v, %v", r.res, r.err)
	default:
	}
	if closed := closedIDs(); len(closed) != 0 {
		t.Fatalf("upstream closed %v with nobody deciding", closed)
	}
	postSigned(t, base+"/slack/interactivity", "application/x-www-form-urlencoded", e.clickPayload(alice, "T0FAKE", card, bot.ActionIDDeny))
	select {
	case r := <-done:
		if r.err != nil || !r.res.IsError {
			t.Errorf("after a person denied: %+v, %v; want a tool error", r.res, r.err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("no result 20s after the click")
	}
	if closed := closedIDs(); len(closed) != 0 {
		t.Errorf("upstream closed %v; want nothing run", closed)
	}
}
