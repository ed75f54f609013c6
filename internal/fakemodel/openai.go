package fakemodel

// The OpenAI Responses API as Codex 0.171.0 speaks it: POST /v1/responses
// with "stream": true, answered with server-sent events. Observed with the
// real binary (a capture of its requests): every turn sends the whole
// input so far (messages, the model's function_call / custom_tool_call
// items, and Codex's function_call_output / custom_tool_call_output
// items); the tools it offers a model whose metadata it knows (gpt-5.5,
// from its built-in catalog) include the function exec_command
// ({"cmd": …}) and the freeform custom tool apply_patch (the patch as
// plain text). A stream is response.created, then for each output item
// response.output_item.added and response.output_item.done, then
// response.completed with the usage.

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// OpenAIModel is the model name the fake answers as. It is one of Codex's
// built-in models, so Codex offers it its full tool set (apply_patch
// among them) without asking a server for model metadata.
const OpenAIModel = "gpt-5.5"

// maxOpenAIRequest bounds a request body the fake reads.
const maxOpenAIRequest = 16 << 20

// OpenAITurn is one scripted answer of the model: a text message, a shell
// command through exec_command, or a patch through apply_patch. Exactly
// one of the fields is set.
type OpenAITurn struct {
	Text  string
	Exec  string // exec_command's cmd
	Patch string // apply_patch's input, "*** Begin Patch" … "*** End Patch"
}

// OpenAI is a fake OpenAI Responses API on loopback. It plays its turns
// in order, one per request, then answers "Done." to every further
// request, so the agent's turn ends.
type OpenAI struct {
	// URL is the API's base URL, ending in /v1, as Codex's model provider
	// base_url takes it.
	URL string

	mu       sync.Mutex
	turns    []OpenAITurn
	next     int
	requests []OpenAIRequest
}

// OpenAIRequest is one request the fake received, as the API reads it.
type OpenAIRequest struct {
	Model string            `json:"model"`
	Input []json.RawMessage `json:"input"`
}

// openAIItem is the part of an input item the fake reads.
type openAIItem struct {
	Type   string          `json:"type"`
	CallID string          `json:"call_id"`
	Output json.RawMessage `json:"output"`
}

// StartOpenAI serves turns on a loopback port until t ends.
func StartOpenAI(t testing.TB, turns ...OpenAITurn) *OpenAI {
	t.Helper()
	o := &OpenAI{turns: turns}
	srv := httptest.NewServer(http.HandlerFunc(o.serve))
	t.Cleanup(srv.Close)
	o.URL = srv.URL + "/v1"
	return o
}

// CallID is the call id of the tool call of the turn at index i of the
// script.
func CallID(i int) string { return fmt.Sprintf("call_fake_%d", i) }

// Requests returns the requests received so far.
func (o *OpenAI) Requests() []OpenAIRequest {
	o.mu.Lock()
	defer o.mu.Unlock()
	return append([]OpenAIRequest(nil), o.requests...)
}

// Output returns what Codex sent back to the model for the tool call
// callID (its function_call_output or custom_tool_call_output, as text),
// and whether any request held one.
func (o *OpenAI) Output(callID string) (string, bool) {
	for _, r := range o.Requests() {
		for _, raw := range r.Input {
			var it openAIItem
			if json.Unmarshal(raw, &it) != nil || it.CallID != callID {
				continue
			}
			if it.Type == "function_call_output" || it.Type == "custom_tool_call_output" {
				return outputText(it.Output), true
			}
		}
	}
	return "", false
}

// outputText is an output as text: a string, or the texts of its content
// parts.
func outputText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var parts []struct {
		Text string `json:"text"`
	}
	if json.Unmarshal(raw, &parts) == nil {
		var b strings.Builder
		for _, p := range parts {
			b.WriteString(p.Text)
		}
		return b.String()
	}
	return string(raw)
}

func (o *OpenAI) serve(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || r.URL.Path != "/v1/responses" {
		http.NotFound(w, r)
		return
	}
	var req OpenAIRequest
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxOpenAIRequest))
	if err == nil {
		err = json.Unmarshal(body, &req)
	}
	if err != nil {
		http.Error(w, "fakemodel: "+err.Error(), http.StatusBadRequest)
		return
	}
	o.mu.Lock()
	o.requests = append(o.requests, req)
	n := o.next
	turn := OpenAITurn{Text: "Done."}
	if n < len(o.turns) {
		turn = o.turns[n]
	}
	o.next++
	o.mu.Unlock()

	w.Header().Set("Content-Type", "text/event-stream")
	respID := fmt.Sprintf("resp_fake_%d", n)
	events := []map[string]any{{"type": "response.created", "response": map[string]any{"id": respID}}}
	item := turnItem(turn, n)
	events = append(events,
		map[string]any{"type": "response.output_item.added", "output_index": 0, "item": item},
		map[string]any{"type": "response.output_item.done", "output_index": 0, "item": item},
		map[string]any{"type": "response.completed", "response": map[string]any{
			"id": respID, "usage": map[string]any{
				"input_tokens": 10, "input_tokens_details": map[string]any{"cached_tokens": 0},
				"output_tokens": 5, "output_tokens_details": map[string]any{"reasoning_tokens": 0},
				"total_tokens": 15,
			},
		}})
	for _, ev := range events {
		b, _ := json.Marshal(ev)
		fmt.Fprintf(w, "event: %s\ndata: %s\n\n", ev["type"], b)
	}
}

// turnItem is the output item of the turn at index n.
func turnItem(turn OpenAITurn, n int) map[string]any {
	switch {
	case turn.Exec != "":
		args, _ := json.Marshal(map[string]any{"cmd": turn.Exec})
		return map[string]any{"type": "function_call", "id": fmt.Sprintf("fc_fake_%d", n), "status": "completed",
			"name": "exec_command", "arguments": string(args), "call_id": CallID(n)}
	case turn.Patch != "":
		return map[string]any{"type": "custom_tool_call", "id": fmt.Sprintf("ctc_fake_%d", n), "status": "completed",
			"name": "apply_patch", "input": turn.Patch, "call_id": CallID(n)}
	}
	return map[string]any{"type": "message", "id": fmt.Sprintf("msg_fake_%d", n), "role": "assistant", "status": "completed",
		"content": []map[string]any{{"type": "output_text", "text": turn.Text, "annotations": []any{}}}}
}
