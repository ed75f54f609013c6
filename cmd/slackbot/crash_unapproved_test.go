package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/slackapprove/slackbot/bot"
)

// Crash cases of a run whose approved tool is followed by a tool that
// needs no approval: A is killed while that tool runs, or once its return
// is recorded; B takes the run over from its checkpoint and runs neither
// tool again.

// stepsLLM is an OpenAI-compatible model that calls
// tickets__close_ticket, then tickets__add_note once the ticket is
// closed, then answers "Done: " and the tools' results. Like a real
// model, it names its calls differently each time it is asked (the
// request count is in the ids), so a process that asks it again gets
// other calls than the one that died.
type stepsLLM struct{ requests atomic.Int32 }

func (m *stepsLLM) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	n := m.requests.Add(1)
	var req struct {
		Model    string           `json:"model"`
		Messages []map[string]any `json:"messages"`
	}
	body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	if err := json.Unmarshal(body, &req); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	var results []string
	for _, msg := range req.Messages {
		if msg["role"] == "tool" {
			results = append(results, fmt.Sprint(msg["content"]))
		}
	}
	call := func(tool string) map[string]any {
		return map[string]any{"role": "assistant", "content": nil, "tool_calls": []any{map[string]any{
			"id": fmt.Sprintf("call_%s_%d", tool, n), "type": "function",
			"function": map[string]any{"name": "tickets__" + tool, "arguments": `{"id":7}`},
		}}}
	}
	var message map[string]any
	switch len(results) {
	case 0:
		message = call("close_ticket")
	case 1:
		message = call("add_note")
	default:
		message = map[string]any{"role": "assistant", "content": "Done: " + strings.Join(results, " / ")}
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{
		"id": fmt.Sprintf("chatcmpl-%d", n), "object": "chat.completion", "created": time.Now().Unix(), "model": req.Model,
		"choices": []any{map[string]any{"index": 0, "message": message, "finish_reason": "stop"}},
	})
}

// stepsCluster is a crash cluster whose model is stepsLLM.
func stepsCluster(t *testing.T) (c *cluster, tool *crashTool, a, b *proc, ownerA string) {
	t.Helper()
	llm := httptest.NewServer(&stepsLLM{})
	t.Cleanup(llm.Close)
	c, tool, _, a, b, ownerA = crashClusterSlowA(t, 20*time.Millisecond,
		"MODEL=openai:gpt-test", "OPENAI_BASE_URL="+llm.URL+"/v1", "OPENAI_API_KEY=sk-test-0123456789")
	return c, tool, a, b, ownerA
}

// Killed while the tool that needs no approval runs (after the approved
// one ran): B goes on from A's checkpoint, runs neither tool again, and
// tells the model the note's outcome was lost.
func TestCrashWhileUnapprovedToolRuns(t *testing.T) {
	t.Parallel()
	c, tool, a, _, _ := stepsCluster(t)
	tool.noteHeld.Store(true)
	thread, card, e := c.mentionTicket(a)
	postSigned(t, a.base+"/slack/interactivity", "application/x-www-form-urlencoded", e.clickPayload(alice, "T0FAKE", card, bot.ActionIDApprove))
	select {
	case <-tool.noteStarted:
	case <-time.After(takeoverWait):
		t.Fatal("the note tool never ran")
	}
	a.kill(t)
	c.finishedOnce(e, tool, thread, card, "Done: closed / The tool may have run; its result was lost.", "closed")
	if n := tool.notes.Load(); n != 1 {
		t.Errorf("the note tool ran %d times, want exactly once", n)
	}
}

// Killed after the tool that needs no approval returned and its return
// was recorded (A is frozen as Redis records it): B reuses the recorded
// return and runs neither tool again.
func TestCrashAfterUnapprovedToolReturned(t *testing.T) {
	t.Parallel()
	c, tool, a, _, _ := stepsCluster(t)
	thread, card, e := c.mentionTicket(a)
	frozen := c.freezeAt(a, func(args string) bool {
		return strings.HasPrefix(strings.ToLower(args), `"hset" "slackbot:exec:`) && strings.Contains(args, `_add_note_`) && strings.Contains(args, `.r"`)
	})
	postSigned(t, a.base+"/slack/interactivity", "application/x-www-form-urlencoded", e.clickPayload(alice, "T0FAKE", card, bot.ActionIDApprove))
	var args string
	select {
	case args = <-frozen:
	case <-time.After(takeoverWait):
		t.Fatal("A never recorded the note's return")
	}
	key := quotedArg(args, "slackbot:exec:")
	rdb := c.redis.Client(t)
	waitUntil(t, 5*time.Second, "the note's return in the journal", func() bool {
		for f := range rdb.HGetAll(t.Context(), key).Val() {
			if strings.Contains(f, "_add_note_") && strings.HasSuffix(f, ".r") {
				return true
			}
		}
		return false
	})
	if got := e.replies(general, thread); len(got) != 0 {
		t.Fatalf("A answered before it froze: %q", got)
	}
	a.kill(t)
	c.finishedOnce(e, tool, thread, card, "Done: closed / noted", "closed")
	if n := tool.notes.Load(); n != 1 {
		t.Errorf("the note tool ran %d times, want exactly once", n)
	}
}
