package agentrunner_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/slackapprove/slackbot/agentrunner"
)

// pydanticHistory is a history as Pydantic AI's ModelMessagesTypeAdapter
// writes it: extra fields, a system prompt, string args, and a part kind
// this package does not model (builtin-tool-call).
const pydanticHistory = `[
  {"parts": [
     {"content": "You help with files.", "timestamp": "2025-06-01T10:00:00.000000Z", "dynamic_ref": null, "part_kind": "system-prompt"},
     {"content": "Delete temp.txt", "timestamp": "2025-06-01T10:00:00.000000Z", "part_kind": "user-prompt"}],
   "instructions": null, "kind": "request"},
  {"parts": [
     {"content": "Deleting it.", "id": null, "provider_details": null, "part_kind": "text"},
     {"tool_name": "web_search", "args": {"query": "x"}, "tool_call_id": "bt_1", "provider_name": "openai", "part_kind": "builtin-tool-call"},
     {"tool_name": "delete_file", "args": "{\"path\": \"temp.txt\"}", "tool_call_id": "call_abc", "id": "fc_1", "provider_details": null, "part_kind": "tool-call"}],
   "usage": {"input_tokens": 50, "output_tokens": 10}, "model_name": "gpt-5", "timestamp": "2025-06-01T10:00:01.000000Z",
   "provider_name": "openai", "provider_response_id": "resp_1", "finish_reason": "tool_call", "kind": "response"}
]`

func TestPydanticHistoryResumes(t *testing.T) {
	var hist []agentrunner.Message
	if err := json.Unmarshal([]byte(pydanticHistory), &hist); err != nil {
		t.Fatal(err)
	}
	if got, want := hist[0].Parts[0].Content, "You help with files."; got != want {
		t.Errorf("system prompt: got %q, want %q", got, want)
	}
	if got, want := hist[1].ModelName, "gpt-5"; got != want {
		t.Errorf("model name: got %q, want %q", got, want)
	}
	var gotPath string
	tool := agentrunner.NewTool("delete_file", "Delete a file.",
		func(_ context.Context, _ *agentrunner.ToolContext, a fileArgs) (any, error) {
			gotPath = a.Path
			return "deleted", nil
		}, agentrunner.RequiresApproval())
	r, err := agentrunner.NewRunner(agentrunner.TestModel{}, []*agentrunner.Tool{tool})
	if err != nil {
		t.Fatal(err)
	}
	results := agentrunner.NewDeferredToolResults()
	results.Approvals["call_abc"] = agentrunner.Approve()
	res, err := r.Run(t.Context(), agentrunner.RunInput{History: hist, Results: results})
	if err != nil {
		t.Fatal(err)
	}
	if gotPath != "temp.txt" {
		t.Errorf("tool got path %q, want temp.txt", gotPath)
	}
	if got, want := res.Output, `{"delete_file":"deleted"}`; got != want {
		t.Errorf("output: got %s, want %s", got, want)
	}

	// The part this package does not model is written back unchanged.
	b, err := json.Marshal(res.Messages[1])
	if err != nil {
		t.Fatal(err)
	}
	var back struct {
		Parts []map[string]any `json:"parts"`
	}
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"tool_name": "web_search", "args": map[string]any{"query": "x"}, "tool_call_id": "bt_1", "provider_name": "openai", "part_kind": "builtin-tool-call"}
	if diff := cmp.Diff(want, back.Parts[1]); diff != "" {
		t.Errorf("builtin part after round trip (-want +got):\n%s", diff)
	}
}

func TestHistoryRoundTrip(t *testing.T) {
	ts := time.Date(2025, 6, 1, 10, 0, 0, 0, time.UTC)
	hist := []agentrunner.Message{
		{Kind: agentrunner.KindRequest, Timestamp: ts, RunID: "r1", Parts: []agentrunner.Part{agentrunner.UserPrompt("refund A1")}},
		{Kind: agentrunner.KindResponse, ModelName: "test", Timestamp: ts, Parts: []agentrunner.Part{
			agentrunner.Text("On it."),
			agentrunner.ToolCall("issue_refund", mustArgs(`{"amount":40}`), "c1"),
			agentrunner.ToolCall("issue_refund", mustArgs(`{"amount":400}`), "c2"),
			agentrunner.ToolCall("lookup", nil, "c3"),
			agentrunner.ToolCall("lookup", mustArgs(`{"x":1}`), "c4"),
		}},
		{Kind: agentrunner.KindRequest, Parts: []agentrunner.Part{
			agentrunner.ToolReturn("issue_refund", "c1", mustArgs(`{"ok":true}`), agentrunner.OutcomeSuccess),
			agentrunner.ToolReturn("issue_refund", "c2", mustArgs(`"Refunds over $100 need a manager."`), agentrunner.OutcomeDenied),
			agentrunner.ToolReturn("lookup", "c3", mustArgs(`"Tool failed: boom"`), agentrunner.OutcomeFailed),
			agentrunner.RetryPrompt("lookup", "c4", "invalid arguments"),
		}},
		{Kind: agentrunner.KindResponse, Parts: []agentrunner.Part{{PartKind: agentrunner.PartThinking, Content: "hmm"}, agentrunner.Text("Done.")}},
	}
	b, err := json.Marshal(hist)
	if err != nil {
		t.Fatal(err)
	}
	var got []agentrunner.Message
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatalf("unmarshal %s: %v", b, err)
	}
	if diff := cmp.Diff(hist, got, cmp.Comparer(jsonEqual)); diff != "" {
		t.Errorf("round trip (-want +got):\n%s", diff)
	}
	if got, want := got[2].Parts[1].ReturnText(), "Refunds over $100 need a manager."; got != want {
		t.Errorf("ReturnText: got %q, want %q", got, want)
	}
	if got, want := got[3].Text(), "Done."; got != want {
		t.Errorf("Text: got %q, want %q", got, want)
	}
	if got := len(got[1].ToolCalls()); got != 4 {
		t.Errorf("ToolCalls: got %d, want 4", got)
	}
}

func TestPartJSONShape(t *testing.T) {
	tests := []struct {
		part agentrunner.Part
		want string
	}{
		{agentrunner.UserPrompt("hi"), `{"part_kind":"user-prompt","content":"hi"}`},
		{agentrunner.ToolCall("f", mustArgs(`{"a":1}`), "c1"), `{"part_kind":"tool-call","tool_name":"f","args":{"a":1},"tool_call_id":"c1"}`},
		{agentrunner.ToolReturn("f", "c1", mustArgs(`"no"`), agentrunner.OutcomeDenied), `{"part_kind":"tool-return","tool_name":"f","tool_call_id":"c1","outcome":"denied","content":"no"}`},
		{agentrunner.RetryPrompt("f", "c1", "again"), `{"part_kind":"retry-prompt","tool_name":"f","tool_call_id":"c1","content":"again"}`},
	}
	for _, tt := range tests {
		b, err := json.Marshal(tt.part)
		if err != nil {
			t.Fatal(err)
		}
		if string(b) != tt.want {
			t.Errorf("got %s, want %s", b, tt.want)
		}
	}
	var p agentrunner.Part
	if err := json.Unmarshal([]byte(`{"content":"x"}`), &p); err == nil {
		t.Error("part without part_kind: got no error, want one")
	}
	// Structured retry content (Pydantic AI's validation errors) is kept as JSON text.
	if err := json.Unmarshal([]byte(`{"part_kind":"retry-prompt","content":[{"type":"missing","loc":["path"]}],"tool_name":"f","tool_call_id":"c1"}`), &p); err != nil {
		t.Fatal(err)
	}
	if got, want := p.Content, `[{"type":"missing","loc":["path"]}]`; got != want {
		t.Errorf("structured retry content: got %s, want %s", got, want)
	}
}
