package mcpgateway_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/slackapprove/slackbot/agentrunner"
	"github.com/slackapprove/slackbot/approval"
)

// notify posts one JSON-RPC notification with key (rpcRequest) and
// returns the status; the gateway has acted on it when the
// answer arrives.
func notify(t *testing.T, url, key, body string) int {
	t.Helper()
	resp, err := http.DefaultClient.Do(rpcRequest(t.Context(), t, url, key, body))
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

func cancelled(requestID string) string {
	return `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":` + requestID + `,"reason":"the user pressed Esc"}}`
}

// waitCancelled waits until token's request is cancelled by billing and
// its card (card n, from 1) says so.
func (e *env) waitCancelled(token string, n int) {
	e.t.Helper()
	r, err := e.svc.Get(e.t.Context(), token)
	for deadline := time.Now().Add(10 * time.Second); err == nil && r.State != approval.StateCancelled && time.Now().Before(deadline); {
		time.Sleep(20 * time.Millisecond)
		r, err = e.svc.Get(e.t.Context(), token)
	}
	if err != nil || r.State != approval.StateCancelled || r.EndedBy != billing {
		e.t.Fatalf("request after the cancel: %v by %q, %v; want cancelled by the client, %q", r.State, r.EndedBy, err, billing)
	}
	e.waitCardSays(n, "Cancelled")
}

// waitCardSays waits until card n (from 1) says word.
func (e *env) waitCardSays(n int, word string) {
	e.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(e.cards()[n-1].Text, word) {
		if time.Now().After(deadline) {
			e.t.Fatalf("card %d %q; want it to say %s", n, e.cards()[n-1].Text, word)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// cancelledRunsNothing checks that the cancelled call answering on ch
// returned a tool error saying no decision arrived, that an Approve on
// by's side is then refused, and that e's upstream ran nothing.
func (e *env) cancelledRunsNothing(ch <-chan rpcAnswer, by *env, token, callID string) {
	e.t.Helper()
	select {
	case r := <-ch:
		var res mcp.CallToolResult
		if r.err != nil || json.Unmarshal(r.res, &res) != nil || !res.IsError || !strings.HasPrefix(text(&res), agentrunner.NoDecisionPrefix) {
			e.t.Errorf("the cancelled call's answer: %s, %v; want a tool error, no decision", r.res, r.err)
		}
	case <-time.After(20 * time.Second):
		e.t.Fatal("the cancelled call did not return")
	}
	by.approveLate(token, callID)
	if n := len(e.tickets.callsOf("create_issue")); n != 0 {
		e.t.Errorf("upstream ran %d cancelled calls", n)
	}
}

// approveLate clicks Approve on a card whose request ended, as alice: the
// click must be refused.
func (e *env) approveLate(token, callID string) {
	e.t.Helper()
	r, err := e.svc.Get(e.t.Context(), token)
	if err != nil {
		e.t.Fatal(err)
	}
	d := approval.Decision{CallID: callID, By: alice, Action: approval.ActionApprove}
	if _, err := e.svc.Decide(e.t.Context(), token, approval.Decider{User: alice, Message: r.Call(callID).Message}, d); err == nil {
		e.t.Errorf("Approve after the cancel was accepted; want it refused")
	}
}

// TestCancelOnAnotherReplica: a tools/call waits on one replica; the
// client's notifications/cancelled for its JSON-RPC id reaches another
// replica (a separate POST, as the TypeScript SDK sends it). The request
// is cancelled, the card says so, the waiting call returns, and a later
// Approve runs nothing. A cancel for an unknown id, or from another API
// key, changes nothing.
func TestCancelOnAnotherReplica(t *testing.T) {
	for _, id := range []string{`9`, `"call-9"`} {
		t.Run(id, func(t *testing.T) {
			a := newEnv(t, envOptions{})
			b := newEnv(t, envOptions{shared: a})
			msg := `{"jsonrpc":"2.0","id":` + id + `,"method":"tools/call","params":{"name":"tickets__create_issue","arguments":{"title":"cancel me"}}}`
			ch := postRPCAsync(t, a.srv.URL+"/mcp", msg)
			token, callID, _ := a.waitCard(1)

			// Ignored: an id nobody waits on, an id of another type, the
			// same id from another key, an id past the cap.
			for _, n := range []struct{ key, body string }{
				{billingKey, cancelled(`10`)},
				{billingKey, cancelled(`"9"`)},
				{opsKey, cancelled(id)},
				{billingKey, cancelled(`"` + strings.Repeat("x", 300) + `"`)},
			} {
				if status := notify(t, b.srv.URL+"/mcp", n.key, n.body); status != http.StatusAccepted {
					t.Errorf("%s: status %d; want 202", n.body, status)
				}
				if r, err := b.svc.Get(t.Context(), token); err != nil || r.State != approval.StatePending {
					t.Fatalf("after %s: %v, %v; want still pending", n.body, r.State, err)
				}
			}

			if status := notify(t, b.srv.URL+"/mcp", billingKey, cancelled(id)); status != http.StatusAccepted {
				t.Errorf("cancel: status %d; want 202", status)
			}
			a.waitCancelled(token, 1)
			a.cancelledRunsNothing(ch, b, token, callID)
		})
	}
}

// TestSameRequestIDTwoClients: two clients of one API key make the same
// call with the same JSON-RPC id at once (each connection numbers its
// requests from the same start): each gets a card of its own, and each
// approval runs its own call.
func TestSameRequestIDTwoClients(t *testing.T) {
	a := newEnv(t, envOptions{})
	b := newEnv(t, envOptions{shared: a})
	const msg = `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"tickets__create_issue","arguments":{"title":"twice"}}}`
	results := []<-chan rpcAnswer{postRPCAsync(t, a.srv.URL+"/mcp", msg), postRPCAsync(t, b.srv.URL+"/mcp", msg)}
	for n := 1; n <= 2; n++ {
		token, callID, _ := a.waitCard(n)
		a.decide(token, callID, approval.Decision{Action: approval.ActionApprove})
	}
	var texts []string
	for _, ch := range results {
		select {
		case r := <-ch:
			var res mcp.CallToolResult
			if r.err != nil || json.Unmarshal(r.res, &res) != nil || res.IsError {
				t.Errorf("result %s, %v; want the upstream's", r.res, r.err)
			}
			texts = append(texts, text(&res))
		case <-time.After(20 * time.Second):
			t.Fatal("no result in 20s")
		}
	}
	if got := sortedCopy(texts); len(got) != 2 || got[0] != "created #1: twice" || got[1] != "created #2: twice" {
		t.Errorf("results %q; want each call run once", texts)
	}
	if n := len(a.cards()); n != 2 {
		t.Errorf("%d cards; want 2", n)
	}
}

// splitProxy is a load balancer on a loopback port in front of two
// replicas: tools/call to the first, every other POST (initialize, the
// initialized notification, notifications/cancelled…) to the second, so
// that a client's cancel never reaches the replica its call waits on.
type splitProxy struct {
	*httptest.Server
	mu sync.Mutex
	// cancels counts the notifications/cancelled sent to the second.
	cancels int
}

func newSplitProxy(t *testing.T, first, second string) *splitProxy {
	t.Helper()
	proxyTo := func(raw string) *httputil.ReverseProxy {
		u, err := url.Parse(raw)
		if err != nil {
			t.Fatal(err)
		}
		return &httputil.ReverseProxy{Rewrite: func(pr *httputil.ProxyRequest) { pr.SetURL(u) }, FlushInterval: -1}
	}
	calls, others := proxyTo(first), proxyTo(second)
	p := &splitProxy{}
	p.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		var msg struct {
			Method string `json:"method"`
		}
		_ = json.Unmarshal(body, &msg)
		switch msg.Method {
		case "tools/call":
			calls.ServeHTTP(w, r)
			return
		case "notifications/cancelled":
			p.mu.Lock()
			p.cancels++
			p.mu.Unlock()
		}
		others.ServeHTTP(w, r)
	}))
	t.Cleanup(func() { p.CloseClientConnections(); p.Close() })
	return p
}

// TestTSClientAbortOnTwoReplicas: the TypeScript SDK's client aborts a
// waiting call with its AbortSignal and stays connected; its
// notifications/cancelled reaches the other replica. The card says
// cancelled, a later Approve runs nothing, and the same client's next
// call works.
func TestTSClientAbortOnTwoReplicas(t *testing.T) {
	a := newEnv(t, envOptions{})
	b := newEnv(t, envOptions{shared: a})
	lb := newSplitProxy(t, a.srv.URL, b.srv.URL)
	d := startTSDriver(t, lb.URL+"/mcp", billingKey)

	id := d.call("tickets__create_issue", map[string]any{"title": "aborted"})
	token, callID, _ := a.waitCard(1)
	d.abort(id)
	a.waitCancelled(token, 1)
	lb.mu.Lock()
	if lb.cancels != 1 {
		t.Errorf("%d notifications/cancelled reached the other replica; want 1", lb.cancels)
	}
	lb.mu.Unlock()
	a.approveLate(token, callID)

	// Still connected: the next call of the same client is asked and runs.
	id = d.call("tickets__create_issue", map[string]any{"title": "next"})
	token, callID, _ = a.waitCard(2)
	a.decide(token, callID, approval.Decision{Action: approval.ActionApprove})
	if res, _ := d.result(id); res.IsError || res.text() != "created #1: next" {
		t.Errorf("next call = %q (isError %v); want the upstream's", res.text(), res.IsError)
	}
	for _, c := range a.tickets.callsOf("create_issue") {
		if strings.Contains(string(c), "aborted") {
			t.Errorf("upstream ran the aborted call %s", c)
		}
	}
}
