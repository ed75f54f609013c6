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
	"syscall"
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
	// done, if set, runs after the tool did its work, before it answers.
	done    atomic.Pointer[func()]
	started chan struct{}
	release chan struct{}
}

func newCrashTool(t *testing.T) *crashTool {
	t.Helper()
	ct := &crashTool{started: make(chan struct{}, 4), release: make(chan struct{})}
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
	if testing.Short() {
		t.Skip("starts processes")
	}
	tool = newCrashTool(t)
	c = newCluster(t, durableRoutes+`mcp_servers:
  - name: tickets
    url: `+tool.srv.URL+`
`)
	c.env = append(c.env, "MODEL=test:tickets__close_ticket", "TOOLS=")
	hold = c.holdSlack()
	return c, tool, hold, c.start("A"), c.start("B")
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
	c, tool, _, a, b := crashCluster(t)
	thread, card, e := c.mentionTicket(a)
	if err := a.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
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

// Killed after the tool ran, before its return was recorded: A is frozen
// (SIGSTOP) as the tool answers, so it never records the return, then
// killed. B does not run the tool again and says its outcome was lost.
func TestCrashAfterToolBeforeOutcome(t *testing.T) {
	c, tool, _, a, _ := crashCluster(t)
	stop := func() { _ = a.cmd.Process.Signal(syscall.SIGSTOP) }
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
