package openai_test

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
	"github.com/slackapprove/slackbot/agentrunner/openai"
)

const (
	testModel = "gpt-4o-mini"
	testKey   = "sk-test-0123456789abcdef"
)

type orderArgs struct {
	OrderID string `json:"order_id" jsonschema:"description=The order number, e.g. A-17"`
}

func lookupOrder(ran *atomic.Int32) *agentrunner.Tool {
	return agentrunner.NewTool("lookup_order", "Look up an order's status.",
		func(_ context.Context, _ *agentrunner.ToolContext, a orderArgs) (any, error) {
			ran.Add(1)
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

func newModel(f *fakeAPI, opts ...openai.Option) *openai.Model {
	opts = append([]openai.Option{
		openai.WithAPIKey(testKey),
		openai.WithBaseURL(f.URL("/v1")),
		openai.WithHTTPClient(f.srv.Client()),
	}, opts...)
	return openai.New(testModel, opts...)
}

func newRunner(t *testing.T, m agentrunner.Model, tools ...*agentrunner.Tool) *agentrunner.Runner {
	t.Helper()
	r, err := agentrunner.NewRunner(m, tools, agentrunner.WithInstructions("You help with orders."))
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// toolsJSON is what the API must receive for tools.
func toolsJSON(tools ...*agentrunner.Tool) string {
	var out []any
	for _, t := range tools {
		out = append(out, map[string]any{"type": "function", "function": map[string]any{
			"name": t.Name(), "description": t.Description(), "parameters": json.RawMessage(t.Schema()),
		}})
	}
	return mustJSON(out)
}

// The model asks for lookup_order, the runner runs it, and the second
// request carries the call and its result; then the model answers.
func TestToolCallRoundTrip(t *testing.T) {
	f := newFakeAPI(t, "/v1/chat/completions",
		completion("", call{id: "call_1", name: "lookup_order", args: quoted(`{"order_id":"A-17"}`)}),
		completion("Order A-17 has shipped."),
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
	diffJSON(t, "first request", first.body, `{
		"model": "gpt-4o-mini",
		"messages": [
			{"role": "system", "content": "You help with orders."},
			{"role": "user", "content": "Where is order A-17?"}
		],
		"tools": `+toolsJSON(tool)+`
	}`)
	diffJSON(t, "second request", f.request(1).body, `{
		"model": "gpt-4o-mini",
		"messages": [
			{"role": "system", "content": "You help with orders."},
			{"role": "user", "content": "Where is order A-17?"},
			{"role": "assistant", "tool_calls": [
				{"id": "call_1", "type": "function", "function": {"name": "lookup_order", "arguments": "{\"order_id\":\"A-17\"}"}}
			]},
			{"role": "tool", "tool_call_id": "call_1", "content": "{\"order_id\":\"A-17\",\"status\":\"shipped\"}"}
		],
		"tools": `+toolsJSON(tool)+`
	}`)

	resp := res.Messages[1]
	if resp.Kind != agentrunner.KindResponse || resp.ModelName != "gpt-4o-mini-2024-07-18" {
		t.Errorf("response message: got kind %s model %q, want response gpt-4o-mini-2024-07-18", resp.Kind, resp.ModelName)
	}
}

// Servers write arguments in many ways; all of them reach the tool, and the
// call goes back to the server as a compact JSON object.
func TestToolCallArguments(t *testing.T) {
	tests := []struct {
		name string
		args string // the JSON of "arguments"
	}{
		{"string", quoted(`{"order_id":"A-17"}`)},
		{"string with whitespace", quoted("  {\n  \"order_id\" : \"A-17\"\n}\n ")},
		{"object instead of string", `{"order_id": "A-17"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFakeAPI(t, "/v1/chat/completions",
				completion("", call{id: "call_1", name: "lookup_order", args: tt.args}),
				completion("Shipped."),
			)
			var ran atomic.Int32
			r := newRunner(t, newModel(f), lookupOrder(&ran))
			if _, err := r.Run(t.Context(), agentrunner.RunInput{Prompt: "Where is A-17?"}); err != nil {
				t.Fatalf("Run: %v", err)
			}
			if got := ran.Load(); got != 1 {
				t.Errorf("tool ran %d times, want 1", got)
			}
			msgs := f.request(1).body["messages"].([]any)
			diffJSON(t, "assistant message", msgs[2], `{"role": "assistant", "tool_calls": [
				{"id": "call_1", "type": "function", "function": {"name": "lookup_order", "arguments": "{\"order_id\":\"A-17\"}"}}]}`)
		})
	}
}

// Arguments that are not JSON go back to the model as a retry prompt on
// the call, with the arguments it sent.
func TestMalformedArgumentsRetry(t *testing.T) {
	f := newFakeAPI(t, "/v1/chat/completions",
		completion("", call{id: "call_1", name: "lookup_order", args: quoted(`{order_id: A-17`)}),
		completion("", call{id: "call_2", name: "lookup_order", args: quoted(`{"order_id":"A-17"}`)}),
		completion("Shipped."),
	)
	var ran atomic.Int32
	r := newRunner(t, newModel(f), lookupOrder(&ran))
	if _, err := r.Run(t.Context(), agentrunner.RunInput{Prompt: "Where is A-17?"}); err != nil {
		t.Fatalf("Run: %v", err)
	}
	msgs := f.request(1).body["messages"].([]any)
	diffJSON(t, "assistant message", msgs[2], `{"role": "assistant", "tool_calls": [
		{"id": "call_1", "type": "function", "function": {"name": "lookup_order", "arguments": "{order_id: A-17"}}]}`)
	retry, _ := msgs[3].(map[string]any)
	content, _ := retry["content"].(string)
	if retry["role"] != "tool" || retry["tool_call_id"] != "call_1" || !strings.HasSuffix(content, "\n\nFix the errors and try again.") {
		t.Errorf("retry message: got %v, want a tool message for call_1 ending in the retry suffix", retry)
	}
	if got := ran.Load(); got != 1 {
		t.Errorf("tool ran %d times, want 1", got)
	}
}

// A call that needs approval ends the run pending; a denial on resume
// reaches the model as the call's result, and the tool never runs.
func TestApprovalDenied(t *testing.T) {
	f := newFakeAPI(t, "/v1/chat/completions",
		completion("", call{id: "call_9", name: "cancel_order", args: quoted(`{"order_id":"A-17"}`)}),
		completion("I could not cancel A-17: a manager has to approve it."),
	)
	var ran atomic.Int32
	tool := cancelOrder(&ran)
	r := newRunner(t, newModel(f), tool)

	res, err := r.Run(t.Context(), agentrunner.RunInput{Prompt: "Cancel A-17.", AllowPending: true})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if res.Status != agentrunner.StatusPending {
		t.Fatalf("Run: got status %s, want pending", res.Status)
	}
	if got := res.Pending.IDs(); len(got) != 1 || got[0] != "call_9" || res.Pending.Kind("call_9") != agentrunner.KindApproval {
		t.Fatalf("pending: got %v, want the approval call_9", got)
	}
	if got := len(f.Requests()); got != 1 {
		t.Fatalf("server got %d requests before the decision, want 1", got)
	}

	answer := agentrunner.NewDeferredToolResults()
	answer.Approvals["call_9"] = agentrunner.Deny("Cancellations need a manager.")
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
		{"role": "system", "content": "You help with orders."},
		{"role": "user", "content": "Cancel A-17."},
		{"role": "assistant", "tool_calls": [
			{"id": "call_9", "type": "function", "function": {"name": "cancel_order", "arguments": "{\"order_id\":\"A-17\"}"}}
		]},
		{"role": "tool", "tool_call_id": "call_9", "content": "Cancellations need a manager."}
	]`)
}

// A rate limit or an overloaded server is retried by the SDK, after the
// delay the server asks for, and the run completes.
func TestRetryThenSuccess(t *testing.T) {
	tests := []struct {
		name  string
		first reply
	}{
		{"429 with retry-after-ms", apiError(http.StatusTooManyRequests, "Rate limit reached for gpt-4o-mini.", "requests", "rate_limit_exceeded",
			map[string]string{"retry-after-ms": "0", "retry-after": "0"})},
		{"503 with retry-after", apiError(http.StatusServiceUnavailable, "The engine is currently overloaded.", "server_error", "",
			map[string]string{"retry-after": "0"})},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFakeAPI(t, "/v1/chat/completions", tt.first, completion("Hello."))
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
// which model, which status and what the server said, without the key.
func TestHardFailure(t *testing.T) {
	noWait := map[string]string{"retry-after-ms": "0"}
	tests := []struct {
		name         string
		replies      []reply
		wantRequests int
		wantStatus   int
		wantErr      string
	}{
		{
			name: "401 bad key",
			replies: []reply{apiError(http.StatusUnauthorized,
				"Incorrect API key provided: "+testKey+". You can find your API key at https://platform.openai.com/account/api-keys.",
				"invalid_request_error", "invalid_api_key", nil)},
			wantRequests: 1,
			wantStatus:   401,
			wantErr:      "model request: openai gpt-4o-mini: 401 Unauthorized: Incorrect API key provided: [redacted]. You can find your API key at https://platform.openai.com/account/api-keys.",
		},
		{
			name: "500 repeated",
			replies: []reply{
				apiError(500, "The server had an error while processing your request.", "server_error", "", noWait),
				apiError(500, "The server had an error while processing your request.", "server_error", "", noWait),
				apiError(500, "The server had an error while processing your request.", "server_error", "", noWait),
			},
			wantRequests: 3,
			wantStatus:   500,
			wantErr:      "model request: openai gpt-4o-mini: 500 Internal Server Error: The server had an error while processing your request.",
		},
		{
			name:         "404 from vLLM, message at the top level",
			replies:      []reply{{status: 404, body: `{"object":"error","message":"The model ` + "`gpt-4o-mini`" + ` does not exist.","type":"NotFoundError","param":null,"code":404}`}},
			wantRequests: 1,
			wantStatus:   404,
			wantErr:      "model request: openai gpt-4o-mini: 404 Not Found: The model `gpt-4o-mini` does not exist.",
		},
		{
			name:         "400 with a plain string error",
			replies:      []reply{{status: 400, body: `{"error":"model \"gpt-4o-mini\" not found, try pulling it first"}`}},
			wantRequests: 1,
			wantStatus:   400,
			wantErr:      `model request: openai gpt-4o-mini: 400 Bad Request: model "gpt-4o-mini" not found, try pulling it first`,
		},
		{
			name: "502 HTML page from a proxy",
			replies: []reply{
				{status: 502, header: map[string]string{"Content-Type": "text/html", "retry-after-ms": "0"}, body: "<html><body>Bad gateway</body></html>"},
				{status: 502, header: map[string]string{"Content-Type": "text/html", "retry-after-ms": "0"}, body: "<html><body>Bad gateway</body></html>"},
				{status: 502, header: map[string]string{"Content-Type": "text/html", "retry-after-ms": "0"}, body: "<html><body>Bad gateway</body></html>"},
			},
			wantRequests: 3,
			wantStatus:   502,
			wantErr:      "model request: openai gpt-4o-mini: 502 Bad Gateway",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFakeAPI(t, "/v1/chat/completions", tt.replies...)
			r := newRunner(t, newModel(f, openai.WithMaxRetries(2)))
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
			var apiErr *openai.APIError
			if !errors.As(err, &apiErr) || apiErr.StatusCode != tt.wantStatus {
				t.Errorf("errors.As(*APIError): got %v, want status %d", apiErr, tt.wantStatus)
			}
			if got := len(f.Requests()); got != tt.wantRequests {
				t.Errorf("server got %d requests, want %d", got, tt.wantRequests)
			}
		})
	}
}

func TestConnectionError(t *testing.T) {
	f := newFakeAPI(t, "/v1/chat/completions")
	url := f.URL("/v1")
	f.srv.Close()
	m := openai.New(testModel, openai.WithAPIKey(testKey), openai.WithBaseURL(url), openai.WithMaxRetries(0))
	_, err := m.Request(t.Context(), []agentrunner.Message{{Kind: agentrunner.KindRequest, Parts: []agentrunner.Part{agentrunner.UserPrompt("Hi")}}}, agentrunner.RequestParams{})
	if err == nil {
		t.Fatal("Request: got no error")
	}
	if !strings.HasPrefix(err.Error(), "openai gpt-4o-mini: ") || strings.Contains(err.Error(), testKey) {
		t.Errorf("error: got %q, want it to start with the provider and model and not to contain the key", err)
	}
	var apiErr *openai.APIError
	if errors.As(err, &apiErr) {
		t.Errorf("a connection error is an *APIError: %v", apiErr)
	}
}

func TestContextCanceled(t *testing.T) {
	f := newFakeAPI(t, "/v1/chat/completions")
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	_, err := newModel(f).Request(ctx, []agentrunner.Message{{Kind: agentrunner.KindRequest, Parts: []agentrunner.Part{agentrunner.UserPrompt("Hi")}}}, agentrunner.RequestParams{})
	if !errors.Is(err, context.Canceled) {
		t.Errorf("Request: got %v, want context.Canceled", err)
	}
}

// The base URL may carry a path, with or without a trailing slash.
func TestBaseURL(t *testing.T) {
	tests := []struct{ suffix, wantPath string }{
		{"/v1", "/v1/chat/completions"},
		{"/v1/", "/v1/chat/completions"},
		{"/openai/deployments/x/v1", "/openai/deployments/x/v1/chat/completions"},
		{"", "/chat/completions"},
	}
	for _, tt := range tests {
		t.Run(tt.suffix, func(t *testing.T) {
			f := newFakeAPI(t, tt.wantPath, completion("Hello."))
			m := openai.New(testModel, openai.WithBaseURL(f.URL(tt.suffix)))
			got, err := m.Request(t.Context(), []agentrunner.Message{{Kind: agentrunner.KindRequest, Parts: []agentrunner.Part{agentrunner.UserPrompt("Hi")}}}, agentrunner.RequestParams{})
			if err != nil {
				t.Fatalf("Request: %v", err)
			}
			if got.Text() != "Hello." {
				t.Errorf("text: got %q, want Hello.", got.Text())
			}
			if h := f.request(0).header.Get("Authorization"); h != "" {
				t.Errorf("Authorization without a key: got %q, want none", h)
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
	t.Setenv("OPENAI_BASE_URL", "http://127.0.0.1:1/v1")
	t.Setenv("OPENAI_API_KEY", "sk-from-the-environment")
	var gotURL, gotAuth string
	hc := &http.Client{Transport: roundTripFunc(func(r *http.Request) (*http.Response, error) {
		gotURL, gotAuth = r.URL.String(), r.Header.Get("Authorization")
		return &http.Response{StatusCode: 200, Header: http.Header{"Content-Type": {"application/json"}},
			Body: io.NopCloser(strings.NewReader(completion("Hello.").body)), Request: r}, nil
	})}
	m := openai.New(testModel, openai.WithAPIKey(testKey), openai.WithHTTPClient(hc), openai.WithBaseURL(""))
	if _, err := m.Request(t.Context(), []agentrunner.Message{{Kind: agentrunner.KindRequest, Parts: []agentrunner.Part{agentrunner.UserPrompt("Hi")}}}, agentrunner.RequestParams{}); err != nil {
		t.Fatalf("Request: %v", err)
	}
	if want := "https://api.openai.com/v1/chat/completions"; gotURL != want {
		t.Errorf("URL: got %q, want %q", gotURL, want)
	}
	if want := "Bearer " + testKey; gotAuth != want {
		t.Errorf("Authorization: got %q, want %q", gotAuth, want)
	}
}

// Every kind of part reaches the API where Pydantic AI puts it.
func TestHistoryMapping(t *testing.T) {
	f := newFakeAPI(t, "/v1/chat/completions", completion("Done."))
	m := newModel(f, openai.WithTemperature(0.2), openai.WithMaxTokens(500))
	unknown := agentrunner.Part{PartKind: "file", Raw: json.RawMessage(`{"part_kind":"file","content":"x"}`)}
	history := []agentrunner.Message{
		{Kind: agentrunner.KindRequest, Parts: []agentrunner.Part{
			{PartKind: agentrunner.PartSystemPrompt, Content: "Be brief."},
			agentrunner.UserPrompt("Refund A-17 and B-2."),
			unknown,
		}},
		{Kind: agentrunner.KindResponse, Parts: []agentrunner.Part{
			{PartKind: agentrunner.PartThinking, Content: "two refunds"},
			agentrunner.Text("Refunding both."),
			agentrunner.ToolCall("refund", json.RawMessage(quoted(`{"order_id":"A-17"}`)), "c1"),
			agentrunner.ToolCall("refund", json.RawMessage(`{"order_id":"B-2"}`), "c2"),
			agentrunner.ToolCall("refund", nil, "c3"),
			agentrunner.ToolCall("refund", json.RawMessage(`{"order_id":"C-3"}`), "c4"),
		}},
		{Kind: agentrunner.KindRequest, Parts: []agentrunner.Part{
			agentrunner.ToolReturn("refund", "c1", json.RawMessage(`{"refunded":10.5}`), agentrunner.OutcomeSuccess),
			agentrunner.ToolReturn("refund", "c2", json.RawMessage(`"The tool call was denied."`), agentrunner.OutcomeDenied),
			agentrunner.ToolReturn("refund", "c3", json.RawMessage(`"Tool failed: timeout"`), agentrunner.OutcomeFailed),
			agentrunner.RetryPrompt("refund", "c4", "order_id: unknown order"),
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
		"model": "gpt-4o-mini",
		"temperature": 0.2,
		"max_completion_tokens": 500,
		"messages": [
			{"role": "system", "content": "You refund orders."},
			{"role": "system", "content": "Be brief."},
			{"role": "user", "content": "Refund A-17 and B-2."},
			{"role": "assistant", "content": "Refunding both.", "tool_calls": [
				{"id": "c1", "type": "function", "function": {"name": "refund", "arguments": "{\"order_id\":\"A-17\"}"}},
				{"id": "c2", "type": "function", "function": {"name": "refund", "arguments": "{\"order_id\":\"B-2\"}"}},
				{"id": "c3", "type": "function", "function": {"name": "refund", "arguments": "{}"}},
				{"id": "c4", "type": "function", "function": {"name": "refund", "arguments": "{\"order_id\":\"C-3\"}"}}
			]},
			{"role": "tool", "tool_call_id": "c1", "content": "{\"refunded\":10.5}"},
			{"role": "tool", "tool_call_id": "c2", "content": "The tool call was denied."},
			{"role": "tool", "tool_call_id": "c3", "content": "Tool failed: timeout"},
			{"role": "tool", "tool_call_id": "c4", "content": "order_id: unknown order\n\nFix the errors and try again."},
			{"role": "user", "content": "Validation feedback:\nPlease answer in English.\n\nFix the errors and try again."}
		]
	}`)
}

func TestToolDefinitions(t *testing.T) {
	f := newFakeAPI(t, "/v1/chat/completions", completion("Done."))
	defs := []agentrunner.ToolDefinition{
		{Name: "ping", Description: ""},
		{Name: "limit", Description: "Set a limit.", Parameters: json.RawMessage(`{"type":"object","properties":{"n":{"type":"number","maximum":1e21,"multipleOf":0.1}},"required":["n"],"additionalProperties":false}`)},
	}
	history := []agentrunner.Message{{Kind: agentrunner.KindRequest, Parts: []agentrunner.Part{agentrunner.UserPrompt("Hi")}}}
	if _, err := newModel(f).Request(t.Context(), history, agentrunner.RequestParams{Tools: defs}); err != nil {
		t.Fatalf("Request: %v", err)
	}
	diffJSON(t, "tools", f.request(0).body["tools"], `[
		{"type": "function", "function": {"name": "ping", "parameters": {"type": "object", "properties": {}}}},
		{"type": "function", "function": {"name": "limit", "description": "Set a limit.", "parameters":
			{"type":"object","properties":{"n":{"type":"number","maximum":1e21,"multipleOf":0.1}},"required":["n"],"additionalProperties":false}}}
	]`)

	_, err := newModel(f).Request(t.Context(), history, agentrunner.RequestParams{Tools: []agentrunner.ToolDefinition{{Name: "bad", Parameters: json.RawMessage(`{`)}}})
	if err == nil || !strings.HasPrefix(err.Error(), "openai gpt-4o-mini: tool bad: parameters: ") {
		t.Errorf("bad schema: got %v, want an error naming the provider, model and tool", err)
	}
}

// Answers that cannot be a response are errors naming the provider.
func TestResponses(t *testing.T) {
	msg := func(m map[string]any) map[string]any {
		return map[string]any{"index": 0, "message": m, "finish_reason": "stop", "logprobs": nil}
	}
	tests := []struct {
		name      string
		reply     reply
		wantParts []agentrunner.Part // compared without generated ids
		wantErr   error
		wantText  string // in the error
	}{
		{name: "no choices", reply: rawCompletion(), wantErr: openai.ErrEmptyResponse, wantText: "openai gpt-4o-mini: empty response: no choices"},
		{name: "error body with status 200", reply: reply{body: `{"error":{"message":"This model's maximum context length is 8192 tokens.","type":"invalid_request_error"}}`},
			wantErr: openai.ErrEmptyResponse, wantText: "openai gpt-4o-mini: empty response: no choices: This model's maximum context length is 8192 tokens."},
		{name: "empty choice", reply: rawCompletion(msg(map[string]any{"role": "assistant", "content": nil})), wantErr: openai.ErrEmptyResponse,
			wantText: `openai gpt-4o-mini: empty response: no text and no tool calls (finish_reason "stop")`},
		{name: "not JSON", reply: reply{body: "{not json"}, wantText: "openai gpt-4o-mini: "},
		{name: "call without a name", reply: completion("", call{id: "c1", args: quoted("{}")}), wantErr: openai.ErrMalformedResponse,
			wantText: "openai gpt-4o-mini: malformed response: tool call 0 has no function name"},
		{name: "refusal", reply: rawCompletion(msg(map[string]any{"role": "assistant", "content": nil, "refusal": "I can't help with that."})),
			wantParts: []agentrunner.Part{agentrunner.Text("I can't help with that.")}},
		{name: "text and calls, first choice", reply: rawCompletion(
			msg(map[string]any{"role": "assistant", "content": "Looking.", "tool_calls": []any{
				map[string]any{"id": "c1", "type": "function", "function": map[string]any{"name": "lookup_order", "arguments": ""}},
				map[string]any{"type": "function", "function": map[string]any{"name": "lookup_order", "arguments": `{"order_id":"B"}`}},
			}}),
			msg(map[string]any{"role": "assistant", "content": "second choice"}),
		), wantParts: []agentrunner.Part{
			agentrunner.Text("Looking."),
			agentrunner.ToolCall("lookup_order", json.RawMessage(`{}`), "c1"),
			agentrunner.ToolCall("lookup_order", json.RawMessage(`{"order_id":"B"}`), "(generated)"),
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFakeAPI(t, "/v1/chat/completions", tt.reply)
			got, err := newModel(f).Request(t.Context(), []agentrunner.Message{{Kind: agentrunner.KindRequest, Parts: []agentrunner.Part{agentrunner.UserPrompt("Hi")}}}, agentrunner.RequestParams{})
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
			if got.Kind != agentrunner.KindResponse {
				t.Errorf("kind: got %s, want response", got.Kind)
			}
			if len(got.Parts) != len(tt.wantParts) {
				t.Fatalf("parts: got %+v, want %+v", got.Parts, tt.wantParts)
			}
			for i, want := range tt.wantParts {
				p := got.Parts[i]
				if want.ToolCallID == "(generated)" {
					if !strings.HasPrefix(p.ToolCallID, "call_") {
						t.Errorf("part %d: got id %q, want a generated call_ id", i, p.ToolCallID)
					}
					want.ToolCallID = p.ToolCallID
				}
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
	m := openai.New(testModel, openai.WithAPIKey(testKey))
	for _, verb := range []string{"%v", "%+v", "%#v", "%s"} {
		if s := fmt.Sprintf(verb, m); strings.Contains(s, testKey) {
			t.Errorf("Sprintf(%q) shows the key: %s", verb, s)
		}
	}
	if got := m.String(); got != "openai:gpt-4o-mini" {
		t.Errorf("String: got %q, want openai:gpt-4o-mini", got)
	}
}

// A short placeholder key, as Ollama users set, is not redacted from
// messages that happen to contain it.
func TestShortKeyNotRedacted(t *testing.T) {
	f := newFakeAPI(t, "/v1/chat/completions", reply{status: 404, body: `{"error":{"message":"model \"llama3.1\" not found, try pulling it first with ollama pull","type":"api_error"}}`})
	m := openai.New("llama3.1", openai.WithAPIKey("ollama"), openai.WithBaseURL(f.URL("/v1")))
	_, err := m.Request(t.Context(), []agentrunner.Message{{Kind: agentrunner.KindRequest, Parts: []agentrunner.Part{agentrunner.UserPrompt("Hi")}}}, agentrunner.RequestParams{})
	want := `openai llama3.1: 404 Not Found: model "llama3.1" not found, try pulling it first with ollama pull`
	if err == nil || err.Error() != want {
		t.Errorf("error: got %v, want %q", err, want)
	}
}

// One Model serves concurrent runs.
func TestConcurrentRequests(t *testing.T) {
	const n = 8
	replies := make([]reply, n)
	for i := range replies {
		replies[i] = completion("Hello.")
	}
	f := newFakeAPI(t, "/v1/chat/completions", replies...)
	m := newModel(f)
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
			_, err := m.Request(t.Context(), []agentrunner.Message{{Kind: agentrunner.KindRequest, Parts: []agentrunner.Part{agentrunner.UserPrompt("Hi")}}}, agentrunner.RequestParams{})
			if err != nil {
				t.Errorf("Request: %v", err)
			}
		})
	}
	wg.Wait()
	if got := len(f.Requests()); got != n {
		t.Errorf("server got %d requests, want %d", got, n)
	}
}
