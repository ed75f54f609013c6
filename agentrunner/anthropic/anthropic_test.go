package anthropic_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/slackapprove/slackbot/agentrunner"
	"github.com/slackapprove/slackbot/agentrunner/anthropic"
)

const (
	testModel = "claude-sonnet-4-5"
	testKey   = "sk-ant-test-0123456789abcdef"
)

type orderArgs struct {
	OrderID string `json:"order_id" jsonschema:"description=The order number, e.g. A-17"`
}

// lookupOrder finds orders; order B-2 is lost and fails.
func lookupOrder(ran *atomic.Int32) *agentrunner.Tool {
	return agentrunner.NewTool("lookup_order", "Look up an order's status.",
		func(_ context.Context, _ *agentrunner.ToolContext, a orderArgs) (any, error) {
			ran.Add(1)
			if a.OrderID == "B-2" {
				return nil, errors.New("order database timed out")
			}
			return map[string]string{"order_id": a.OrderID, "status": "shipped"}, nil
		})
}

func cancelOrder(ran *atomic.Int32) *agentrunner.Tool {
	return agentrunner.NewTool("cancel_order", "Cancel an order.",
		func(_ context.Context, _ *agentrunner.ToolContext, a orderArgs) (any, error) {
			ran.Add(1)
			return "cancelled " + a.OrderID, nil
		}, agentrunner.RequiresApproval())
}

func newModel(f *fakeAPI, opts ...anthropic.Option) *anthropic.Model {
	opts = append([]anthropic.Option{
		anthropic.WithAPIKey(testKey),
		anthropic.WithBaseURL(f.URL("")),
		anthropic.WithHTTPClient(f.srv.Client()),
	}, opts...)
	return anthropic.New(testModel, opts...)
}

func newRunner(t *testing.T, m agentrunner.Model, tools ...*agentrunner.Tool) *agentrunner.Runner {
	t.Helper()
	r, err := agentrunner.NewRunner(m, tools, agentrunner.WithInstructions("You help with orders."))
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func userPrompt(s string) []agentrunner.Message {
	return []agentrunner.Message{{Kind: agentrunner.KindRequest, Parts: []agentrunner.Part{agentrunner.UserPrompt(s)}}}
}

// toolsJSON is what the API must receive for tools.
func toolsJSON(tools ...*agentrunner.Tool) string {
	var out []any
	for _, t := range tools {
		out = append(out, map[string]any{"name": t.Name(), "description": t.Description(), "input_schema": json.RawMessage(t.Schema())})
	}
	return mustJSON(out)
}

// The model asks for lookup_order, the runner runs it, and the second
// request carries the call and its result; then the model answers.
func TestToolCallRoundTrip(t *testing.T) {
	f := newFakeAPI(t, "/v1/messages",
		message(text("Let me check."), toolUse("toolu_01", "lookup_order", `{"order_id": "A-17"}`)),
		message(text("Order A-17 has shipped.")),
	)
	var ran atomic.Int32
	tool := lookupOrder(&ran)
	r := newRunner(t, newModel(f), tool)

	res, err := r.Run(t.Context(), agentrunner.RunInput{Prompt: "Where is order A-17?"})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if res.Status != agentrunner.StatusComplete || res.Output != "Order A-17 has shipped." {
		t.Errorf("Run: got status %s output %q, want complete %q", res.Status, res.Output, "Order A-17 has shipped.")
	}
	if got := ran.Load(); got != 1 {
		t.Errorf("tool ran %d times, want 1", got)
	}
	if got := len(f.Requests()); got != 2 {
		t.Fatalf("server got %d requests, want 2", got)
	}

	first := f.request(0)
	if got, want := first.header.Get("Authorization"), "Bearer "+testKey; got != want {
		t.Errorf("Authorization: got %q, want %q", got, want)
	}
	if first.header.Get("Anthropic-Version") == "" {
		t.Error("no anthropic-version header")
	}
	diffJSON(t, "first request", first.body, `{
		"model": "claude-sonnet-4-5",
		"max_tokens": 4096,
		"system": [{"type": "text", "text": "You help with orders."}],
		"messages": [
			{"role": "user", "content": [{"type": "text", "text": "Where is order A-17?"}]}
		],
		"tools": `+toolsJSON(tool)+`
	}`)
	diffJSON(t, "second request", f.request(1).body, `{
		"model": "claude-sonnet-4-5",
		"max_tokens": 4096,
		"system": [{"type": "text", "text": "You help with orders."}],
		"messages": [
			{"role": "user", "content": [{"type": "text", "text": "Where is order A-17?"}]},
			{"role": "assistant", "content": [
				{"type": "text", "text": "Let me check."},
				{"type": "tool_use", "id": "toolu_01", "name": "lookup_order", "input": {"order_id": "A-17"}}
			]},
			{"role": "user", "content": [
				{"type": "tool_result", "tool_use_id": "toolu_01", "content": [{"type": "text", "text": "{\"order_id\":\"A-17\",\"status\":\"shipped\"}"}]}
			]}
		],
		"tools": `+toolsJSON(tool)+`
	}`)

	resp := res.Messages[1]
	if resp.Kind != agentrunner.KindResponse || resp.ModelName != "claude-sonnet-4-5-20250929" {
		t.Errorf("response message: got kind %s model %q, want response claude-sonnet-4-5-20250929", resp.Kind, resp.ModelName)
	}
}

// The results of one response's calls go back in one user turn; a call
// that failed is marked is_error.
func TestParallelCallsOneTurn(t *testing.T) {
	f := newFakeAPI(t, "/v1/messages",
		message(toolUse("toolu_a", "lookup_order", `{"order_id":"A-17"}`), toolUse("toolu_b", "lookup_order", `{"order_id":"B-2"}`)),
		message(text("A-17 shipped; B-2 could not be looked up.")),
	)
	var ran atomic.Int32
	r := newRunner(t, newModel(f), lookupOrder(&ran))
	if _, err := r.Run(t.Context(), agentrunner.RunInput{Prompt: "Where are A-17 and B-2?"}); err != nil {
		t.Fatalf("Run: %v", err)
	}
	diffJSON(t, "messages", f.request(1).body["messages"], `[
		{"role": "user", "content": [{"type": "text", "text": "Where are A-17 and B-2?"}]},
		{"role": "assistant", "content": [
			{"type": "tool_use", "id": "toolu_a", "name": "lookup_order", "input": {"order_id": "A-17"}},
			{"type": "tool_use", "id": "toolu_b", "name": "lookup_order", "input": {"order_id": "B-2"}}
		]},
		{"role": "user", "content": [
			{"type": "tool_result", "tool_use_id": "toolu_a", "content": [{"type": "text", "text": "{\"order_id\":\"A-17\",\"status\":\"shipped\"}"}]},
			{"type": "tool_result", "tool_use_id": "toolu_b", "is_error": true, "content": [{"type": "text", "text": "Tool failed: order database timed out"}]}
		]}
	]`)
}

// A call that needs approval ends the run pending; a denial on resume
// reaches the model as the call's result (not an error), and the tool
// never runs.
func TestApprovalDenied(t *testing.T) {
	f := newFakeAPI(t, "/v1/messages",
		message(toolUse("toolu_9", "cancel_order", `{"order_id":"A-17"}`)),
		message(text("I could not cancel A-17: a manager has to approve it.")),
	)
	var ran atomic.Int32
	r := newRunner(t, newModel(f), cancelOrder(&ran))

	res, err := r.Run(t.Context(), agentrunner.RunInput{Prompt: "Cancel A-17.", AllowPending: true})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if res.Status != agentrunner.StatusPending {
		t.Fatalf("Run: got status %s, want pending", res.Status)
	}
	if got := res.Pending.IDs(); len(got) != 1 || got[0] != "toolu_9" || res.Pending.Kind("toolu_9") != agentrunner.KindApproval {
		t.Fatalf("pending: got %v, want the approval toolu_9", got)
	}
	if got := len(f.Requests()); got != 1 {
		t.Fatalf("server got %d requests before the decision, want 1", got)
	}

	answer := agentrunner.NewDeferredToolResults()
	answer.Approvals["toolu_9"] = agentrunner.Deny("Cancellations need a manager.")
	res, err = r.Run(t.Context(), agentrunner.RunInput{History: res.Messages, Pending: res.Pending, Results: answer})
	if err != nil {
		t.Fatalf("resume: %v", err)
	}
	if res.Status != agentrunner.StatusComplete || !strings.Contains(res.Output, "manager") {
		t.Errorf("resume: got %s %q, want complete with the model's answer", res.Status, res.Output)
	}
	if got := ran.Load(); got != 0 {
		t.Errorf("denied tool ran %d times", got)
	}
	diffJSON(t, "messages after the denial", f.request(1).body["messages"], `[
		{"role": "user", "content": [{"type": "text", "text": "Cancel A-17."}]},
		{"role": "assistant", "content": [
			{"type": "tool_use", "id": "toolu_9", "name": "cancel_order", "input": {"order_id": "A-17"}}
		]},
		{"role": "user", "content": [
			{"type": "tool_result", "tool_use_id": "toolu_9", "content": [{"type": "text", "text": "Cancellations need a manager."}]}
		]}
	]`)
}

// A rate limit or an overloaded API is retried by the SDK, after the delay
// the API asks for, and the run completes.
func TestRetryThenSuccess(t *testing.T) {
	tests := []struct {
		name  string
		first reply
	}{
		{"429 with retry-after-ms", apiError(http.StatusTooManyRequests, "rate_limit_error", "Number of request tokens has exceeded your per-minute rate limit",
			map[string]string{"retry-after-ms": "0", "retry-after": "0"})},
		{"529 overloaded with retry-after", apiError(529, "overloaded_error", "Overloaded", map[string]string{"retry-after": "0"})},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFakeAPI(t, "/v1/messages", tt.first, message(text("Hello.")))
			r := newRunner(t, newModel(f))
			res, err := r.Run(t.Context(), agentrunner.RunInput{Prompt: "Hi"})
			if err != nil {
				t.Fatalf("Run: %v", err)
			}
			if res.Output != "Hello." {
				t.Errorf("Output: got %q, want %q", res.Output, "Hello.")
			}
			reqs := f.Requests()
			if len(reqs) != 2 {
				t.Fatalf("server got %d requests, want 2", len(reqs))
			}
			if got := reqs[1].header.Get("X-Stainless-Retry-Count"); got != "1" {
				t.Errorf("second request: X-Stainless-Retry-Count %q, want 1 (a retry by the SDK)", got)
			}
		})
	}
}

// What still fails after retries is an error that says which provider,
// which model, which status and what the API said, without the key.
func TestHardFailure(t *testing.T) {
	noWait := map[string]string{"retry-after-ms": "0"}
	repeat := func(r reply, n int) []reply {
		out := make([]reply, n)
		for i := range out {
			out[i] = r
		}
		return out
	}
	tests := []struct {
		name         string
		replies      []reply
		wantRequests int
		wantStatus   int
		wantType     string
		wantErr      string
	}{
		{
			name:         "401 bad key",
			replies:      []reply{apiError(http.StatusUnauthorized, "authentication_error", "invalid x-api-key", nil)},
			wantRequests: 1, wantStatus: 401, wantType: "authentication_error",
			wantErr: "model request: anthropic claude-sonnet-4-5: 401 Unauthorized: invalid x-api-key",
		},
		{
			name:         "400 quoting the key",
			replies:      []reply{apiError(http.StatusBadRequest, "invalid_request_error", "key "+testKey+" is not allowed to use claude-sonnet-4-5", nil)},
			wantRequests: 1, wantStatus: 400, wantType: "invalid_request_error",
			wantErr: "model request: anthropic claude-sonnet-4-5: 400 Bad Request: key [redacted] is not allowed to use claude-sonnet-4-5",
		},
		{
			name:         "500 repeated",
			replies:      repeat(apiError(500, "api_error", "Internal server error", noWait), 3),
			wantRequests: 3, wantStatus: 500, wantType: "api_error",
			wantErr: "model request: anthropic claude-sonnet-4-5: 500 Internal Server Error: Internal server error",
		},
		{
			name:         "529 repeated",
			replies:      repeat(apiError(529, "overloaded_error", "Overloaded", noWait), 3),
			wantRequests: 3, wantStatus: 529, wantType: "overloaded_error",
			wantErr: "model request: anthropic claude-sonnet-4-5: 529 Overloaded: Overloaded",
		},
		{
			name:         "403 from a gateway in its own shape",
			replies:      []reply{{status: 403, body: `{"message":"Forbidden by policy"}`}},
			wantRequests: 1, wantStatus: 403,
			wantErr: "model request: anthropic claude-sonnet-4-5: 403 Forbidden: Forbidden by policy",
		},
		{
			name:         "502 HTML page from a proxy",
			replies:      repeat(reply{status: 502, header: map[string]string{"Content-Type": "text/html", "retry-after-ms": "0"}, body: "<html>Bad gateway</html>"}, 3),
			wantRequests: 3, wantStatus: 502,
			wantErr: "model request: anthropic claude-sonnet-4-5: 502 Bad Gateway",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFakeAPI(t, "/v1/messages", tt.replies...)
			r := newRunner(t, newModel(f, anthropic.WithMaxRetries(2)))
			_, err := r.Run(t.Context(), agentrunner.RunInput{Prompt: "Hi"})
			if err == nil {
				t.Fatal("Run: got no error")
			}
			if err.Error() != tt.wantErr {
				t.Errorf("error:\n got %q\nwant %q", err, tt.wantErr)
			}
			if strings.Contains(err.Error(), testKey) {
				t.Errorf("error contains the API key: %v", err)
			}
			var apiErr *anthropic.APIError
			if !errors.As(err, &apiErr) || apiErr.StatusCode != tt.wantStatus || apiErr.Type != tt.wantType {
				t.Errorf("errors.As(*APIError): got %+v, want status %d type %q", apiErr, tt.wantStatus, tt.wantType)
			}
			if got := len(f.Requests()); got != tt.wantRequests {
				t.Errorf("server got %d requests, want %d", got, tt.wantRequests)
			}
		})
	}
}

func TestConnectionError(t *testing.T) {
	f := newFakeAPI(t, "/v1/messages")
	url := f.URL("")
	f.srv.Close()
	m := anthropic.New(testModel, anthropic.WithAPIKey(testKey), anthropic.WithBaseURL(url), anthropic.WithMaxRetries(0))
	_, err := m.Request(t.Context(), userPrompt("Hi"), agentrunner.RequestParams{})
	if err == nil {
		t.Fatal("Request: got no error")
	}
	if !strings.HasPrefix(err.Error(), "anthropic claude-sonnet-4-5: ") || strings.Contains(err.Error(), testKey) {
		t.Errorf("error: got %q, want it to start with the provider and model and not to contain the key", err)
	}
	var apiErr *anthropic.APIError
	if errors.As(err, &apiErr) {
		t.Errorf("a connection error is an *APIError: %v", apiErr)
	}
}

func TestContextCanceled(t *testing.T) {
	f := newFakeAPI(t, "/v1/messages")
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	_, err := newModel(f).Request(ctx, userPrompt("Hi"), agentrunner.RequestParams{})
	if !errors.Is(err, context.Canceled) {
		t.Errorf("Request: got %v, want context.Canceled", err)
	}
}

func TestBaseURL(t *testing.T) {
	tests := []struct{ suffix, wantPath string }{
		{"", "/v1/messages"},
		{"/", "/v1/messages"},
		{"/gateway/anthropic", "/gateway/anthropic/v1/messages"},
	}
	for _, tt := range tests {
		t.Run(tt.suffix, func(t *testing.T) {
			f := newFakeAPI(t, tt.wantPath, message(text("Hello.")))
			m := anthropic.New(testModel, anthropic.WithBaseURL(f.URL(tt.suffix)))
			got, err := m.Request(t.Context(), userPrompt("Hi"), agentrunner.RequestParams{})
			if err != nil {
				t.Fatalf("Request: %v", err)
			}
			if got.Text() != "Hello." {
				t.Errorf("text: got %q, want Hello.", got.Text())
			}
		})
	}
}

// roundTripFunc answers requests without a network.
type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// The SDK's environment variables are ignored: configuration comes from
// the options only.
func TestDefaultsIgnoreEnvironment(t *testing.T) {
	t.Setenv("ANTHROPIC_BASE_URL", "http://127.0.0.1:1")
	t.Setenv("ANTHROPIC_API_KEY", "sk-ant-from-the-environment")
	var (
		gotURL  string
		gotAuth string
	)
	hc := &http.Client{Transport: roundTripFunc(func(r *http.Request) (*http.Response, error) {
		gotURL, gotAuth = r.URL.String(), r.Header.Get("Authorization")+r.Header.Get("X-Api-Key")
		return &http.Response{StatusCode: 200, Header: http.Header{"Content-Type": {"application/json"}},
			Body: io.NopCloser(strings.NewReader(message(text("Hello.")).body)), Request: r}, nil
	})}
	m := anthropic.New(testModel, anthropic.WithAPIKey(testKey), anthropic.WithHTTPClient(hc))
	if _, err := m.Request(t.Context(), userPrompt("Hi"), agentrunner.RequestParams{}); err != nil {
		t.Fatalf("Request: %v", err)
	}
	if want := "https://api.anthropic.com/v1/messages"; gotURL != want {
		t.Errorf("URL: got %q, want %q", gotURL, want)
	}
	if !strings.Contains(gotAuth, testKey) || strings.Contains(gotAuth, "environment") {
		t.Errorf("credentials: got %q, want the configured key only", gotAuth)
	}
}

// Every kind of part reaches the API where Pydantic AI puts it, in turns
// that alternate.
func TestHistoryMapping(t *testing.T) {
	f := newFakeAPI(t, "/v1/messages", message(text("Done.")))
	m := newModel(f, anthropic.WithMaxTokens(500))
	unknown := agentrunner.Part{PartKind: "file", Raw: json.RawMessage(`{"part_kind":"file","content":"x"}`)}
	history := []agentrunner.Message{
		{Kind: agentrunner.KindRequest, Parts: []agentrunner.Part{
			{PartKind: agentrunner.PartSystemPrompt, Content: "Be brief."},
			agentrunner.UserPrompt("Refund A-17, B-2, C-3 and D-4."),
			unknown,
		}},
		{Kind: agentrunner.KindResponse, Parts: []agentrunner.Part{
			{PartKind: agentrunner.PartThinking, Content: "four refunds"},
			agentrunner.Text("Refunding."),
			agentrunner.ToolCall("refund", json.RawMessage(`"{\"order_id\":\"A-17\"}"`), "t1"),
			agentrunner.ToolCall("refund", json.RawMessage(`{"order_id":"B-2"}`), "t2"),
			agentrunner.ToolCall("refund", nil, "t3"),
			agentrunner.ToolCall("refund", json.RawMessage(`"not json"`), "t4"),
		}},
		{Kind: agentrunner.KindRequest, Parts: []agentrunner.Part{
			agentrunner.ToolReturn("refund", "t1", json.RawMessage(`{"refunded":10.5}`), agentrunner.OutcomeSuccess),
			agentrunner.ToolReturn("refund", "t2", json.RawMessage(`"The tool call was denied."`), agentrunner.OutcomeDenied),
		}},
		{Kind: agentrunner.KindRequest, Parts: []agentrunner.Part{
			agentrunner.UserPrompt("Also, hurry."),
			agentrunner.ToolReturn("refund", "t3", json.RawMessage(`""`), agentrunner.OutcomeSuccess),
			agentrunner.RetryPrompt("refund", "t4", "args: not a JSON object"),
		}},
		{Kind: agentrunner.KindResponse, Parts: []agentrunner.Part{{PartKind: agentrunner.PartThinking, Content: "only thoughts"}}},
		{Kind: agentrunner.KindRequest, Parts: []agentrunner.Part{
			{PartKind: agentrunner.PartRetryPrompt, Content: "Please answer in English."},
		}},
	}
	if _, err := m.Request(t.Context(), history, agentrunner.RequestParams{Instructions: "You refund orders."}); err != nil {
		t.Fatalf("Request: %v", err)
	}
	diffJSON(t, "request", f.request(0).body, `{
		"model": "claude-sonnet-4-5",
		"max_tokens": 500,
		"system": [{"type": "text", "text": "You refund orders.\n\nBe brief."}],
		"messages": [
			{"role": "user", "content": [{"type": "text", "text": "Refund A-17, B-2, C-3 and D-4."}]},
			{"role": "assistant", "content": [
				{"type": "text", "text": "Refunding."},
				{"type": "tool_use", "id": "t1", "name": "refund", "input": {"order_id": "A-17"}},
				{"type": "tool_use", "id": "t2", "name": "refund", "input": {"order_id": "B-2"}},
				{"type": "tool_use", "id": "t3", "name": "refund", "input": {}},
				{"type": "tool_use", "id": "t4", "name": "refund", "input": {}}
			]},
			{"role": "user", "content": [
				{"type": "tool_result", "tool_use_id": "t1", "content": [{"type": "text", "text": "{\"refunded\":10.5}"}]},
				{"type": "tool_result", "tool_use_id": "t2", "content": [{"type": "text", "text": "The tool call was denied."}]},
				{"type": "tool_result", "tool_use_id": "t3"},
				{"type": "tool_result", "tool_use_id": "t4", "is_error": true, "content": [{"type": "text", "text": "args: not a JSON object\n\nFix the errors and try again."}]},
				{"type": "text", "text": "Also, hurry."},
				{"type": "text", "text": "Validation feedback:\nPlease answer in English.\n\nFix the errors and try again."}
			]}
		]
	}`)
}

func TestToolDefinitions(t *testing.T) {
	f := newFakeAPI(t, "/v1/messages", message(text("Done.")))
	defs := []agentrunner.ToolDefinition{
		{Name: "ping"},
		{Name: "limit", Description: "Set a limit.", Parameters: json.RawMessage(`{"$schema":"https://json-schema.org/draft/2020-12/schema","type":"object","properties":{"n":{"type":"number","maximum":1e21,"multipleOf":0.1}},"required":["n"],"additionalProperties":false,"$defs":{"x":{"type":"string"}}}`)},
	}
	if _, err := newModel(f).Request(t.Context(), userPrompt("Hi"), agentrunner.RequestParams{Tools: defs}); err != nil {
		t.Fatalf("Request: %v", err)
	}
	diffJSON(t, "tools", f.request(0).body["tools"], `[
		{"name": "ping", "input_schema": {"type": "object", "properties": {}}},
		{"name": "limit", "description": "Set a limit.", "input_schema":
			{"$schema":"https://json-schema.org/draft/2020-12/schema","type":"object","properties":{"n":{"type":"number","maximum":1e21,"multipleOf":0.1}},"required":["n"],"additionalProperties":false,"$defs":{"x":{"type":"string"}}}}
	]`)

	_, err := newModel(f).Request(t.Context(), userPrompt("Hi"), agentrunner.RequestParams{Tools: []agentrunner.ToolDefinition{{Name: "bad", Parameters: json.RawMessage(`{`)}}})
	if err == nil || !strings.HasPrefix(err.Error(), "anthropic claude-sonnet-4-5: tool bad: parameters: ") {
		t.Errorf("bad schema: got %v, want an error naming the provider, model and tool", err)
	}
}

// Answers that cannot be a response are errors naming the provider.
func TestResponses(t *testing.T) {
	tests := []struct {
		name      string
		reply     reply
		wantParts []agentrunner.Part
		wantErr   error
		wantText  string // the start of the error
	}{
		{name: "no content", reply: messageStop("end_turn"), wantErr: anthropic.ErrEmptyResponse,
			wantText: `anthropic claude-sonnet-4-5: empty response: no text and no tool calls (stop_reason "end_turn")`},
		{name: "refusal", reply: messageStop("refusal"), wantErr: anthropic.ErrEmptyResponse,
			wantText: `anthropic claude-sonnet-4-5: empty response: no text and no tool calls (stop_reason "refusal")`},
		{name: "only thinking", reply: message(block{"type": "thinking", "thinking": "hmm", "signature": "sig"}), wantErr: anthropic.ErrEmptyResponse,
			wantText: "anthropic claude-sonnet-4-5: empty response"},
		{name: "not JSON", reply: reply{body: "{not json"}, wantText: "anthropic claude-sonnet-4-5: "},
		{name: "tool_use without a name", reply: message(block{"type": "tool_use", "id": "t1", "input": map[string]any{}}), wantErr: anthropic.ErrMalformedResponse,
			wantText: "anthropic claude-sonnet-4-5: malformed response: content block 0: tool_use without a name"},
		{name: "thinking, text and calls", reply: message(
			block{"type": "thinking", "thinking": "look it up", "signature": "sig"},
			text("Looking."),
			block{"type": "tool_use", "id": "t1", "name": "lookup_order", "input": nil},
			block{"type": "tool_use", "id": "t2", "name": "lookup_order", "input": map[string]any{"order_id": "B"}},
		), wantParts: []agentrunner.Part{
			{PartKind: agentrunner.PartThinking, Content: "look it up"},
			agentrunner.Text("Looking."),
			agentrunner.ToolCall("lookup_order", json.RawMessage(`{}`), "t1"),
			agentrunner.ToolCall("lookup_order", json.RawMessage(`{"order_id":"B"}`), "t2"),
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFakeAPI(t, "/v1/messages", tt.reply)
			got, err := newModel(f).Request(t.Context(), userPrompt("Hi"), agentrunner.RequestParams{})
			if tt.wantText != "" {
				if err == nil || !strings.HasPrefix(err.Error(), tt.wantText) {
					t.Fatalf("error: got %v, want one starting with %q", err, tt.wantText)
				}
				if tt.wantErr != nil && !errors.Is(err, tt.wantErr) {
					t.Errorf("error: got %v, want errors.Is %v", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("Request: %v", err)
			}
			if len(got.Parts) != len(tt.wantParts) {
				t.Fatalf("parts: got %+v, want %+v", got.Parts, tt.wantParts)
			}
			for i, want := range tt.wantParts {
				p := got.Parts[i]
				if p.PartKind != want.PartKind || p.Content != want.Content || p.ToolName != want.ToolName ||
					string(p.Args) != string(want.Args) || p.ToolCallID != want.ToolCallID {
					t.Errorf("part %d: got %+v, want %+v", i, p, want)
				}
			}
		})
	}
}

// A Model never shows its key, whichever way it is printed.
func TestPrintingHidesKey(t *testing.T) {
	m := anthropic.New(testModel, anthropic.WithAPIKey(testKey))
	for _, verb := range []string{"%v", "%+v", "%#v", "%s"} {
		if s := fmt.Sprintf(verb, m); strings.Contains(s, testKey) {
			t.Errorf("Sprintf(%q) shows the key: %s", verb, s)
		}
	}
	if got := m.String(); got != "anthropic:claude-sonnet-4-5" {
		t.Errorf("String: got %q, want anthropic:claude-sonnet-4-5", got)
	}
}

// One Model serves concurrent runs.
func TestConcurrentRequests(t *testing.T) {
	const n = 8
	replies := make([]reply, n)
	for i := range replies {
		replies[i] = message(text("Hello."))
	}
	f := newFakeAPI(t, "/v1/messages", replies...)
	m := newModel(f)
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
			if _, err := m.Request(t.Context(), userPrompt("Hi"), agentrunner.RequestParams{}); err != nil {
				t.Errorf("Request: %v", err)
			}
		})
	}
	wg.Wait()
	if got := len(f.Requests()); got != n {
		t.Errorf("server got %d requests, want %d", got, n)
	}
}
