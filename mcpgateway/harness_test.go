package mcpgateway_test

import (
	"bufio"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/slackapprove/slackbot/agentrunner"
	"github.com/slackapprove/slackbot/agentrunner/mcptools"
	"github.com/slackapprove/slackbot/approval"
	"github.com/slackapprove/slackbot/bot"
	"github.com/slackapprove/slackbot/internal/slackfake"
	"github.com/slackapprove/slackbot/internal/slackfaketest"
	"github.com/slackapprove/slackbot/internal/slacktest"
	"github.com/slackapprove/slackbot/internal/systest"
	"github.com/slackapprove/slackbot/mcpgateway"
	"github.com/slackapprove/slackbot/receipt"
	"github.com/slackapprove/slackbot/store"
)

// stdioEnv makes the test binary an upstream MCP server over stdio (see
// TestMain), whose files__write tool appends each call's arguments as a
// line to the file the variable names.
const stdioEnv = "MCPGATEWAY_TEST_STDIO_LOG"

func TestMain(m *testing.M) {
	if path := os.Getenv(stdioEnv); path != "" {
		serveStdio(path)
		return
	}
	os.Exit(m.Run())
}

const (
	alice     = "U0ALICE"
	approvals = "C0APPROVALS"
	// The API clients: billing may use every route, opsbot only ops.
	billing    = "billing"
	billingKey = "billing-key-0123456789abcdef"
	opsbot     = "opsbot"
	opsKey     = "opsbot-key-0123456789abcdef"
	// support may use the writes route only (every tickets__ tool but
	// slow_close, read-only search included).
	support    = "support"
	supportKey = "support-key-0123456789abcdef"
)

const routesYAML = `
routes:
  - name: slow
    when: {tools: ["tickets__slow_close", "Expiring"]}
    channel: C0APPROVALS
    approvers: {users: [U0ALICE]}
    timeout: 1s
  - name: reads
    when: {tools: ["Read", "Grep"]}
    channel: C0APPROVALS
    approvers: {users: [U0ALICE]}
    auto_approve: "true"
  - name: ops
    when: {tools: ["ops__*"]}
    channel: C0APPROVALS
    approvers: {users: [U0ALICE]}
  - name: writes
    when: {tools: ["tickets__*", "files__*", "flaky__*", "Bash", "Edit", "Write", "mcp__*"]}
    channel: C0APPROVALS
    approvers: {users: [U0ALICE]}
`

// upstream is a real MCP server (the Go SDK) that counts the calls of
// its tools.
type upstream struct {
	srv *mcp.Server

	mu    sync.Mutex
	calls map[string][]json.RawMessage
	// metas has the _meta of each call, in order.
	metas map[string][]mcp.Meta
}

func (u *upstream) record(tool string, args json.RawMessage, meta ...mcp.Meta) int {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.calls[tool] = append(u.calls[tool], args)
	if len(meta) > 0 {
		u.metas[tool] = append(u.metas[tool], meta[0])
	}
	return len(u.calls[tool])
}

func (u *upstream) metasOf(tool string) []mcp.Meta {
	u.mu.Lock()
	defer u.mu.Unlock()
	return slices.Clone(u.metas[tool])
}

func (u *upstream) callsOf(tool string) []json.RawMessage {
	u.mu.Lock()
	defer u.mu.Unlock()
	return slices.Clone(u.calls[tool])
}

type createIssueArgs struct {
	Title string `json:"title" jsonschema:"the issue's title"`
	Body  string `json:"body,omitempty"`
}

// brokenQuery makes the tickets server's search answer with a tool error.
const brokenQuery = "broken"

type searchArgs struct {
	Query string `json:"query"`
}

// newUpstream serves the tickets server over streamable HTTP on a
// loopback port: search (read-only in the routing), create_issue and
// slow_close (behind approval).
func newUpstream(t *testing.T) (*upstream, *httptest.Server) {
	t.Helper()
	u := &upstream{calls: map[string][]json.RawMessage{}, metas: map[string][]mcp.Meta{}}
	srv := mcp.NewServer(&mcp.Implementation{Name: "tickets", Version: "1"}, nil)
	u.srv = srv
	mcp.AddTool(srv, &mcp.Tool{Name: "search", Description: "Search tickets.", Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true, Title: "Search"}},
		func(_ context.Context, req *mcp.CallToolRequest, a searchArgs) (*mcp.CallToolResult, any, error) {
			u.record("search", req.Params.Arguments, req.Params.Meta)
			if a.Query == brokenQuery {
				return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "the search index is broken"}}}, nil, nil
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "found: " + a.Query}}}, nil, nil
		})
	destructive := true
	mcp.AddTool(srv, &mcp.Tool{Name: "create_issue", Description: "Create an issue.", Annotations: &mcp.ToolAnnotations{DestructiveHint: &destructive}},
		func(_ context.Context, req *mcp.CallToolRequest, a createIssueArgs) (*mcp.CallToolResult, any, error) {
			n := u.record("create_issue", req.Params.Arguments, req.Params.Meta)
			return &mcp.CallToolResult{
				Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprintf("created #%d: %s", n, a.Title)}},
				Meta:    mcp.Meta{"upstream": "kept"},
			}, nil, nil
		})
	mcp.AddTool(srv, &mcp.Tool{Name: "slow_close", Description: "Close a ticket (its route times out at once)."},
		func(_ context.Context, req *mcp.CallToolRequest, a searchArgs) (*mcp.CallToolResult, any, error) {
			u.record("slow_close", req.Params.Arguments)
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "closed"}}}, nil, nil
		})
	hs := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
	t.Cleanup(func() { hs.CloseClientConnections(); hs.Close() })
	return u, hs
}

type writeArgs struct {
	Path    string `json:"path"`
	Content string `json:"content"`
}

// serveStdio is the files server over stdio, run by the test binary
// itself: its one tool, write, appends its arguments to log.
func serveStdio(log string) {
	srv := mcp.NewServer(&mcp.Implementation{Name: "files", Version: "1"}, nil)
	mcp.AddTool(srv, &mcp.Tool{Name: "write", Description: "Write a file."},
		func(_ context.Context, req *mcp.CallToolRequest, a writeArgs) (*mcp.CallToolResult, any, error) {
			f, err := os.OpenFile(log, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
			if err != nil {
				return nil, nil, err
			}
			defer f.Close()
			fmt.Fprintf(f, "%s\n", req.Params.Arguments)
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "wrote " + a.Path}}}, nil, nil
		})
	_ = srv.Run(context.Background(), &mcp.StdioTransport{})
}

// stdioCalls returns the lines the stdio server logged.
func stdioCalls(t *testing.T, path string) []string {
	t.Helper()
	f, err := os.Open(path)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var lines []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		lines = append(lines, sc.Text())
	}
	return lines
}

// env is the gateway over the core of the system (internal/systest: a
// real approval.Service on a real store over the embedded Redis), with
// cards posted to the fake Slack, and real upstream MCP servers: tickets
// over streamable HTTP, files over stdio.
type env struct {
	t        *testing.T
	sys      *systest.System
	fake     *slackfake.Server
	fakeSrv  *httptest.Server
	store    *store.Store
	svc      *approval.Service
	tokens   *store.Tokens
	gw       *mcpgateway.Handler
	srv      *httptest.Server
	tickets  *upstream
	ticketsH *httptest.Server
	filesLog string
	// flakyH serves the flaky server, which tests stop.
	flakyH  *httptest.Server
	toolset *mcptools.Toolset
	prefix  string
	// receipts verifies the receipts the gateway hands out.
	receipts *receipt.KeySet
}

type envOptions struct {
	// quota per key; zero: none.
	quota approval.Quota
	// progressEvery; zero: 50ms.
	progressEvery time.Duration
	// writeTimeout is the gateway's server's; zero: none.
	writeTimeout time.Duration
	// shared, when set, is the env whose Redis prefix, Slack and
	// upstreams a second replica uses.
	shared *env
	// routes is the routing file; empty: routesYAML.
	routes string
}

func newEnv(t *testing.T, o envOptions) *env {
	t.Helper()
	e := &env{t: t}
	routes := systest.ParseRoutes(t, cmp.Or(o.routes, routesYAML))
	var replicaOf *systest.System
	if o.shared != nil {
		replicaOf = o.shared.sys
		e.fake, e.fakeSrv, e.tickets, e.ticketsH, e.filesLog = o.shared.fake, o.shared.fakeSrv, o.shared.tickets, o.shared.ticketsH, o.shared.filesLog
	} else {
		e.fake, e.fakeSrv = slackfaketest.NewTestServer(t, slackfake.WithDemoWorkspace())
		e.tickets, e.ticketsH = newUpstream(t)
		e.filesLog = t.TempDir() + "/files.log"
	}
	e.flakyH = newFlaky(t)
	e.toolset = newToolset(t, e.ticketsH.URL, e.flakyH.URL, e.filesLog)
	// After the system stops (systest.New's cleanup, registered next).
	t.Cleanup(func() { _ = e.toolset.Close() })
	box, err := agentrunner.NewToolbox(nil, e.toolset)
	if err != nil {
		t.Fatal(err)
	}
	log := systest.NewLog(t, slog.LevelWarn, billingKey, opsKey, supportKey)
	sc := bot.NewSlackClient(e.fake.Token(), slackfaketest.APIURL(e.fakeSrv), nil)
	e.sys = systest.New(t, systest.Options{
		ReplicaOf: replicaOf, Routes: routes, Tools: box, Log: log,
		Poster:    bot.NewCards(bot.CardsConfig{Slack: sc, Routes: routes, Tools: box, Log: log.Logger}),
		Directory: &bot.Usergroups{Slack: sc},
	})
	e.store, e.svc, e.tokens, e.prefix, e.receipts = e.sys.Store, e.sys.Service, e.sys.Tokens, e.sys.Prefix, e.sys.Receipts
	e.gw, err = mcpgateway.NewHandler(mcpgateway.Config{
		Authenticate: testKeys, Approvals: e.svc, Waiter: e.tokens, Store: e.store, Upstream: e.toolset,
		Quota: o.quota, ProgressEvery: cmp.Or(o.progressEvery, 50*time.Millisecond), Log: e.sys.Log, Receipts: e.sys.Signer,
	})
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("/mcp", e.gw)
	e.srv = httptest.NewUnstartedServer(mux)
	e.srv.Config.WriteTimeout = o.writeTimeout
	e.srv.Start()
	// Before the system stops.
	t.Cleanup(func() {
		e.gw.Close()
		e.srv.CloseClientConnections()
		e.srv.Close()
	})
	return e
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimSpace(string(p)))
	return len(p), nil
}

// testKeys authenticates the two test clients as cmd/slackbot's
// httpapi key ring would.
func testKeys(r *http.Request) (mcpgateway.Client, bool) {
	switch r.Header.Get("Authorization") {
	case "Bearer " + billingKey:
		return mcpgateway.Client{Name: billing}, true
	case "Bearer " + opsKey:
		return mcpgateway.Client{Name: opsbot, Routes: []string{"ops"}}, true
	case "Bearer " + supportKey:
		return mcpgateway.Client{Name: support, Routes: []string{"writes"}}, true
	}
	return mcpgateway.Client{}, false
}

// newFlaky serves the flaky server's one tool, do, over streamable HTTP.
func newFlaky(t *testing.T) *httptest.Server {
	srv := mcp.NewServer(&mcp.Implementation{Name: "flaky", Version: "1"}, nil)
	mcp.AddTool(srv, &mcp.Tool{Name: "do", Description: "Do something."},
		func(context.Context, *mcp.CallToolRequest, searchArgs) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "done"}}}, nil, nil
		})
	hs := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
	t.Cleanup(func() { hs.CloseClientConnections(); hs.Close() })
	return hs
}

func newToolset(t *testing.T, ticketsURL, flakyURL, filesLog string) *mcptools.Toolset {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ts, err := mcptools.NewToolset(ctx, []mcptools.Config{
		{Name: "tickets", URL: ticketsURL, ReadOnly: []string{"search"}},
		{Name: "files", Command: []string{exe}, Env: map[string]string{stdioEnv: filesLog}},
		{Name: "flaky", URL: flakyURL},
	}, mcptools.WithLookupEnv(func(string) (string, bool) { return "", false }), mcptools.WithBackoff(20*time.Millisecond, 100*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range ts.Status() {
		if !s.Connected {
			t.Fatalf("upstream %s not connected: %v", s.Name, s.Err)
		}
	}
	return ts
}

// bearer adds a key to every request.
type bearer struct {
	key  string
	base http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.key)
	return b.base.RoundTrip(r)
}

// client connects the Go SDK's MCP client to the gateway with key.
func (e *env) client(key string, opts *mcp.ClientOptions) *mcp.ClientSession {
	e.t.Helper()
	c := mcp.NewClient(&mcp.Implementation{Name: "test-agent", Version: "1.2.3"}, opts)
	tr := &mcp.StreamableClientTransport{Endpoint: e.srv.URL + "/mcp", HTTPClient: &http.Client{Transport: bearer{key, http.DefaultTransport}}}
	cs, err := c.Connect(e.t.Context(), tr, nil)
	if err != nil {
		e.t.Fatalf("connect to the gateway: %v", err)
	}
	e.t.Cleanup(func() { _ = cs.Close() })
	return cs
}

// cards returns the cards in the approvals channel.
func (e *env) cards() []slackfake.Message { return e.fake.Messages(approvals) }

// waitCard waits for the n-th card (from 1) and returns its token and
// call.
func (e *env) waitCard(n int) (token, callID string, m slackfake.Message) {
	e.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if ms := e.cards(); len(ms) >= n {
			m = ms[n-1]
			btn, ok := slacktest.Button(m, bot.ActionIDApprove)
			if !ok {
				e.t.Fatalf("card %d has no approve button: %s", n, m.Text)
			}
			token, callID, err := bot.DecodeAction(btn.Value)
			if err != nil {
				e.t.Fatal(err)
			}
			return token, callID, m
		}
		time.Sleep(10 * time.Millisecond)
	}
	e.t.Fatalf("no card %d in %s; cards: %d", n, approvals, len(e.cards()))
	return "", "", m
}

// decide decides the call as alice, from its card.
func (e *env) decide(token, callID string, d approval.Decision) {
	e.t.Helper()
	// The card shows in Slack a moment before its place is recorded.
	var r *approval.Request
	for deadline := time.Now().Add(10 * time.Second); ; {
		var err error
		if r, err = e.svc.Get(e.t.Context(), token); err != nil {
			e.t.Fatal(err)
		}
		if r.Call(callID).Message.ID != "" || time.Now().After(deadline) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	d.CallID, d.By = callID, alice
	if _, err := e.svc.Decide(e.t.Context(), token, approval.Decider{User: alice, Message: r.Call(callID).Message}, d); err != nil {
		e.t.Fatalf("decide: %v", err)
	}
}

// call calls a tool in the background and returns where its result
// arrives.
func call(ctx context.Context, cs *mcp.ClientSession, p *mcp.CallToolParams) <-chan callResult {
	ch := make(chan callResult, 1)
	go func() {
		res, err := cs.CallTool(ctx, p)
		ch <- callResult{res, err}
	}()
	return ch
}

type callResult struct {
	res *mcp.CallToolResult
	err error
}

func wait(t *testing.T, ch <-chan callResult) *mcp.CallToolResult {
	t.Helper()
	select {
	case r := <-ch:
		if r.err != nil {
			t.Fatalf("call: %v", r.err)
		}
		return r.res
	case <-time.After(20 * time.Second):
		t.Fatal("no result in 20s")
	}
	return nil
}

func text(res *mcp.CallToolResult) string {
	var parts []string
	for _, c := range res.Content {
		if t, ok := c.(*mcp.TextContent); ok {
			parts = append(parts, t.Text)
		}
	}
	return strings.Join(parts, "\n")
}

// decideCards decides every card posted from now on, as alice, with what
// decide says for its call, until the test ends: a driver for clients that
// cannot click (a test of another language's MCP client uses it with the
// gateway at e.srv.URL+"/mcp" and the key billingKey).
func (e *env) decideCards(decide func(tool string, args json.RawMessage) approval.Decision) {
	e.t.Helper()
	seen := len(e.cards())
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	e.t.Cleanup(func() { cancel(); <-done })
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			cards := e.cards()
			for ; seen < len(cards); seen++ {
				btn, ok := slacktest.Button(cards[seen], bot.ActionIDApprove)
				if !ok {
					continue
				}
				token, callID, err := bot.DecodeAction(btn.Value)
				if err != nil {
					e.t.Errorf("card %d: %v", seen+1, err)
					continue
				}
				e.decideAsync(ctx, token, callID, decide)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}()
}

// decideAsync decides one call once its card's place is recorded.
func (e *env) decideAsync(ctx context.Context, token, callID string, decide func(string, json.RawMessage) approval.Decision) {
	for ctx.Err() == nil {
		r, err := e.svc.Get(ctx, token)
		if err != nil {
			return
		}
		c := r.Call(callID)
		if c.Message.ID == "" {
			time.Sleep(10 * time.Millisecond)
			continue
		}
		call, _ := r.Requests.Call(callID)
		d := decide(call.ToolName, call.Args)
		d.CallID, d.By = callID, alice
		if _, err := e.svc.Decide(ctx, token, approval.Decider{User: alice, Message: c.Message}, d); err != nil && ctx.Err() == nil {
			e.t.Errorf("decide %s: %v", callID, err)
		}
		return
	}
}
