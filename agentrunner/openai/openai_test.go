package openai_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/slackapprove/slackbot/agentrunner"
	"github.com/slackapprove/slackbot/agentrunner/internal/providertest"
	"github.com/slackapprove/slackbot/agentrunner/openai"
)

const (
	testModel = "gpt-4o-mini"
	testKey   = "sk-test-0123456789abcdef"
)

func newModel(f *providertest.FakeAPI, opts ...openai.Option) *openai.Model {
	opts = append([]openai.Option{
		openai.WithAPIKey(testKey),
		openai.WithBaseURL(f.URL("/v1")),
		openai.WithHTTPClient(f.Client()),
	}, opts...)
	return openai.New(testModel, opts...)
}

// toolsJSON is what the API must receive for tools.
func toolsJSON(tools ...*agentrunner.Tool) string {
	var out []any
	for _, t := range tools {
		out = append(out, map[string]any{"type": "function", "function": map[string]any{
			"name": t.Name(), "description": t.Description(), "parameters": json.RawMessage(t.Schema()),
		}})
	}
	return providertest.MustJSON(out)
}

// The model asks for lookup_order, the runner runs it, and the second
// request carries the call and its result; then the model answers.
func TestToolCallRoundTrip(t *testing.T) {
	f := providertest.NewFakeAPI(t, path,
		completion("", call{id: "call_1", name: "lookup_order", args: quoted(`{"order_id":"A-17"}`)}),
		completion(providertest.LookupAnswer),
	)
	var ran atomic.Int32
	tool := providertest.LookupOrder(&ran)
	res := providertest.Lookup(t, providertest.NewRunner(t, newModel(f), tool), f, &ran)

	first := f.Request(0)
	if got, want := first.Header.Get("Authorization"), "Bearer "+testKey; got != want {
		t.Errorf("Authorization: got %q, want %q", got, want)
	}
	providertest.DiffJSON(t, "first request", first.Body, `{
		"model": "gpt-4o-mini",
		"messages": [
			{"role": "system", "content": "You help with orders."},
			{"role": "user", "content": "Where is order A-17?"}
		],
		"tools": `+toolsJSON(tool)+`
	}`)
	providertest.DiffJSON(t, "second request", f.Request(1).Body, `{
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
			f := providertest.NewFakeAPI(t, path,
				completion("", call{id: "call_1", name: "lookup_order", args: tt.args}),
				completion("Shipped."),
			)
			var ran atomic.Int32
			r := providertest.NewRunner(t, newModel(f), providertest.LookupOrder(&ran))
			if _, err := r.Run(t.Context(), agentrunner.RunInput{Prompt: "Where is A-17?"}); err != nil {
				t.Fatalf("Run: %v", err)
			}
			if got := ran.Load(); got != 1 {
				t.Errorf("tool ran %d times, want 1", got)
			}
			msgs := f.Request(1).Body["messages"].([]any)
			providertest.DiffJSON(t, "assistant message", msgs[2], `{"role": "assistant", "tool_calls": [
				{"id": "call_1", "type": "function", "function": {"name": "lookup_order", "arguments": "{\"order_id\":\"A-17\"}"}}]}`)
		})
	}
}

// Arguments that are not JSON go back to the model as a retry prompt on
// the call, with the arguments it sent.
func TestMalformedArgumentsRetry(t *testing.T) {
	f := providertest.NewFakeAPI(t, path,
		completion("", call{id: "call_1", name: "lookup_order", args: quoted(`{order_id: A-17`)}),
		completion("", call{id: "call_2", name: "lookup_order", args: quoted(`{"order_id":"A-17"}`)}),
		completion("Shipped."),
	)
	var ran atomic.Int32
	r := providertest.NewRunner(t, newModel(f), providertest.LookupOrder(&ran))
	if _, err := r.Run(t.Context(), agentrunner.RunInput{Prompt: "Where is A-17?"}); err != nil {
		t.Fatalf("Run: %v", err)
	}
	msgs := f.Request(1).Body["messages"].([]any)
	providertest.DiffJSON(t, "assistant message", msgs[2], `{"role": "assistant", "tool_calls": [
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
	f := providertest.NewFakeAPI(t, path,
		completion("", call{id: "call_9", name: "cancel_order", args: quoted(`{"order_id":"A-17"}`)}),
		completion("I could not cancel A-17: a manager has to approve it."),
	)
	var ran atomic.Int32
	tool := providertest.CancelOrder(&ran)
	r := providertest.NewRunner(t, newModel(f), tool)

	providertest.Deny(t, r, f, &ran, "call_9")
	providertest.DiffJSON(t, "messages after the denial", f.Request(1).Body["messages"], `[
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
			f := providertest.NewFakeAPI(t, path, tt.first, completion("Hello."))
			providertest.CheckRetried(t, providertest.NewRunner(t, newModel(f)), f, "Hello.")
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
			name:         "500 repeated",
			replies:      providertest.Repeat(apiError(500, "The server had an error while processing your request.", "server_error", "", noWait), 3),
			wantRequests: 3,
			wantStatus:   500,
			wantErr:      "model request: openai gpt-4o-mini: 500 Internal Server Error: The server had an error while processing your request.",
		},
		{
			name:         "404 from vLLM, message at the top level",
			replies:      []reply{{Status: 404, Body: `{"object":"error","message":"The model ` + "`gpt-4o-mini`" + ` does not exist.","type":"NotFoundError","param":null,"code":404}`}},
			wantRequests: 1,
			wantStatus:   404,
			wantErr:      "model request: openai gpt-4o-mini: 404 Not Found: The model `gpt-4o-mini` does not exist.",
		},
		{
			name:         "400 with a plain string error",
			replies:      []reply{{Status: 400, Body: `{"error":"model \"gpt-4o-mini\" not found, try pulling it first"}`}},
			wantRequests: 1,
			wantStatus:   400,
			wantErr:      `model request: openai gpt-4o-mini: 400 Bad Request: model "gpt-4o-mini" not found, try pulling it first`,
		},
		{
			name:         "502 HTML page from a proxy",
			replies:      providertest.Repeat(reply{Status: 502, Header: map[string]string{"Content-Type": "text/html", "retry-after-ms": "0"}, Body: "<html><body>Bad gateway</body></html>"}, 3),
			wantRequests: 3,
			wantStatus:   502,
			wantErr:      "model request: openai gpt-4o-mini: 502 Bad Gateway",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := providertest.NewFakeAPI(t, path, tt.replies...)
			r := providertest.NewRunner(t, newModel(f, openai.WithMaxRetries(2)))
			err := providertest.RunError(t, r, f, testKey, tt.wantErr, tt.wantRequests)
			var apiErr *openai.APIError
			if !errors.As(err, &apiErr) || apiErr.StatusCode != tt.wantStatus {
				t.Errorf("errors.As(*APIError): got %v, want status %d", apiErr, tt.wantStatus)
			}
		})
	}
}

func TestConnectionError(t *testing.T) {
	f := providertest.NewFakeAPI(t, path)
	url := f.URL("/v1")
	f.Close()
	m := openai.New(testModel, openai.WithAPIKey(testKey), openai.WithBaseURL(url), openai.WithMaxRetries(0))
	err := providertest.CheckRequestError(t.Context(), t, m, testKey, "openai gpt-4o-mini: ", nil)
	var apiErr *openai.APIError
	if errors.As(err, &apiErr) {
		t.Errorf("a connection error is an *APIError: %v", apiErr)
	}
}

func TestContextCanceled(t *testing.T) {
	f := providertest.NewFakeAPI(t, path)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	providertest.CheckRequestError(ctx, t, newModel(f), testKey, "openai gpt-4o-mini: ", context.Canceled)
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
			f := providertest.NewFakeAPI(t, tt.wantPath, completion("Hello."))
			m := openai.New(testModel, openai.WithBaseURL(f.URL(tt.suffix)))
			got, err := m.Request(t.Context(), providertest.Prompt("Hi"), agentrunner.RequestParams{})
			if err != nil {
				t.Fatalf("Request: %v", err)
			}
			if got.Text() != "Hello." {
				t.Errorf("text: got %q, want Hello.", got.Text())
			}
			if h := f.Request(0).Header.Get("Authorization"); h != "" {
				t.Errorf("Authorization without a key: got %q, want none", h)
			}
		})
	}
}

// The SDK's environment variables are ignored: configuration comes from
// the options only.
func TestDefaultsIgnoreEnvironment(t *testing.T) {
	t.Setenv("OPENAI_BASE_URL", "http://127.0.0.1:1/v1")
	t.Setenv("OPENAI_API_KEY", "sk-from-the-environment")
	var gotURL, gotAuth string
	hc := providertest.StubClient(completion("Hello.").Body, func(r *http.Request) {
		gotURL, gotAuth = r.URL.String(), r.Header.Get("Authorization")
	})
	m := openai.New(testModel, openai.WithAPIKey(testKey), openai.WithHTTPClient(hc), openai.WithBaseURL(""))
	if _, err := m.Request(t.Context(), providertest.Prompt("Hi"), agentrunner.RequestParams{}); err != nil {
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
	f := providertest.NewFakeAPI(t, path, completion("Done."))
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
	providertest.DiffJSON(t, "request", f.Request(0).Body, `{
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
	f := providertest.NewFakeAPI(t, path, completion("Done."))
	defs := []agentrunner.ToolDefinition{
		{Name: "ping", Description: ""},
		{Name: "limit", Description: "Set a limit.", Parameters: json.RawMessage(`{"type":"object","properties":{"n":{"type":"number","maximum":1e21,"multipleOf":0.1}},"required":["n"],"additionalProperties":false}`)},
	}
	history := providertest.Prompt("Hi")
	if _, err := newModel(f).Request(t.Context(), history, agentrunner.RequestParams{Tools: defs}); err != nil {
		t.Fatalf("Request: %v", err)
	}
	providertest.DiffJSON(t, "tools", f.Request(0).Body["tools"], `[
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
		{name: "error body with status 200", reply: reply{Body: `{"error":{"message":"This model's maximum context length is 8192 tokens.","type":"invalid_request_error"}}`},
			wantErr: openai.ErrEmptyResponse, wantText: "openai gpt-4o-mini: empty response: no choices: This model's maximum context length is 8192 tokens."},
		{name: "empty choice", reply: rawCompletion(msg(map[string]any{"role": "assistant", "content": nil})), wantErr: openai.ErrEmptyResponse,
			wantText: `openai gpt-4o-mini: empty response: no text and no tool calls (finish_reason "stop")`},
		{name: "not JSON", reply: reply{Body: "{not json"}, wantText: "openai gpt-4o-mini: "},
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
			f := providertest.NewFakeAPI(t, path, tt.reply)
			if tt.wantText != "" {
				providertest.CheckRequestError(t.Context(), t, newModel(f), testKey, tt.wantText, tt.wantErr)
				return
			}
			got, err := newModel(f).Request(t.Context(), providertest.Prompt("Hi"), agentrunner.RequestParams{})
			if err != nil {
				t.Fatalf("Request: %v", err)
			}
			if got.Kind != agentrunner.KindResponse {
				t.Errorf("kind: got %s, want response", got.Kind)
			}
			want := slices.Clone(tt.wantParts)
			for i := range want {
				if want[i].ToolCallID == "(generated)" && i < len(got.Parts) {
					if id := got.Parts[i].ToolCallID; strings.HasPrefix(id, "call_") {
						want[i].ToolCallID = id
					}
				}
			}
			providertest.DiffParts(t, got.Parts, want)
		})
	}
}

// A Model never shows its key, whichever way it is printed.
func TestPrintingHidesKey(t *testing.T) {
	providertest.CheckPrinting(t, openai.New(testModel, openai.WithAPIKey(testKey)), testKey, "openai:gpt-4o-mini")
}

// A short placeholder key, as Ollama users set, is not redacted from
// messages that happen to contain it.
func TestShortKeyNotRedacted(t *testing.T) {
	f := providertest.NewFakeAPI(t, path, reply{Status: 404, Body: `{"error":{"message":"model \"llama3.1\" not found, try pulling it first with ollama pull","type":"api_error"}}`})
	m := openai.New("llama3.1", openai.WithAPIKey("ollama"), openai.WithBaseURL(f.URL("/v1")))
	_, err := m.Request(t.Context(), providertest.Prompt("Hi"), agentrunner.RequestParams{})
	want := `openai llama3.1: 404 Not Found: model "llama3.1" not found, try pulling it first with ollama pull`
	if err == nil || err.Error() != want {
		t.Errorf("error: got %v, want %q", err, want)
	}
}

// One Model serves concurrent runs.
func TestConcurrentRequests(t *testing.T) {
	const n = 8
	f := providertest.NewFakeAPI(t, path, providertest.Repeat(completion("Hello."), n)...)
	providertest.CheckConcurrent(t, newModel(f), f, n)
}
