package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/slackapprove/slackbot/bot"
	"github.com/slackapprove/slackbot/internal/slackfake"
	"github.com/slackapprove/slackbot/internal/slackfaketest"
	"github.com/slackapprove/slackbot/store/redistest"
)

// fakeOpenAI speaks enough of the Chat Completions API for one tool call:
// the first request gets a delete_customer call, a request that carries the
// tool's result gets a final answer quoting it. With fail set it answers
// 401 like OpenAI does for a bad key.
type fakeOpenAI struct {
	mu       sync.Mutex
	requests []map[string]any
	fail     bool
}

func (f *fakeOpenAI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	var req map[string]any
	_ = json.Unmarshal(body, &req)
	f.mu.Lock()
	f.requests = append(f.requests, req)
	f.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	if f.fail {
		w.WriteHeader(http.StatusUnauthorized)
		fmt.Fprint(w, `{"error":{"message":"Incorrect API key provided.","type":"invalid_request_error","code":"invalid_api_key"}}`)
		return
	}
	msgs, _ := req["messages"].([]any)
	last, _ := msgs[len(msgs)-1].(map[string]any)
	var message map[string]any
	if last["role"] == "tool" {
		message = map[string]any{"role": "assistant", "content": "Done: " + fmt.Sprint(last["content"])}
	} else {
		message = map[string]any{"role": "assistant", "content": nil, "tool_calls": []any{map[string]any{
			"id": "call_1", "type": "function",
			"function": map[string]any{"name": "delete_customer", "arguments": `{"customer_id":"C-42"}`},
		}}}
	}
	_ = json.NewEncoder(w).Encode(map[string]any{
		"id": "chatcmpl-1", "object": "chat.completion", "created": time.Now().Unix(), "model": req["model"],
		"choices": []any{map[string]any{"index": 0, "message": message, "finish_reason": "stop"}},
	})
}

func startWithOpenAI(t *testing.T, provider *fakeOpenAI) (string, *slackfake.Server) {
	t.Helper()
	llm := httptest.NewServer(provider)
	t.Cleanup(llm.Close)
	fake, fakeSrv := slackfaketest.NewTestServer(t, slackfake.WithDemoWorkspace())
	rs := redistest.StartServer(t)
	routes := filepath.Join(t.TempDir(), "routes.yaml")
	if err := os.WriteFile(routes, []byte(testRoutes), 0o600); err != nil {
		t.Fatal(err)
	}
	vars := map[string]string{
		"SLACK_BOT_TOKEN": fake.Token(), "SLACK_SIGNING_SECRET": testSecret, "SLACK_API_URL": slackfaketest.APIURL(fakeSrv),
		"REDIS_URL": rs.URL(), "ROUTES_FILE": routes, "ADDR": "127.0.0.1:0", "TOOLS": "demo",
		"MODEL": "openai:gpt-test", "OPENAI_BASE_URL": llm.URL + "/v1", "OPENAI_API_KEY": "sk-test-0123456789",
	}
	base, _ := startRun(t, vars, "serve")
	return base, fake
}

func mentionAt(t *testing.T, base string, fake *slackfake.Server, text string) string {
	t.Helper()
	full := "<@" + fake.BotUserID() + "> " + text
	msg, err := fake.PostAsUser(general, carol, full, "")
	if err != nil {
		t.Fatal(err)
	}
	event, _ := json.Marshal(map[string]any{
		"type": "event_callback", "team_id": "T0FAKE", "event_id": "Ev" + msg.TS, "event_time": time.Now().Unix(),
		"event": map[string]any{"type": "app_mention", "user": carol, "text": full, "ts": msg.TS, "channel": general},
	})
	postSigned(t, base+"/slack/events", "application/json", event)
	return msg.TS
}

// MODEL=openai:<model> with OPENAI_BASE_URL drives a run through an
// OpenAI-compatible server: the model's tool call waits for approval in
// Slack, and its final answer lands in the thread.
func TestServeWithOpenAICompatibleModel(t *testing.T) {
	t.Parallel()
	provider := &fakeOpenAI{}
	base, fake := startWithOpenAI(t, provider)
	thread := mentionAt(t, base, fake, "remove customer C-42 please")
	e := &env{t: t, slack: fake}
	card := e.waitCards(1)[0]
	if !strings.Contains(cardText(card), "C-42") {
		t.Errorf("card does not show the model's arguments: %s", card.BlocksJSON)
	}
	postSigned(t, base+"/slack/interactivity", "application/x-www-form-urlencoded", e.clickPayload(bob, "T0FAKE", card, bot.ActionIDApprove))
	if got, want := e.waitReply(general, thread), "Done: deleted C-42"; got != want {
		t.Errorf("answer: got %q, want %q", got, want)
	}
	provider.mu.Lock()
	defer provider.mu.Unlock()
	if len(provider.requests) != 2 {
		t.Fatalf("provider saw %d requests, want 2", len(provider.requests))
	}
	first := provider.requests[0]
	if first["model"] != "gpt-test" {
		t.Errorf("model %v, want gpt-test", first["model"])
	}
	if tools, _ := first["tools"].([]any); len(tools) != 4 {
		t.Errorf("offered %d tools, want the 4 demo tools", len(tools))
	}
}

// A provider that fails gives a clear error in the thread, without the key.
func TestServeModelFailureIsToldInThread(t *testing.T) {
	t.Parallel()
	base, fake := startWithOpenAI(t, &fakeOpenAI{fail: true})
	thread := mentionAt(t, base, fake, "hello")
	e := &env{t: t, slack: fake}
	got := e.waitReply(general, thread)
	for _, want := range []string{"The agent run failed", "openai gpt-test", "401", "Incorrect API key"} {
		if !strings.Contains(got, want) {
			t.Errorf("thread says %q; want it to contain %q", got, want)
		}
	}
	if strings.Contains(got, "sk-test-0123456789") {
		t.Error("the API key is in the thread")
	}
}
