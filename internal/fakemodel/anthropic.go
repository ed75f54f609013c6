package fakemodel

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// This file is the Anthropic Messages API as Claude Code speaks it
// (https://docs.anthropic.com/en/api/messages, "Streaming messages"):
// POST /v1/messages with "stream": true answered with server-sent events
// message_start, content_block_start/delta/stop per block, message_delta
// (the stop reason) and message_stop; POST /v1/messages/count_tokens; and
// a harmless answer to anything else the CLI asks on startup, recorded so
// a test can see it.

// Anthropic is a fake Anthropic Messages API on loopback.
type Anthropic struct {
	// URL is the base URL to give the CLI (ANTHROPIC_BASE_URL).
	URL string

	script []Turn

	mu       sync.Mutex
	requests []MessagesRequest
	other    []string
}

// Turn is one scripted assistant message: text, tool calls, or both.
type Turn struct {
	Text     string
	ToolUses []ToolUse
	// Pause, when streamed, is how long the fake waits after each content
	// block before the next, as a model still writing its reply: the CLI
	// has the earlier blocks meanwhile.
	Pause time.Duration
}

// ToolUse is a tool call the model makes.
type ToolUse struct {
	ID    string
	Name  string
	Input any // marshalled to JSON
}

// TextTurn is a turn that says text and ends the model's turn.
func TextTurn(text string) Turn { return Turn{Text: text} }

// ToolTurn is a turn that calls one tool.
func ToolTurn(id, name string, input any) Turn {
	return Turn{ToolUses: []ToolUse{{ID: id, Name: name, Input: input}}}
}

// MessagesRequest is what the CLI posted to /v1/messages, as far as the
// tests read it.
type MessagesRequest struct {
	Model    string            `json:"model"`
	Stream   bool              `json:"stream"`
	System   json.RawMessage   `json:"system"`
	Tools    []json.RawMessage `json:"tools"`
	Messages []Message         `json:"messages"`
}

// Message is one message of a conversation.
type Message struct {
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
}

// Block is one content block of a message.
type Block struct {
	Type      string          `json:"type"`
	Text      string          `json:"text,omitempty"`
	ID        string          `json:"id,omitempty"`
	Name      string          `json:"name,omitempty"`
	Input     json.RawMessage `json:"input,omitempty"`
	ToolUseID string          `json:"tool_use_id,omitempty"`
	IsError   bool            `json:"is_error,omitempty"`
	Content   json.RawMessage `json:"content,omitempty"`
}

// Blocks returns m's content blocks; a string content is one text block.
func (m Message) Blocks() []Block {
	var s string
	if json.Unmarshal(m.Content, &s) == nil {
		return []Block{{Type: "text", Text: s}}
	}
	var bs []Block
	_ = json.Unmarshal(m.Content, &bs)
	return bs
}

// ResultText is the text of a tool_result block: its string content or
// the text of its text blocks.
func (b Block) ResultText() string {
	var s string
	if json.Unmarshal(b.Content, &s) == nil {
		return s
	}
	var bs []Block
	_ = json.Unmarshal(b.Content, &bs)
	var parts []string
	for _, c := range bs {
		if c.Type == "text" {
			parts = append(parts, c.Text)
		}
	}
	return strings.Join(parts, "\n")
}

// NewAnthropic starts a fake that plays script: the model's reply to a
// conversation with n assistant messages is script[n] (so a retried or
// resumed request gets the same turn), and past the script it says
// "done". Requests that offer no tools (Claude Code's side queries, such
// as a title) get a short text. The server stops with t.
func NewAnthropic(t testing.TB, script ...Turn) *Anthropic {
	t.Helper()
	a := &Anthropic{script: script}
	srv := httptest.NewServer(a)
	t.Cleanup(srv.Close)
	a.URL = srv.URL
	return a
}

// Requests returns the main-loop requests (those that offered tools) the
// CLI posted, in order.
func (a *Anthropic) Requests() []MessagesRequest {
	a.mu.Lock()
	defer a.mu.Unlock()
	var out []MessagesRequest
	for _, r := range a.requests {
		if len(r.Tools) > 0 {
			out = append(out, r)
		}
	}
	return out
}

// Other returns the method and path of every request that was not a
// message (startup calls, count_tokens).
func (a *Anthropic) Other() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]string(nil), a.other...)
}

// ToolResults returns every tool_result block the CLI sent back, across
// all requests, keyed by tool_use_id: the last one sent for each.
func (a *Anthropic) ToolResults() map[string]Block {
	out := map[string]Block{}
	for _, r := range a.Requests() {
		for _, m := range r.Messages {
			if m.Role != "user" {
				continue
			}
			for _, b := range m.Blocks() {
				if b.Type == "tool_result" {
					out[b.ToolUseID] = b
				}
			}
		}
	}
	return out
}

// ToolNames returns the names of the tools the last main-loop request
// offered.
func (a *Anthropic) ToolNames() []string {
	reqs := a.Requests()
	if len(reqs) == 0 {
		return nil
	}
	var names []string
	for _, raw := range reqs[len(reqs)-1].Tools {
		var tool struct {
			Name string `json:"name"`
		}
		_ = json.Unmarshal(raw, &tool)
		names = append(names, tool.Name)
	}
	return names
}

// ServeHTTP serves the API.
func (a *Anthropic) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch {
	case r.Method == http.MethodPost && r.URL.Path == "/v1/messages":
		a.messages(w, r)
	case r.Method == http.MethodPost && r.URL.Path == "/v1/messages/count_tokens":
		a.note(r)
		writeJSON(w, map[string]any{"input_tokens": 100})
	default:
		// Whatever else the CLI asks on startup (its docs list none for
		// an API key; observed calls are recorded) gets an empty object.
		a.note(r)
		writeJSON(w, map[string]any{})
	}
}

func (a *Anthropic) note(r *http.Request) {
	_, _ = io.Copy(io.Discard, io.LimitReader(r.Body, 1<<20))
	a.mu.Lock()
	a.other = append(a.other, r.Method+" "+r.URL.Path)
	a.mu.Unlock()
}

func (a *Anthropic) messages(w http.ResponseWriter, r *http.Request) {
	var req MessagesRequest
	if err := json.NewDecoder(io.LimitReader(r.Body, 64<<20)).Decode(&req); err != nil {
		http.Error(w, `{"type":"error","error":{"type":"invalid_request_error","message":"bad JSON"}}`, http.StatusBadRequest)
		return
	}
	a.mu.Lock()
	a.requests = append(a.requests, req)
	n := len(a.requests)
	a.mu.Unlock()
	turn := TextTurn("OK")
	if len(req.Tools) > 0 {
		turn = a.turnFor(req)
	}
	msg := turn.message(req.Model)
	// Each reply its own id: Claude Code 2.1.332 merges consecutive
	// assistant messages that share an id into one, so that a third
	// scripted turn would never be reached.
	msg.id = fmt.Sprintf("msg_fake_%d", n)
	if !req.Stream {
		writeJSON(w, msg.final())
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	f, _ := w.(http.Flusher)
	for _, ev := range msg.events() {
		fmt.Fprintf(w, "event: %s\ndata: %s\n\n", ev.name, ev.data)
		if ev.name == "content_block_stop" && turn.Pause > 0 && f != nil {
			f.Flush()
			select {
			case <-r.Context().Done():
				return
			case <-time.After(turn.Pause):
			}
		}
	}
	if f != nil {
		f.Flush()
	}
}

// turnFor is the scripted turn for a conversation: the one after as many
// assistant messages as it holds.
func (a *Anthropic) turnFor(req MessagesRequest) Turn {
	n := 0
	for _, m := range req.Messages {
		if m.Role == "assistant" {
			n++
		}
	}
	if n < len(a.script) {
		return a.script[n]
	}
	return TextTurn("done")
}

// reply is a turn as a message of the API.
type reply struct {
	id     string
	model  string
	blocks []map[string]any
	inputs []string // the JSON input of each tool_use block, "" for text
	stop   string
}

func (t Turn) message(model string) reply {
	m := reply{model: model, stop: "end_turn"}
	if t.Text != "" || len(t.ToolUses) == 0 {
		m.blocks = append(m.blocks, map[string]any{"type": "text", "text": t.Text})
		m.inputs = append(m.inputs, "")
	}
	for _, u := range t.ToolUses {
		in, err := json.Marshal(u.Input)
		if err != nil {
			panic(fmt.Sprintf("fakemodel: tool input of %s: %v", u.Name, err))
		}
		m.blocks = append(m.blocks, map[string]any{"type": "tool_use", "id": u.ID, "name": u.Name, "input": json.RawMessage(in)})
		m.inputs = append(m.inputs, string(in))
		m.stop = "tool_use"
	}
	return m
}

func (m reply) head() map[string]any {
	return map[string]any{
		"id": m.id, "type": "message", "role": "assistant", "model": m.model,
		"stop_reason": nil, "stop_sequence": nil,
		"usage": map[string]any{"input_tokens": 100, "output_tokens": 1},
	}
}

// final is the whole message, for a request that did not stream.
func (m reply) final() map[string]any {
	out := m.head()
	out["content"], out["stop_reason"] = m.blocks, m.stop
	out["usage"] = map[string]any{"input_tokens": 100, "output_tokens": 20}
	return out
}

type sseEvent struct {
	name string
	data []byte
}

// events is the message as the stream of server-sent events.
func (m reply) events() []sseEvent {
	var evs []sseEvent
	add := func(v map[string]any) {
		b, _ := json.Marshal(v)
		evs = append(evs, sseEvent{name: v["type"].(string), data: b})
	}
	head := m.head()
	head["content"] = []any{}
	add(map[string]any{"type": "message_start", "message": head})
	for i, b := range m.blocks {
		if b["type"] == "text" {
			add(map[string]any{"type": "content_block_start", "index": i, "content_block": map[string]any{"type": "text", "text": ""}})
			add(map[string]any{"type": "content_block_delta", "index": i, "delta": map[string]any{"type": "text_delta", "text": b["text"]}})
		} else {
			start := map[string]any{"type": "tool_use", "id": b["id"], "name": b["name"], "input": map[string]any{}}
			add(map[string]any{"type": "content_block_start", "index": i, "content_block": start})
			add(map[string]any{"type": "content_block_delta", "index": i, "delta": map[string]any{"type": "input_json_delta", "partial_json": m.inputs[i]}})
		}
		add(map[string]any{"type": "content_block_stop", "index": i})
	}
	add(map[string]any{"type": "message_delta", "delta": map[string]any{"stop_reason": m.stop, "stop_sequence": nil},
		"usage": map[string]any{"output_tokens": 20}})
	add(map[string]any{"type": "message_stop"})
	return evs
}
