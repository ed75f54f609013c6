package fakemodel

import (
	"bufio"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

// sse posts body to the fake's /responses and returns the events it
// streamed, each decoded from its data line.
func sse(t *testing.T, o *OpenAI, body string) []map[string]any {
	t.Helper()
	resp, err := http.Post(o.URL+"/responses", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); resp.StatusCode != http.StatusOK || ct != "text/event-stream" {
		t.Fatalf("got %d %s, want 200 text/event-stream", resp.StatusCode, ct)
	}
	var events []map[string]any
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if data, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
			var ev map[string]any
			if err := json.Unmarshal([]byte(data), &ev); err != nil {
				t.Fatalf("data %s: %v", data, err)
			}
			events = append(events, ev)
		}
	}
	return events
}

// TestOpenAIPlaysItsScript: each request gets the next turn as one output
// item between response.created and response.completed, then "Done.";
// what the client sent back for a call is found by its call id.
func TestOpenAIPlaysItsScript(t *testing.T) {
	t.Parallel()
	o := StartOpenAI(t, OpenAITurn{Exec: "touch x"}, OpenAITurn{Patch: "*** Begin Patch\n*** End Patch\n"})
	wantItems := []struct{ typ, name, field, value string }{
		{"function_call", "exec_command", "arguments", `{"cmd":"touch x"}`},
		{"custom_tool_call", "apply_patch", "input", "*** Begin Patch\n*** End Patch\n"},
		{"message", "", "", ""},
	}
	body := `{"model":"gpt-5.5","stream":true,"input":[]}`
	for i, want := range wantItems {
		if i == 1 {
			body = `{"model":"gpt-5.5","stream":true,"input":[{"type":"function_call_output","call_id":"` + CallID(0) + `","output":"Process exited with code 0"}]}`
		}
		events := sse(t, o, body)
		var types []string
		for _, ev := range events {
			types = append(types, ev["type"].(string))
		}
		if got := strings.Join(types, " "); got != "response.created response.output_item.added response.output_item.done response.completed" {
			t.Fatalf("turn %d: events %s", i, got)
		}
		item := events[2]["item"].(map[string]any)
		if item["type"] != want.typ || (want.name != "" && (item["name"] != want.name || item[want.field] != want.value || item["call_id"] != CallID(i))) {
			t.Errorf("turn %d: item %v, want a %s %s with %s %q", i, item, want.typ, want.name, want.field, want.value)
		}
	}
	if got, ok := o.Output(CallID(0)); !ok || got != "Process exited with code 0" {
		t.Errorf("Output(call 0) = %q, %v; want what the second request sent back", got, ok)
	}
	if _, ok := o.Output(CallID(1)); ok {
		t.Error("Output(call 1) found an output nobody sent")
	}
	if n := len(o.Requests()); n != 3 {
		t.Errorf("%d requests recorded, want 3", n)
	}
}
