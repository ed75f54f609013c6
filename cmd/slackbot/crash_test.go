package main

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/slackapprove/slackbot/bot"
	"github.com/slackapprove/slackbot/internal/slackfake"
)

// The crash suite (issue 21): two replicas of the real binary share Redis
// and the fake Slack; replica A, on which the approved run goes on, is
// killed with SIGKILL at one step of what follows the decision, and
// replica B must finish the run within the takeover bound: exactly one
// answer in the thread, the card without buttons, the tool run at most
// once. A is held at a step with levers an operator has too: an upstream
// MCP server whose tool is slow, and a proxy in front of Slack that holds
// one method.

// takeoverWait bounds the wait for B to finish a run whose replica died:
// the documented bound (README, Guarantees) with room for a slow CI host.
const takeoverWait = 40 * time.Second

// crashTool is an upstream MCP server with one tool, close_ticket, that
// counts its calls and, while held, blocks until released.
type crashTool struct {
	srv   *httptest.Server
	calls atomic.Int32
	held  atomic.Bool
	// done, if set, runs after the tool did its work; the tool answers
	// once it returns.
	done    atomic.Pointer[func()]
	started chan struct{}
	release chan struct{}
	// notes counts the calls of add_note, a tool that needs no approval
	// (read_only in the routes) and, while noteHeld, blocks until its
	// client is gone, announcing itself on noteStarted.
	notes       atomic.Int32
	noteHeld    atomic.Bool
	noteStarted chan struct{}
}

func newCrashTool(t *testing.T) *crashTool {
	t.Helper()
	ct := &crashTool{started: make(chan struct{}, 4), release: make(chan struct{}), noteStarted: make(chan struct{}, 4)}
	srv := mcp.NewServer(&mcp.Implementation{Name: "tickets", Version: "1"}, nil)
	mcp.AddTool(srv, &mcp.Tool{Name: "close_ticket", Description: "Close a ticket."},
		func(ctx context.Context, _ *mcp.CallToolRequest, _ closeTicketArgs) (*mcp.CallToolResult, any, error) {
			ct.calls.Add(1)
			if ct.held.Load() {
				ct.started <- struct{}{}
				select {
				case <-ct.release:
				case <-ctx.Done():
				}
			}
			if f := ct.done.Load(); f != nil {
				(*f)()
				ct.started <- struct{}{}
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "closed"}}}, nil, nil
		})
	mcp.AddTool(srv, &mcp.Tool{Name: "add_note", Description: "Add a note to a ticket."},
		func(ctx context.Context, _ *mcp.CallToolRequest, _ closeTicketArgs) (*mcp.CallToolResult, any, error) {
			ct.notes.Add(1)
			if ct.noteHeld.Load() {
				ct.noteStarted <- struct{}{}
				<-ctx.Done()
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "noted"}}}, nil, nil
		})
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil)
	ct.srv = httptest.NewServer(h)
	t.Cleanup(func() { ct.srv.CloseClientConnections(); ct.srv.Close() })
	return ct
}

// slackHold is a proxy in front of the fake Slack that holds the calls of
// one method while armed: each is announced on arrived and waits until
// the hold is lifted or its client is gone.
type slackHold struct {
	mu      sync.Mutex
	method  string
	lifted  chan struct{}
	arrived chan string
}

func (h *slackHold) arm(method string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.method, h.lifted = method, make(chan struct{})
}

func (h *slackHold) lift() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.method != "" {
		close(h.lifted)
	}
	h.method = ""
}

// holdSlack puts a slackHold between the cluster's processes and Slack.
func (c *cluster) holdSlack() *slackHold {
	c.t.Helper()
	h := &slackHold{arrived: make(chan string, 16)}
	at, path := -1, ""
	var target *url.URL
	for i, kv := range c.env {
		if v, ok := strings.CutPrefix(kv, "SLACK_API_URL="); ok {
			u, err := url.Parse(v)
			if err != nil {
				c.t.Fatal(err)
			}
			at, path, target = i, u.Path, &url.URL{Scheme: u.Scheme, Host: u.Host}
		}
	}
	if at < 0 {
		c.t.Fatal("no SLACK_API_URL")
	}
	proxy := httputil.NewSingleHostReverseProxy(target)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		method := r.URL.Path[strings.LastIndex(r.URL.Path, "/")+1:]
		h.mu.Lock()
		held, lifted := h.method == method, h.lifted
		h.mu.Unlock()
		if held {
			h.arrived <- method
			select {
			case <-lifted:
			case <-r.Context().Done():
				return
			}
		}
		proxy.ServeHTTP(w, r)
	}))
	c.t.Cleanup(func() { h.lift(); srv.CloseClientConnections(); srv.Close() })
	c.env[at] = "SLACK_API_URL=" + srv.URL + path
	return h
}

// crashCluster is a cluster whose model calls the MCP tool, with the
// Slack proxy in place, and replicas A and B running.
func crashCluster(t *testing.T) (c *cluster, tool *crashTool, hold *slackHold, a, b *proc) {
	t.Helper()
	c, tool, hold, a, b, _ = crashClusterOwner(t)
	return c, tool, hold, a, b
}

// crashClusterOwner is crashCluster, and also returns the owner name of
// A's process (its heartbeat key proc:<owner>, the claimer in its
// scripts' arguments).
func crashClusterOwner(t *testing.T) (c *cluster, tool *crashTool, hold *slackHold, a, b *proc, ownerA string) {
	return crashClusterSlowA(t, 0)
}

// crashClusterSlowA is crashClusterOwner with Redis's replies to A
// delayed by slow (none if zero; see startSlow), and env added to the
// processes' environment.
func crashClusterSlowA(t *testing.T, slow time.Duration, env ...string) (c *cluster, tool *crashTool, hold *slackHold, a, b *proc, ownerA string) {
	t.Helper()
	if testing.Short() {
		t.Skip("starts processes")
	}
	tool = newCrashTool(t)
	c = newCluster(t, durableRoutes+`mcp_servers:
  - name: tickets
    url: `+tool.srv.URL+`
    read_only: ["add_note"]
`)
	c.env = append(c.env, "MODEL=test:tickets__close_ticket", "TOOLS=")
	c.env = append(c.env, env...)
	hold = c.holdSlack()
	if slow > 0 {
		a = c.startSlow("A", slow)
	} else {
		a = c.start("A")
	}
	ownerA = c.onlyOwner()
	return c, tool, hold, a, c.start("B"), ownerA
}

// onlyOwner waits for the one process heartbeat in Redis and returns its
// owner name.
func (c *cluster) onlyOwner() string {
	c.t.Helper()
	var keys []string
	waitUntil(c.t, takeoverWait, "one process heartbeat", func() bool {
		keys = c.redis.Client(c.t).Keys(c.t.Context(), "slackbot:proc:*").Val()
		return len(keys) == 1
	})
	return strings.TrimPrefix(keys[0], "slackbot:proc:")
}

// mentionTicket starts a run from a mention through p and waits for its card.
func (c *cluster) mentionTicket(p *proc) (thread string, card slackfake.Message, e *env) {
	c.t.Helper()
	thread = c.mentionText(p, "close the ticket")
	e = &env{t: c.t, slack: c.slack}
	return thread, e.waitCards(1)[0], e
}

// finishedOnce checks what every crash case guarantees.
func (c *cluster) finishedOnce(e *env, tool *crashTool, thread string, card slackfake.Message, wantAnswer, wantCard string) {
	c.t.Helper()
	if got := c.waitAnswer(thread, takeoverWait); !strings.Contains(got, wantAnswer) {
		c.t.Errorf("answer: got %q, want it to contain %q", got, wantAnswer)
	}
	deadline := time.Now().Add(takeoverWait)
	for {
		text := cardText(e.latest(card))
		if !strings.Contains(text, `"type":"actions"`) && strings.Contains(text, wantCard) {
			break
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("the card after the takeover: %s; want no buttons and %q", text, wantCard)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if n := tool.calls.Load(); n != 1 {
		c.t.Errorf("the tool ran %d times, want exactly once", n)
	}
}

const closedAnswer = `{"tickets__close_ticket":"closed"}`

// Killed after the decision, before resuming: A is frozen (SIGSTOP) when
// the click lands on B, then killed; B resumes the run once A's heartbeat
// is gone.
func TestCrashAfterDecisionBeforeResume(t *testing.T) {
	t.Parallel()
	c, tool, _, a, b := crashCluster(t)
	thread, card, e := c.mentionTicket(a)
	if err := a.freeze(); err != nil {
		t.Fatal(err)
	}
	postSigned(t, b.base+"/slack/interactivity", "application/x-www-form-urlencoded", e.clickPayload(alice, "T0FAKE", card, bot.ActionIDApprove))
	e.waitFor("the decision on the card", func() bool { return strings.Contains(cardText(e.latest(card)), "Approved") })
	a.kill(t)
	c.finishedOnce(e, tool, thread, card, closedAnswer, "closed")
}

// Killed while the approved tool runs: B takes the run over and does not
// run the tool again; the model, the answer and the card say its outcome
// was lost.
func TestCrashWhileToolRuns(t *testing.T) {
	t.Parallel()
	c, tool, _, a, _ := crashCluster(t)
	tool.held.Store(true)
	thread, card, e := c.mentionTicket(a)
	postSigned(t, a.base+"/slack/interactivity", "application/x-www-form-urlencoded", e.clickPayload(alice, "T0FAKE", card, bot.ActionIDApprove))
	<-tool.started
	a.kill(t)
	close(tool.release)
	c.finishedOnce(e, tool, thread, card, "may have run", "may have run")
	c.auditsLostOutcome()
}

// auditsLostOutcome checks that the audit stream has the lost outcome as
// the tool's outcome.
func (c *cluster) auditsLostOutcome() {
	c.t.Helper()
	evs, err := c.redis.Client(c.t).XRange(c.t.Context(), "slackbot:audit", "-", "+").Result()
	if err != nil {
		c.t.Fatal(err)
	}
	for _, ev := range evs {
		if ev.Values["type"] == "tool_outcome" && strings.Contains(fmt.Sprint(ev.Values["detail"]), "may have run") {
			return
		}
	}
	c.t.Errorf("no tool_outcome audit event says the outcome was lost: %v", evs)
}

// Killed after the tool ran, before its return was recorded: the tool
// does its work and does not answer until A is frozen (freeze: every
// thread of A stopped), so A never has the return to record; then A is
// killed. B does not run the tool again and says its outcome was lost.
func TestCrashAfterToolBeforeOutcome(t *testing.T) {
	t.Parallel()
	c, tool, _, a, _ := crashCluster(t)
	stop := func() {
		if err := a.freeze(); err != nil {
			t.Errorf("freeze A: %v", err)
		}
	}
	tool.done.Store(&stop)
	thread, card, e := c.mentionTicket(a)
	postSigned(t, a.base+"/slack/interactivity", "application/x-www-form-urlencoded", e.clickPayload(alice, "T0FAKE", card, bot.ActionIDApprove))
	<-tool.started
	a.kill(t)
	c.finishedOnce(e, tool, thread, card, "may have run", "may have run")
	c.auditsLostOutcome()
}

// Killed while posting the answer (the post is held on its way to Slack):
// B posts it, once.
func TestCrashWhilePostingAnswer(t *testing.T) {
	t.Parallel()
	c, tool, hold, a, _ := crashCluster(t)
	thread, card, e := c.mentionTicket(a)
	hold.arm("chat.postMessage")
	postSigned(t, a.base+"/slack/interactivity", "application/x-www-form-urlencoded", e.clickPayload(alice, "T0FAKE", card, bot.ActionIDApprove))
	select {
	case <-hold.arrived:
	case <-time.After(takeoverWait):
		t.Fatal("the answer was never posted")
	}
	a.kill(t)
	time.Sleep(200 * time.Millisecond) // the held post sees its client gone
	hold.lift()
	c.finishedOnce(e, tool, thread, card, closedAnswer, "closed")
}

// Killed while the card's update is retried after a 429: B updates it.
func TestCrashWhileCardUpdateRateLimited(t *testing.T) {
	t.Parallel()
	c, tool, _, a, _ := crashCluster(t)
	thread, card, e := c.mentionTicket(a)
	// The decision's update passes; the outcome's gets 429 and waits.
	c.slack.RateLimit("chat.update", 1, time.Hour)
	postSigned(t, a.base+"/slack/interactivity", "application/x-www-form-urlencoded", e.clickPayload(alice, "T0FAKE", card, bot.ActionIDApprove))
	waitUntil(t, takeoverWait, "a chat.update answered 429", func() bool {
		for _, call := range c.slack.Calls("chat.update") {
			if call.Status == http.StatusTooManyRequests {
				return true
			}
		}
		return false
	})
	a.kill(t)
	c.slack.RateLimit("chat.update", 0, 0)
	c.finishedOnce(e, tool, thread, card, closedAnswer, "closed")
}

// Killed after the claim, before the tool: A is frozen the moment Redis
// ran its claim of the resumed run (the freeze lever, freezeAt), and the
// test checks that A holds the claim and began no tool; then A is killed.
// B takes the run over once A's heartbeat is gone and runs the tool, once.
// A may get past the claim before the signal lands: that attempt is
// logged and the case runs again with a fresh cluster, a bounded number
// of times.
func TestCrashAfterClaimBeforeTool(t *testing.T) {
	t.Parallel()
	const attempts = 5
	for i := 1; i <= attempts; i++ {
		var frozen bool
		t.Run(fmt.Sprintf("attempt %d", i), func(t *testing.T) { frozen = crashAfterClaim(t) })
		if frozen || t.Failed() {
			return
		}
	}
	t.Fatalf("A got past its claim before it froze in each of %d attempts", attempts)
}

// crashAfterClaim runs one attempt of TestCrashAfterClaimBeforeTool; it
// reports false if A got past the claim before it froze.
func crashAfterClaim(t *testing.T) bool {
	// Redis's replies reach A 20 ms late, so the freeze lands before A
	// acts on the claim's reply (it still may not, on a loaded host).
	c, tool, _, a, _, ownerA := crashClusterSlowA(t, 20*time.Millisecond)
	thread, card, e := c.mentionTicket(a)
	rdb := c.redis.Client(t)
	frozen := c.freezeAt(a, resumeClaimBy(ownerA))
	// The click lands on A: a hibernated run resumes on the replica that
	// records the decision, which claims it directly. A may freeze at a
	// waiter's poll while it handles the click, so the click is answered
	// only once the loop below thaws it.
	clicked := make(chan error, 1)
	go func() {
		clicked <- postSignedErr(t.Context(), a.base+"/slack/interactivity", "application/x-www-form-urlencoded", e.clickPayload(alice, "T0FAKE", card, bot.ActionIDApprove))
	}()
	var claimKey, holder string
	// A bound on the whole attempt, not only on each freeze: on a loaded
	// host A may be frozen and thawed at its polls many times.
	deadline := time.After(2 * takeoverWait)
	for range 50 {
		var args string
		select {
		case args = <-frozen:
		case <-time.After(takeoverWait):
			t.Fatal("A never claimed the run")
		case <-deadline:
			t.Fatalf("A did not freeze at its claim within %s (it was frozen at its token's polls only)", 2*takeoverWait)
		}
		claimKey = quotedArg(args, "slackbot:claim:")
		if holder = rdb.Get(t.Context(), claimKey).Val(); holder != "" {
			break
		}
		// A looked at its token before the decision (a waiter's poll
		// carries the claim key too): let it go on to the claim.
		frozen = c.freezeAt(a, resumeClaimBy(ownerA))
		a.thaw(t)
	}
	if !strings.HasPrefix(strings.TrimPrefix(holder, "@"), ownerA) {
		t.Fatalf("A froze at its claim, but the claim %s is held by %q", claimKey, holder)
	}
	// A claims the run after it answered the click; a click still
	// unanswered means A froze before its answer left (a bound, for a
	// loaded host, not a measure): this attempt proves nothing.
	select {
	case err := <-clicked:
		if err != nil {
			t.Fatalf("the click on A: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Logf("A froze at its claim before its answer to the click left")
		return false
	}
	token := strings.TrimPrefix(claimKey, "slackbot:claim:")
	runID := rdb.HGet(t.Context(), "slackbot:a:"+token, "run").Val()
	for field := range rdb.HGetAll(t.Context(), "slackbot:exec:"+runID).Val() {
		if strings.HasSuffix(field, ".s") || tool.calls.Load() > 0 {
			t.Logf("A got past its claim before it froze: the journal of run %s has %s, the tool ran %d times", runID, field, tool.calls.Load())
			return false
		}
	}
	a.kill(t)
	c.finishedOnce(e, tool, thread, card, closedAnswer, "closed")
	return true
}
