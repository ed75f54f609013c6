package mcpgateway_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/slackapprove/slackbot/agentrunner"
	"github.com/slackapprove/slackbot/approval"
	"github.com/slackapprove/slackbot/internal/testbin"
	"github.com/slackapprove/slackbot/mcpgateway"
	"github.com/slackapprove/slackbot/receipt"
)

// tsDir is the node project of TestTSClient: @modelcontextprotocol/sdk,
// pinned by its committed lockfile, and driver.mjs.
const tsDir = "testdata/tsclient"

// tsDriver is driver.mjs running under node: the TypeScript SDK's MCP
// client, taking commands on stdin and answering on stdout, one JSON
// line each (see driver.mjs).
type tsDriver struct {
	t     *testing.T
	stdin io.WriteCloser
	next  int

	mu      sync.Mutex
	answers map[string]chan tsAnswer
	// done is closed when stdout ends.
	done chan struct{}
}

// tsAnswer is one line of driver.mjs's output.
type tsAnswer struct {
	ID       string    `json:"id"`
	Tools    []tsTool  `json:"tools"`
	Result   *tsResult `json:"result"`
	Progress int       `json:"progress"`
	Error    *tsError  `json:"error"`
	Aborted  string    `json:"aborted"`
	Closed   string    `json:"closed"`
	// Raw is the whole line, for messages.
	Raw json.RawMessage `json:"-"`
}

type tsTool struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	InputSchema json.RawMessage `json:"inputSchema"`
	Annotations map[string]any  `json:"annotations"`
}

type tsResult struct {
	Content []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	} `json:"content"`
	IsError bool           `json:"isError"`
	Meta    map[string]any `json:"_meta"`
}

type tsError struct {
	Code    *int   `json:"code"`
	Message string `json:"message"`
}

// text joins the result's text items, as text does for the Go SDK's.
func (r *tsResult) text() string {
	var parts []string
	for _, c := range r.Content {
		if c.Type == "text" {
			parts = append(parts, c.Text)
		}
	}
	return strings.Join(parts, "\n")
}

// startTSDriver installs the node project when its packages are missing
// (npm ci from the lockfile) and starts driver.mjs against the gateway
// with key. Without node the test fails when node is required
// (scripts/test, CI=true) and is skipped otherwise (internal/testbin).
func startTSDriver(t *testing.T, url, key string) *tsDriver {
	t.Helper()
	node := testbin.Find(t, "node")
	dir, err := filepath.Abs(tsDir)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "node_modules", ".package-lock.json")); err != nil {
		npm := testbin.Find(t, "npm")
		cmd := exec.CommandContext(t.Context(), npm, "ci", "--no-audit", "--no-fund")
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "PATH="+filepath.Dir(node)+string(os.PathListSeparator)+os.Getenv("PATH"))
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("npm ci in %s: %v\n%s", tsDir, err, out)
		}
	}
	cmd := exec.Command(node, "driver.mjs")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "MCP_URL="+url, "MCP_KEY="+key)
	cmd.Stderr = testWriter{t}
	cmd.WaitDelay = 5 * time.Second
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start node driver.mjs: %v", err)
	}
	d := &tsDriver{t: t, stdin: stdin, answers: map[string]chan tsAnswer{}, done: make(chan struct{})}
	go d.read(stdout)
	t.Cleanup(func() {
		_ = stdin.Close() // driver.mjs closes its clients and exits
		select {
		case <-d.done:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
		}
		if err := cmd.Wait(); err != nil {
			t.Errorf("node driver.mjs: %v", err)
		}
	})
	return d
}

// read hands each answer to whoever waits for its id.
func (d *tsDriver) read(stdout io.Reader) {
	defer close(d.done)
	sc := bufio.NewScanner(stdout)
	sc.Buffer(nil, 4<<20)
	for sc.Scan() {
		var a tsAnswer
		if err := json.Unmarshal(sc.Bytes(), &a); err != nil {
			d.t.Errorf("driver.mjs wrote %q: %v", sc.Text(), err)
			continue
		}
		a.Raw = json.RawMessage(sc.Text())
		d.answer(a.ID) <- a
	}
}

func (d *tsDriver) answer(id string) chan tsAnswer {
	d.mu.Lock()
	defer d.mu.Unlock()
	ch, ok := d.answers[id]
	if !ok {
		ch = make(chan tsAnswer, 1)
		d.answers[id] = ch
	}
	return ch
}

// send sends a command (its id is set here) and returns the id whose
// answer wait returns.
func (d *tsDriver) send(cmd map[string]any) string {
	d.t.Helper()
	d.next++
	id := fmt.Sprint(d.next)
	cmd["id"] = id
	b, err := json.Marshal(cmd)
	if err != nil {
		d.t.Fatal(err)
	}
	if _, err := d.stdin.Write(append(b, '\n')); err != nil {
		d.t.Fatalf("write to driver.mjs: %v", err)
	}
	return id
}

// wait returns the answer to the command id.
func (d *tsDriver) wait(id string) tsAnswer {
	d.t.Helper()
	select {
	case a := <-d.answer(id):
		return a
	case <-d.done:
		d.t.Fatalf("driver.mjs ended before answering command %s", id)
	case <-time.After(20 * time.Second):
		d.t.Fatalf("no answer to command %s in 20s", id)
	}
	return tsAnswer{}
}

// call calls a tool and returns the command's id.
func (d *tsDriver) call(tool string, args any, meta ...map[string]any) string {
	cmd := map[string]any{"op": "call", "name": tool, "arguments": args}
	if len(meta) > 0 {
		cmd["meta"] = meta[0]
	}
	return d.send(cmd)
}

// result waits for a call's result; an error answer fails the test.
func (d *tsDriver) result(id string) (*tsResult, int) {
	d.t.Helper()
	a := d.wait(id)
	if a.Error != nil || a.Result == nil {
		d.t.Fatalf("call %s: %s; want a result", id, a.Raw)
	}
	return a.Result, a.Progress
}

// abort aborts call id with its AbortSignal, the client staying
// connected, and checks that the call was rejected.
func (d *tsDriver) abort(id string) {
	d.t.Helper()
	if a := d.wait(d.send(map[string]any{"op": "abort", "target": id})); a.Error != nil {
		d.t.Fatalf("abort: %s", a.Raw)
	}
	if a := d.wait(id); a.Result != nil || a.Error == nil || !strings.Contains(a.Error.Message, "the agent gave up") {
		d.t.Errorf("the aborted call's answer %s; want the abort's error", a.Raw)
	}
}

// TestTSClient: the flows of the gateway's tests, driven by an MCP client
// nobody here wrote: @modelcontextprotocol/sdk's TypeScript client (the
// one Claude Code and most agents' MCP support are built on), from npm at
// the version its lockfile pins, over streamable HTTP with the bearer key
// in requestInit. node plays the agent; this test plays the approvers and
// checks the cards, the decisions and the upstream calls.
func TestTSClient(t *testing.T) {
	e := newEnv(t, envOptions{progressEvery: 20 * time.Millisecond})
	d := startTSDriver(t, e.srv.URL+"/mcp", billingKey)
	tsListTools(t, d)
	tsReadOnly(t, e, d)
	tsApprovedWithEdit(t, e, d)
	tsApprovedStdio(t, e, d)
	tsDenied(t, e, d)
	tsExpired(t, e, d)
	tsPrompt(t, e, d)
	tsAbort(t, e, d)
	tsDisconnect(t, e, d)
}

func tsListTools(t *testing.T, d *tsDriver) {
	a := d.wait(d.send(map[string]any{"op": "list"}))
	byName := map[string]tsTool{}
	var names []string
	for _, tool := range a.Tools {
		byName[tool.Name] = tool
		names = append(names, tool.Name)
	}
	want := []string{"approval_prompt", "files__write", "flaky__do", "tickets__create_issue", "tickets__search", "tickets__slow_close"}
	if diff := cmp.Diff(want, sortedCopy(names)); diff != "" {
		t.Fatalf("tools (-want +got):\n%s\n%s", diff, a.Raw)
	}
	if s := byName["tickets__search"]; s.Annotations["readOnlyHint"] != true || s.Annotations["title"] != "Search" || s.Description != "Search tickets." {
		t.Errorf("tickets__search = %+v; want the upstream's description and annotations", s)
	}
	c := byName["tickets__create_issue"]
	if !strings.Contains(string(c.InputSchema), `"required":["title"]`) || c.Annotations["destructiveHint"] != true {
		t.Errorf("tickets__create_issue = %+v; want the upstream's schema (title required) and destructiveHint", c)
	}
}

func tsReadOnly(t *testing.T, e *env, d *tsDriver) {
	res, _ := d.result(d.call("tickets__search", map[string]any{"query": "printer"}))
	if res.IsError || res.text() != "found: printer" {
		t.Errorf("read-only call = %q (isError %v); want the upstream's", res.text(), res.IsError)
	}
	if n := len(e.cards()); n != 0 {
		t.Errorf("%d cards posted for a read-only tool; want none", n)
	}
	if n := len(e.tickets.callsOf("search")); n != 1 {
		t.Errorf("upstream got %d search calls; want 1", n)
	}
	if res.Meta[mcpgateway.ReceiptMetaKey] != nil {
		t.Errorf("read-only result _meta = %v; want no receipt (nobody approved it)", res.Meta)
	}
}

// tsApprovedWithEdit: card 1, approved with an edit.
func tsApprovedWithEdit(t *testing.T, e *env, d *tsDriver) {
	id := d.call("tickets__create_issue", map[string]any{"title": "printer on fire"})
	token, callID, card := e.waitCard(1)
	blocks, _ := json.Marshal(card.Blocks)
	// The SDK speaks 2025-11-25, whose clientInfo is only in initialize,
	// which a stateless server does not keep: the card names the client
	// by its User-Agent (node's fetch says "node").
	if !strings.Contains(card.Text, "Run tickets.create_") || !strings.Contains(string(blocks), "billing via node") {
		t.Errorf("card %q %s; want the tool and the requester (the key's name via the client's User-Agent)", card.Text, blocks)
	}
	// A few progress intervals pass while people look at the card.
	time.Sleep(200 * time.Millisecond)
	if n := len(e.tickets.callsOf("create_issue")); n != 0 {
		t.Fatalf("upstream called %d times before the decision", n)
	}
	edited := `{"title":"printer smoking"}`
	e.decide(token, callID, approval.Decision{Action: approval.ActionApprove, OverrideArgs: json.RawMessage(edited)})
	res, progress := d.result(id)
	if res.IsError || res.text() != "created #1: printer smoking" || res.Meta["upstream"] != "kept" {
		t.Errorf("result = %q (isError %v, _meta %v); want the upstream's, edited title, its _meta kept", res.text(), res.IsError, res.Meta)
	}
	if progress == 0 {
		t.Error("no progress notification reached the client while it waited")
	}
	calls := e.tickets.callsOf("create_issue")
	if len(calls) != 1 || !jsonEqual(calls[0], edited) {
		t.Errorf("upstream calls = %s; want exactly one, with the edited arguments", calls)
	}
	jws, _ := res.Meta[mcpgateway.ReceiptMetaKey].(string)
	if _, err := e.receipts.Verify(jws, receipt.Expect{CallID: callID, Tool: "tickets__create_issue", Args: json.RawMessage(edited), Token: token}); err != nil {
		t.Errorf("the result's receipt: %v (_meta %v)", err, res.Meta)
	}
}

// tsApprovedStdio: card 2, an upstream over stdio, approved as asked.
func tsApprovedStdio(t *testing.T, e *env, d *tsDriver) {
	args := `{"path":"a.txt","content":"hi"}`
	id := d.call("files__write", json.RawMessage(args))
	token, callID, _ := e.waitCard(2)
	if got := stdioCalls(t, e.filesLog); len(got) != 0 {
		t.Fatalf("stdio server called before the decision: %q", got)
	}
	e.decide(token, callID, approval.Decision{Action: approval.ActionApprove})
	res, _ := d.result(id)
	if res.IsError || res.text() != "wrote a.txt" {
		t.Errorf("result = %q (isError %v); want the stdio server's", res.text(), res.IsError)
	}
	if got := stdioCalls(t, e.filesLog); len(got) != 1 || !jsonEqual(json.RawMessage(got[0]), args) {
		t.Errorf("stdio server calls = %q; want one with the arguments as asked", got)
	}
	jws, _ := res.Meta[mcpgateway.ReceiptMetaKey].(string)
	if _, err := e.receipts.Verify(jws, receipt.Expect{CallID: callID, Tool: "files__write", Args: json.RawMessage(args), Token: token}); err != nil {
		t.Errorf("the result's receipt: %v (_meta %v)", err, res.Meta)
	}
}

// tsDenied: card 3, denied with a reason.
func tsDenied(t *testing.T, e *env, d *tsDriver) {
	id := d.call("tickets__create_issue", map[string]any{"title": "x"})
	token, callID, _ := e.waitCard(3)
	e.decide(token, callID, approval.Decision{Action: approval.ActionDeny, Reason: "Not during the freeze."})
	res, _ := d.result(id)
	if !res.IsError || res.text() != "Not during the freeze." {
		t.Errorf("denied call = %q (isError %v); want a tool error with the reason", res.text(), res.IsError)
	}
	if n := len(e.tickets.callsOf("create_issue")); n != 1 {
		t.Errorf("upstream ran create_issue %d times; want only the approved call", n)
	}
}

// tsExpired: card 4, on the route that times out after 1s; nobody decides.
func tsExpired(t *testing.T, e *env, d *tsDriver) {
	res, _ := d.result(d.call("tickets__slow_close", map[string]any{"query": "7"}))
	if !res.IsError || !strings.HasPrefix(res.text(), agentrunner.NoDecisionPrefix) {
		t.Errorf("expired call = %q (isError %v); want %q…", res.text(), res.IsError, agentrunner.NoDecisionPrefix)
	}
	if n := len(e.cards()); n != 4 {
		t.Errorf("%d cards; want 4", n)
	}
	if n := len(e.tickets.callsOf("slow_close")); n != 0 {
		t.Errorf("upstream called %d times for an expired call", n)
	}
}

// tsPrompt: cards 5 to 7, approval_prompt with Claude Code's recorded
// requests: allow as asked, allow with an edit, deny.
func tsPrompt(t *testing.T, e *env, d *tsDriver) {
	for i, tt := range []struct {
		prompt   string
		decision approval.Decision
		want     string
	}{
		{"Bash", approval.Decision{Action: approval.ActionApprove},
			`{"behavior":"allow","updatedInput":{"command":"rm -rf build/","description":"Remove the build directory"}}`},
		{"Edit", approval.Decision{Action: approval.ActionApprove, OverrideArgs: json.RawMessage(`{"file_path":"/repo/main.go","old_string":"v1","new_string":"v3"}`)},
			`{"behavior":"allow","updatedInput":{"file_path":"/repo/main.go","old_string":"v1","new_string":"v3"}}`},
		{"MCP", approval.Decision{Action: approval.ActionDeny, Reason: "File it in Jira."},
			`{"behavior":"deny","message":"File it in Jira."}`},
	} {
		args := strings.Replace(recordedPrompts[tt.prompt], `"tool_use_id":"`, `"tool_use_id":"ts_`, 1)
		id := d.call(mcpgateway.PromptToolName, json.RawMessage(args))
		token, callID, _ := e.waitCard(5 + i)
		e.decide(token, callID, tt.decision)
		res, _ := d.result(id)
		if res.IsError || len(res.Content) != 1 || res.Content[0].Type != "text" || res.Content[0].Text != tt.want {
			t.Errorf("%s %s: result %+v; want one text item, exactly %s", tt.prompt, tt.decision.Action, res, tt.want)
		}
	}
}

// tsAbort: card 8; the agent aborts the call (its AbortSignal) and stays
// connected. The SDK rejects the call at once and sends
// notifications/cancelled in a POST of its own, which cancels the
// request: the card says so, and a later Approve runs nothing.
func tsAbort(t *testing.T, e *env, d *tsDriver) {
	id := d.call("tickets__create_issue", map[string]any{"title": "aborted"})
	token, callID, _ := e.waitCard(8)
	d.abort(id)
	e.waitCancelled(token, 8)
	e.approveLate(token, callID)
	for _, c := range e.tickets.callsOf("create_issue") {
		if strings.Contains(string(c), "aborted") {
			t.Errorf("upstream ran the aborted call %s", c)
		}
	}
}

// tsDisconnect: card 9; the client goes away while its call waits (its
// transport closed, which aborts the call's HTTP request): the request is
// cancelled, and the card says so.
func tsDisconnect(t *testing.T, e *env, d *tsDriver) {
	id := d.send(map[string]any{"op": "call", "client": "other", "name": "tickets__create_issue", "arguments": map[string]any{"title": "abandoned"}})
	token, _, _ := e.waitCard(9)
	if a := d.wait(d.send(map[string]any{"op": "close", "client": "other"})); a.Error != nil {
		t.Fatalf("close: %s", a.Raw)
	}
	if a := d.wait(id); a.Result != nil {
		t.Errorf("the call's answer %s; want an error (its client closed)", a.Raw)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		r, err := e.svc.Get(t.Context(), token)
		if err != nil {
			t.Fatal(err)
		}
		card := e.cards()[8].Text
		if r.State == approval.StateCancelled && strings.Contains(card, "Cancelled") {
			if r.EndedBy != billing {
				t.Errorf("cancelled by %q; want the client, %q", r.EndedBy, billing)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Errorf("request %s, card %q after the client went away; want cancelled, the card saying so", r.State, card)
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	for _, c := range e.tickets.callsOf("create_issue") {
		if strings.Contains(string(c), "abandoned") {
			t.Errorf("upstream ran the abandoned call %s", c)
		}
	}
}
