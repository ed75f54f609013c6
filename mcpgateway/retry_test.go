package mcpgateway_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/slackapprove/slackbot/approval"
)

// rpcRequest is a POST of one JSON-RPC message with key, as a client of
// the 2025-06-18 protocol sends it.
func rpcRequest(ctx context.Context, t *testing.T, url, key, body string) *http.Request {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", "2025-06-18")
	req.Header.Set("User-Agent", "claude-code/2.1.3 (cli)")
	return req
}

// postRPC sends one JSON-RPC message as a client of the 2025-06-18
// protocol would (no session: the gateway is stateless), and returns the
// response's result from the event stream.
func postRPC(ctx context.Context, t *testing.T, url, body string) (json.RawMessage, error) {
	resp, err := http.DefaultClient.Do(rpcRequest(ctx, t, url, billingKey, body))
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("status %d: %s", resp.StatusCode, b)
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok {
			continue
		}
		var msg struct {
			ID     json.RawMessage `json:"id"`
			Result json.RawMessage `json:"result"`
		}
		if json.Unmarshal([]byte(data), &msg) == nil && len(msg.ID) > 0 {
			return msg.Result, nil
		}
	}
	return nil, sc.Err()
}

// rpcAnswer is what postRPC returned.
type rpcAnswer struct {
	res json.RawMessage
	err error
}

// postRPCAsync sends body with postRPC in the background and returns
// where its answer arrives.
func postRPCAsync(t *testing.T, url, body string) <-chan rpcAnswer {
	ch := make(chan rpcAnswer, 1)
	go func() {
		res, err := postRPC(t.Context(), t, url, body)
		ch <- rpcAnswer{res, err}
	}()
	return ch
}

// TestRestartWithoutAnIdempotencyKey: a call with no idempotency key
// whose replica shuts down while it waits cannot be reached by a retry
// (the JSON-RPC id is no key: another connection of the same API key may
// use it), so its request is withdrawn, the card saying so, and the
// client is told to call again; the same message resent to another
// replica is a new request with a card of its own. An older protocol's
// client is shown by its User-Agent.
func TestRestartWithoutAnIdempotencyKey(t *testing.T) {
	first := newEnv(t, envOptions{})
	second := newEnv(t, envOptions{shared: first})
	const msg = `{"jsonrpc":"2.0","id":42,"method":"tools/call","params":{"name":"tickets__create_issue","arguments":{"title":"retry me"}}}`

	ch := postRPCAsync(t, first.srv.URL+"/mcp", msg)
	token, _, card := first.waitCard(1)
	if blocks, _ := json.Marshal(card.Blocks); !strings.Contains(string(blocks), "billing via claude-code/2.1.3") {
		t.Errorf("card %s; want the requester shown by its User-Agent", blocks)
	}
	first.gw.Close()
	if r := <-ch; r.err != nil || !strings.Contains(string(r.res), "call the tool again") {
		t.Fatalf("at shutdown: %s, %v; want a tool error asking to call again", r.res, r.err)
	}
	if r, err := second.svc.Get(t.Context(), token); err != nil || r.State != approval.StateFailed {
		t.Errorf("request after the shutdown: %v, %v; want withdrawn (failed)", r.State, err)
	}
	first.waitCardSays(1, "Failed")

	ch = postRPCAsync(t, second.srv.URL+"/mcp", msg)
	token, callID, _ := second.waitCard(2)
	second.decide(token, callID, approval.Decision{Action: approval.ActionApprove})
	var r rpcAnswer
	select {
	case r = <-ch:
	case <-time.After(20 * time.Second):
		t.Fatal("no answer to the retry")
	}
	var res mcp.CallToolResult
	if r.err != nil || json.Unmarshal(r.res, &res) != nil || res.IsError || text(&res) != "created #1: retry me" {
		t.Errorf("retry: %s, %v; want the upstream's result", r.res, r.err)
	}
}

// TestToolListFollowsTheUpstream: a tool the upstream adds is offered
// once the upstream announces it.
func TestToolListFollowsTheUpstream(t *testing.T) {
	e := newEnv(t, envOptions{})
	cs := e.client(billingKey, nil)
	mcp.AddTool(e.tickets.srv, &mcp.Tool{Name: "reopen", Description: "Reopen a ticket."},
		func(context.Context, *mcp.CallToolRequest, searchArgs) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{}, nil, nil
		})
	deadline := time.Now().Add(10 * time.Second)
	for {
		res, err := cs.ListTools(t.Context(), nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, tool := range res.Tools {
			if tool.Name == "tickets__reopen" {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatal("tickets__reopen not offered 10s after the upstream added it")
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestProgressOfAnOlderProtocolClient: a 2025-06-18 client, with no
// session, gets progress notifications on the call's own event stream.
func TestProgressOfAnOlderProtocolClient(t *testing.T) {
	e := newEnv(t, envOptions{progressEvery: 20 * time.Millisecond})
	const msg = `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"_meta":{"progressToken":"tok-7"},"name":"tickets__create_issue","arguments":{"title":"p"}}}`
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, e.srv.URL+"/mcp", strings.NewReader(msg))
	req.Header.Set("Authorization", "Bearer "+billingKey)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", "2025-06-18")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	lines := make(chan string)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			if data, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
				lines <- data
			}
		}
	}()
	var progressed bool
	for data := range lines {
		switch {
		case strings.Contains(data, `"notifications/progress"`) && strings.Contains(data, `"tok-7"`):
			if !progressed {
				progressed = true
				token, callID, _ := e.waitCard(1)
				e.decide(token, callID, approval.Decision{Action: approval.ActionApprove})
			}
		case strings.Contains(data, `"id":7`):
			if !progressed || !strings.Contains(data, "created #1: p") {
				t.Errorf("result %s after progress %v; want the upstream's, after progress", data, progressed)
			}
			return
		}
	}
	t.Error("the stream ended with no result")
}
