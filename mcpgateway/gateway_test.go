package mcpgateway_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/slackapprove/slackbot/agentrunner"
	"github.com/slackapprove/slackbot/approval"
	"github.com/slackapprove/slackbot/mcpgateway"
	"github.com/slackapprove/slackbot/receipt"
)

func TestListTools(t *testing.T) {
	e := newEnv(t, envOptions{})
	cs := e.client(billingKey, nil)
	res, err := cs.ListTools(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]*mcp.Tool{}
	var names []string
	for _, tool := range res.Tools {
		byName[tool.Name] = tool
		names = append(names, tool.Name)
	}
	want := []string{"approval_prompt", "files__write", "flaky__do", "tickets__create_issue", "tickets__search", "tickets__slow_close"}
	if diff := cmp.Diff(want, sortedCopy(names)); diff != "" {
		t.Fatalf("tools (-want +got):\n%s", diff)
	}
	search := byName["tickets__search"]
	if search.Annotations == nil || !search.Annotations.ReadOnlyHint || search.Annotations.Title != "Search" || search.Description != "Search tickets." {
		t.Errorf("tickets__search = %+v, annotations %+v; want the upstream's description and annotations", search, search.Annotations)
	}
	create := byName["tickets__create_issue"]
	schema, _ := json.Marshal(create.InputSchema)
	if !strings.Contains(string(schema), `"title"`) || !strings.Contains(string(schema), `"required":["title"]`) {
		t.Errorf("tickets__create_issue schema = %s; want the upstream's, title required", schema)
	}
	if create.Annotations == nil || create.Annotations.DestructiveHint == nil || !*create.Annotations.DestructiveHint {
		t.Errorf("tickets__create_issue annotations = %+v; want destructiveHint", create.Annotations)
	}
}

func sortedCopy(s []string) []string {
	out := append([]string(nil), s...)
	for i := range out {
		for j := i + 1; j < len(out); j++ {
			if out[j] < out[i] {
				out[i], out[j] = out[j], out[i]
			}
		}
	}
	return out
}

func TestReadOnlyToolIsProxiedAtOnce(t *testing.T) {
	e := newEnv(t, envOptions{})
	cs := e.client(billingKey, nil)
	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "tickets__search", Arguments: map[string]any{"query": "printer"}})
	if err != nil {
		t.Fatal(err)
	}
	if res.IsError || text(res) != "found: printer" {
		t.Errorf("result = %q (isError %v); want the upstream's", text(res), res.IsError)
	}
	if n := len(e.cards()); n != 0 {
		t.Errorf("%d cards posted for a read-only tool; want none", n)
	}
	if n := len(e.tickets.callsOf("search")); n != 1 {
		t.Errorf("upstream got %d search calls; want 1", n)
	}
	if m := e.tickets.metasOf("search"); len(m) != 1 || m[0][mcpgateway.ReceiptMetaKey] != nil {
		t.Errorf("a read-only call's _meta %v; want no receipt (nobody approved it)", m)
	}
}

func TestApprovedCallRunsOnceWithEditedArguments(t *testing.T) {
	e := newEnv(t, envOptions{progressEvery: 20 * time.Millisecond})
	var progress atomic.Int32
	cs := e.client(billingKey, &mcp.ClientOptions{ProgressNotificationHandler: func(_ context.Context, r *mcp.ProgressNotificationClientRequest) {
		if r.Params.ProgressToken == "p1" && strings.Contains(r.Params.Message, "Waiting for a person") {
			progress.Add(1)
		}
	}})
	p := &mcp.CallToolParams{Name: "tickets__create_issue", Arguments: map[string]any{"title": "printer on fire"}}
	p.SetProgressToken("p1")
	ch := call(t.Context(), cs, p)
	token, callID, card := e.waitCard(1)
	if !strings.Contains(card.Text, "Run tickets.create_") {
		t.Errorf("card text %q; want the tool", card.Text)
	}
	cardJSON, _ := json.Marshal(card.Blocks)
	if !strings.Contains(string(cardJSON), "billing via test-agent 1.2.3") {
		t.Errorf("card %s; want the requester: the key's name via the MCP client", cardJSON)
	}
	deadline := time.Now().Add(5 * time.Second)
	for progress.Load() == 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if progress.Load() == 0 {
		t.Error("no progress notification while waiting")
	}
	if n := len(e.tickets.callsOf("create_issue")); n != 0 {
		t.Fatalf("upstream called %d times before the decision", n)
	}
	e.decide(token, callID, approval.Decision{Action: approval.ActionApprove, OverrideArgs: json.RawMessage(`{"title":"printer smoking"}`)})
	res := wait(t, ch)
	if res.IsError || text(res) != "created #1: printer smoking" {
		t.Errorf("result = %q (isError %v); want the upstream's, with the edited title", text(res), res.IsError)
	}
	if res.Meta["upstream"] != "kept" {
		t.Errorf("result _meta = %v; want the upstream's kept", res.Meta)
	}
	calls := e.tickets.callsOf("create_issue")
	if len(calls) != 1 || !jsonEqual(calls[0], `{"title":"printer smoking"}`) {
		t.Errorf("upstream calls = %s; want exactly one, with the edited arguments", calls)
	}
	// The upstream, which runs the tool, and the client each get the
	// receipt, for the edited arguments.
	metas := e.tickets.metasOf("create_issue")
	if len(metas) != 1 {
		t.Fatalf("upstream _meta of %d calls", len(metas))
	}
	jws, _ := metas[0][mcpgateway.ReceiptMetaKey].(string)
	if _, err := e.receipts.Verify(jws, receipt.Expect{CallID: callID, Tool: "tickets__create_issue", Args: json.RawMessage(`{"title":"printer smoking"}`), Token: token}); err != nil {
		t.Errorf("the receipt the upstream got: %v (_meta %v)", err, metas[0])
	}
	if res.Meta[mcpgateway.ReceiptMetaKey] != jws {
		t.Errorf("result _meta = %v; want the same receipt as the upstream got", res.Meta)
	}
	r, err := e.svc.Get(t.Context(), token)
	if err != nil {
		t.Fatal(err)
	}
	if o := r.Call(callID).Outcome; o == nil || o.Status != "ran" {
		t.Errorf("outcome = %+v; want ran", o)
	}
}

// TestWaitOutlivesTheServersWriteTimeout: a call waits for people longer
// than the HTTP server's WriteTimeout allows a response to take.
func TestWaitOutlivesTheServersWriteTimeout(t *testing.T) {
	e := newEnv(t, envOptions{writeTimeout: 300 * time.Millisecond})
	cs := e.client(billingKey, nil)
	ch := call(t.Context(), cs, &mcp.CallToolParams{Name: "tickets__create_issue", Arguments: map[string]any{"title": "slow"}})
	token, callID, _ := e.waitCard(1)
	time.Sleep(600 * time.Millisecond)
	e.decide(token, callID, approval.Decision{Action: approval.ActionApprove})
	if res := wait(t, ch); res.IsError || text(res) != "created #1: slow" {
		t.Errorf("result = %q (isError %v); want the upstream's", text(res), res.IsError)
	}
}

func TestApprovedCallOfAStdioServer(t *testing.T) {
	e := newEnv(t, envOptions{})
	cs := e.client(billingKey, nil)
	ch := call(t.Context(), cs, &mcp.CallToolParams{Name: "files__write", Arguments: map[string]any{"path": "a.txt", "content": "hi"}})
	token, callID, _ := e.waitCard(1)
	if got := stdioCalls(t, e.filesLog); len(got) != 0 {
		t.Fatalf("stdio server called before the decision: %q", got)
	}
	e.decide(token, callID, approval.Decision{Action: approval.ActionApprove})
	res := wait(t, ch)
	if res.IsError || text(res) != "wrote a.txt" {
		t.Errorf("result = %q (isError %v); want the stdio server's", text(res), res.IsError)
	}
	got := stdioCalls(t, e.filesLog)
	if len(got) != 1 || !jsonEqual(json.RawMessage(got[0]), `{"path":"a.txt","content":"hi"}`) {
		t.Errorf("stdio server calls = %q; want one with the arguments as asked", got)
	}
}

func TestDeniedCallIsAToolErrorWithTheReason(t *testing.T) {
	e := newEnv(t, envOptions{})
	cs := e.client(billingKey, nil)
	ch := call(t.Context(), cs, &mcp.CallToolParams{Name: "tickets__create_issue", Arguments: map[string]any{"title": "x"}})
	token, callID, _ := e.waitCard(1)
	e.decide(token, callID, approval.Decision{Action: approval.ActionDeny, Reason: "Not during the freeze."})
	res := wait(t, ch)
	if !res.IsError || text(res) != "Not during the freeze." {
		t.Errorf("result = %q (isError %v); want a tool error with the reason", text(res), res.IsError)
	}
	if n := len(e.tickets.callsOf("create_issue")); n != 0 {
		t.Errorf("upstream called %d times for a denied call", n)
	}
}

func TestExpiredCallIsNoDecision(t *testing.T) {
	e := newEnv(t, envOptions{})
	cs := e.client(billingKey, nil)
	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "tickets__slow_close", Arguments: map[string]any{"query": "7"}})
	if err != nil {
		t.Fatal(err)
	}
	if !res.IsError || !strings.HasPrefix(text(res), agentrunner.NoDecisionPrefix) {
		t.Errorf("result = %q (isError %v); want %q…", text(res), res.IsError, agentrunner.NoDecisionPrefix)
	}
	if len(e.cards()) != 1 {
		t.Errorf("%d cards; want 1", len(e.cards()))
	}
	if n := len(e.tickets.callsOf("slow_close")); n != 0 {
		t.Errorf("upstream called %d times for an expired call", n)
	}
}

func TestClientDisconnectCancelsTheRequest(t *testing.T) {
	e := newEnv(t, envOptions{})
	cs := e.client(billingKey, nil)
	ctx, cancel := context.WithCancel(t.Context())
	ch := call(ctx, cs, &mcp.CallToolParams{Name: "tickets__create_issue", Arguments: map[string]any{"title": "x"}})
	token, callID, _ := e.waitCard(1)
	cancel()
	<-ch
	deadline := time.Now().Add(10 * time.Second)
	for {
		r, err := e.svc.Get(t.Context(), token)
		if err != nil {
			t.Fatal(err)
		}
		if r.State == approval.StateCancelled {
			if r.EndedBy != billing {
				t.Errorf("cancelled by %q; want the client, %q", r.EndedBy, billing)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("request %s after the client went away; want cancelled", r.State)
		}
		time.Sleep(20 * time.Millisecond)
	}
	// The card says so.
	for time.Now().Before(deadline) {
		if m := e.cards()[0]; strings.Contains(m.Text, "Cancelled") {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Errorf("card %q of %s; want it to say Cancelled", e.cards()[0].Text, callID)
}

func TestReplicaRestartWhileWaiting(t *testing.T) {
	first := newEnv(t, envOptions{})
	second := newEnv(t, envOptions{shared: first})
	p := &mcp.CallToolParams{Name: "tickets__create_issue", Arguments: map[string]any{"title": "x"}, Meta: mcp.Meta{mcpgateway.IdempotencyMetaKey: "run-7/call-3"}}
	ch := call(t.Context(), first.client(billingKey, nil), p)
	token, callID, _ := first.waitCard(1)
	first.gw.Close() // the replica shuts down while the client waits
	res := wait(t, ch)
	if !res.IsError || !strings.Contains(text(res), "call the tool again") {
		t.Errorf("result at shutdown = %q; want a tool error asking to call again", text(res))
	}
	r, err := second.svc.Get(t.Context(), token)
	if err != nil || r.State != approval.StatePending {
		t.Fatalf("request after the restart: %v, %v; want still pending", r.State, err)
	}

	ch = call(t.Context(), second.client(billingKey, nil), p)
	time.Sleep(100 * time.Millisecond)
	second.decide(token, callID, approval.Decision{Action: approval.ActionApprove})
	res = wait(t, ch)
	if res.IsError || text(res) != "created #1: x" {
		t.Errorf("retry's result = %q (isError %v); want the upstream's", text(res), res.IsError)
	}
	if n := len(first.cards()); n != 1 {
		t.Errorf("%d cards; want 1 (the retry reaches the recorded request)", n)
	}
	if n := len(first.tickets.callsOf("create_issue")); n != 1 {
		t.Errorf("upstream called %d times; want 1", n)
	}

	// Retried once more after it ran: the recorded decision, not a second run.
	res, err = second.client(billingKey, nil).CallTool(t.Context(), p)
	if err != nil {
		t.Fatal(err)
	}
	if !res.IsError || !strings.Contains(text(res), "already run") || len(first.tickets.callsOf("create_issue")) != 1 || len(first.cards()) != 1 {
		t.Errorf("second retry = %q; want a tool error saying it already ran, no second run or card", text(res))
	}
}

func TestBadInput(t *testing.T) {
	e := newEnv(t, envOptions{})
	cs := e.client(billingKey, nil)

	if _, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "tickets__nope", Arguments: map[string]any{}}); err == nil || !strings.Contains(err.Error(), "tickets__nope") {
		t.Errorf("unknown tool: %v; want a JSON-RPC error naming it", err)
	}

	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "tickets__create_issue", Arguments: map[string]any{"title": 5}})
	if err != nil {
		t.Fatal(err)
	}
	if !res.IsError || !strings.Contains(text(res), "/title") || !strings.Contains(text(res), "nobody was asked") {
		t.Errorf("arguments not matching the schema: %q; want a tool error naming the field", text(res))
	}

	res, err = e.client(opsKey, nil).CallTool(t.Context(), &mcp.CallToolParams{Name: "tickets__create_issue", Arguments: map[string]any{"title": "x"}})
	if err != nil {
		t.Fatal(err)
	}
	if !res.IsError || !strings.Contains(text(res), `route "writes"`) {
		t.Errorf("key restricted to other routes: %q; want a tool error naming the route", text(res))
	}

	e.flakyH.CloseClientConnections()
	e.flakyH.Close()
	res, err = cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "flaky__do", Arguments: map[string]any{"query": "x"}})
	if err != nil {
		t.Fatal(err)
	}
	if !res.IsError || !strings.Contains(text(res), "MCP server flaky is unavailable") {
		t.Errorf("upstream down: %q; want a tool error saying so", text(res))
	}

	if n := len(e.cards()); n != 0 {
		t.Errorf("%d cards posted for bad input; want none", n)
	}
	if n := len(e.tickets.callsOf("create_issue")); n != 0 {
		t.Errorf("upstream called %d times for bad input", n)
	}

	// A proxy on the same host forwards with the public Host.
	req, _ := http.NewRequest(http.MethodPost, e.srv.URL+"/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
	req.Host = "slackbot.example.com"
	req.Header.Set("Authorization", "Bearer "+billingKey)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("through a proxy on loopback: %d; want 200", resp.StatusCode)
	}

	resp, err = http.Post(e.srv.URL+"/mcp", "application/json", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized || !strings.HasPrefix(resp.Header.Get("WWW-Authenticate"), "Bearer") {
		t.Errorf("no key: %d, WWW-Authenticate %q; want 401 Bearer", resp.StatusCode, resp.Header.Get("WWW-Authenticate"))
	}
}

// TestBurstFromOneKey: 1,000 calls at once from one key whose quota
// allows 5 open requests: 5 cards, and 995 rate-limited tool errors.
func TestBurstFromOneKey(t *testing.T) {
	const calls, open = 1000, 5
	e := newEnv(t, envOptions{quota: approval.Quota{MaxOpen: open}})
	cs := e.client(billingKey, nil)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	var limited, other atomic.Int32
	var wg sync.WaitGroup
	work := make(chan int)
	for range 50 {
		wg.Go(func() {
			for i := range work {
				res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "tickets__create_issue", Arguments: map[string]any{"title": "burst " + itoa(i)}})
				switch {
				case err == nil && res.IsError && strings.HasPrefix(text(res), "Rate limited"):
					limited.Add(1)
				case ctx.Err() == nil:
					other.Add(1)
				}
			}
		})
	}
	for i := range calls {
		work <- i
	}
	close(work)
	deadline := time.Now().Add(30 * time.Second)
	for limited.Load() < calls-open && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if got := limited.Load(); got != calls-open {
		t.Errorf("%d calls rate limited; want %d", got, calls-open)
	}
	if n := len(e.cards()); n != open {
		t.Errorf("%d cards; want %d", n, open)
	}
	cancel()
	wg.Wait()
	if n := other.Load(); n != 0 {
		t.Errorf("%d calls ended otherwise before the end of the test", n)
	}
}

func itoa(i int) string { return jsonNumber(i) }

func jsonNumber(i int) string { b, _ := json.Marshal(i); return string(b) }

func jsonEqual(got json.RawMessage, want string) bool {
	var a, b any
	return json.Unmarshal(got, &a) == nil && json.Unmarshal([]byte(want), &b) == nil && cmp.Equal(a, b)
}

// TestConcurrentCallsGetTheirOwnDecisions: calls waiting at once, each
// decided apart, each get their own decision.
func TestConcurrentCallsGetTheirOwnDecisions(t *testing.T) {
	e := newEnv(t, envOptions{})
	e.decideCards(func(_ string, args json.RawMessage) approval.Decision {
		var a struct{ Title string }
		_ = json.Unmarshal(args, &a)
		if strings.HasPrefix(a.Title, "deny") {
			return approval.Decision{Action: approval.ActionDeny, Reason: "No: " + a.Title}
		}
		return approval.Decision{Action: approval.ActionApprove}
	})
	cs := e.client(billingKey, nil)
	titles := []string{"approve 1", "deny 2", "approve 3", "deny 4", "approve 5"}
	var wg sync.WaitGroup
	got := make([]string, len(titles))
	for i, title := range titles {
		wg.Go(func() {
			res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "tickets__create_issue", Arguments: map[string]any{"title": title}})
			if err != nil {
				t.Errorf("%s: %v", title, err)
				return
			}
			got[i] = text(res)
		})
	}
	wg.Wait()
	for i, title := range titles {
		if strings.HasPrefix(title, "deny") && got[i] != "No: "+title || strings.HasPrefix(title, "approve") && !strings.HasSuffix(got[i], ": "+title) {
			t.Errorf("%s: got %q", title, got[i])
		}
	}
	if n := len(e.tickets.callsOf("create_issue")); n != 3 {
		t.Errorf("upstream ran %d calls; want the 3 approved", n)
	}
}
