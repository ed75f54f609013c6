package anthropic_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/slackapprove/slackbot/agentrunner"
	"github.com/slackapprove/slackbot/agentrunner/anthropic"
	"github.com/slackapprove/slackbot/agentrunner/internal/providertest"
)

const (
	testModel = "claude-sonnet-4-5"
	testKey   = "sk-ant-test-0123456789abcdef"
)

func newModel(f *providertest.FakeAPI, opts ...anthropic.Option) *anthropic.Model {
	opts = append([]anthropic.Option{
		anthropic.WithAPIKey(testKey),
		anthropic.WithBaseURL(f.URL("")),
		anthropic.WithHTTPClient(f.Client()),
	}, opts...)
	return anthropic.New(testModel, opts...)
}

// toolsJSON is what the API must receive for tools.
func toolsJSON(tools ...*agentrunner.Tool) string {
	var out []any
	for _, t := range tools {
		out = append(out, map[string]any{"name": t.Name(), "description": t.Description(), "input_schema": json.RawMessage(t.Schema())})
	}
	return providertest.MustJSON(out)
}

// The model asks for lookup_order, the runner runs it, and the second
// request carries the call and its result; then the model answers.
func TestToolCallRoundTrip(t *testing.T) {
	f := providertest.NewFakeAPI(t, path,
		message(text("Let me check."), toolUse("toolu_01", "lookup_order", `{"order_id": "A-17"}`)),
		message(text(providertest.LookupAnswer)),
	)
	var ran atomic.Int32
	tool := providertest.LookupOrder(&ran)
	res := providertest.Lookup(t, providertest.NewRunner(t, newModel(f), tool), f, &ran)

	first := f.Request(0)
	if got, want := first.Header.Get("Authorization"), "Bearer "+testKey; got != want {
		t.Errorf("Authorization: got %q, want %q", got, want)
	}
	if first.Header.Get("Anthropic-Version") == "" {
		t.Error("no anthropic-version header")
	}
	providertest.DiffJSON(t, "first request", first.Body, `{
		"model": "claude-sonnet-4-5",
		"max_tokens": 4096,
		"system": [{"type": "text", "text": "You help with orders."}],
		"messages": [
			{"role": "user", "content": [{"type": "text", "text": "Where is order A-17?"}]}
		],
		"tools": `+toolsJSON(tool)+`
	}`)
	providertest.DiffJSON(t, "second request", f.Request(1).Body, `{
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
	f := providertest.NewFakeAPI(t, path,
		message(toolUse("toolu_a", "lookup_order", `{"order_id":"A-17"}`), toolUse("toolu_b", "lookup_order", `{"order_id":"B-2"}`)),
		message(text("A-17 shipped; B-2 could not be looked up.")),
	)
	var ran atomic.Int32
	r := providertest.NewRunner(t, newModel(f), providertest.LookupOrder(&ran))
	if _, err := r.Run(t.Context(), agentrunner.RunInput{Prompt: "Where are A-17 and B-2?"}); err != nil {
		t.Fatalf("Run: %v", err)
	}
	providertest.DiffJSON(t, "messages", f.Request(1).Body["messages"], `[
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
	f := providertest.NewFakeAPI(t, path,
		message(toolUse("toolu_9", "cancel_order", `{"order_id":"A-17"}`)),
		message(text("I could not cancel A-17: a manager has to approve it.")),
	)
	var ran atomic.Int32
	r := providertest.NewRunner(t, newModel(f), providertest.CancelOrder(&ran))

	providertest.Deny(t, r, f, &ran, "toolu_9")
	providertest.DiffJSON(t, "messages after the denial", f.Request(1).Body["messages"], `[
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
			f := providertest.NewFakeAPI(t, path, tt.first, message(text("Hello.")))
			providertest.CheckRetried(t, providertest.NewRunner(t, newModel(f)), f, "Hello.")
		})
	}
}

// What still fails after retries is an error that says which provider,
// which model, which status and what the API said, without the key.
func TestHardFailure(t *testing.T) {
	noWait := map[string]string{"retry-after-ms": "0"}
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
			replies:      providertest.Repeat(apiError(500, "api_error", "Internal server error", noWait), 3),
			wantRequests: 3, wantStatus: 500, wantType: "api_error",
			wantErr: "model request: anthropic claude-sonnet-4-5: 500 Internal Server Error: Internal server error",
		},
		{
			name:         "529 repeated",
			replies:      providertest.Repeat(apiError(529, "overloaded_error", "Overloaded", noWait), 3),
			wantRequests: 3, wantStatus: 529, wantType: "overloaded_error",
			wantErr: "model request: anthropic claude-sonnet-4-5: 529 Overloaded: Overloaded",
		},
		{
			name:         "403 from a gateway in its own shape",
			replies:      []reply{{Status: 403, Body: `{"message":"Forbidden by policy"}`}},
			wantRequests: 1, wantStatus: 403,
			wantErr: "model request: anthropic claude-sonnet-4-5: 403 Forbidden: Forbidden by policy",
		},
		{
			name:         "502 HTML page from a proxy",
			replies:      providertest.Repeat(reply{Status: 502, Header: map[string]string{"Content-Type": "text/html", "retry-after-ms": "0"}, Body: "<html>Bad gateway</html>"}, 3),
			wantRequests: 3, wantStatus: 502,
			wantErr: "model request: anthropic claude-sonnet-4-5: 502 Bad Gateway",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := providertest.NewFakeAPI(t, path, tt.replies...)
			r := providertest.NewRunner(t, newModel(f, anthropic.WithMaxRetries(2)))
			err := providertest.RunError(t, r, f, testKey, tt.wantErr, tt.wantRequests)
			var apiErr *anthropic.APIError
			if !errors.As(err, &apiErr) || apiErr.StatusCode != tt.wantStatus || apiErr.Type != tt.wantType {
				t.Errorf("errors.As(*APIError): got %+v, want status %d type %q", apiErr, tt.wantStatus, tt.wantType)
			}
		})
	}
}

func TestConnectionError(t *testing.T) {
	f := providertest.NewFakeAPI(t, path)
	url := f.URL("")
	f.Close()
	m := anthropic.New(testModel, anthropic.WithAPIKey(testKey), anthropic.WithBaseURL(url), anthropic.WithMaxRetries(0))
	err := providertest.CheckRequestError(t.Context(), t, m, testKey, "anthropic claude-sonnet-4-5: ", nil)
	var apiErr *anthropic.APIError
	if errors.As(err, &apiErr) {
		t.Errorf("a connection error is an *APIError: %v", apiErr)
	}
}

func TestContextCanceled(t *testing.T) {
	f := providertest.NewFakeAPI(t, path)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	providertest.CheckRequestError(ctx, t, newModel(f), testKey, "anthropic claude-sonnet-4-5: ", context.Canceled)
}

func TestBaseURL(t *testing.T) {
	tests := []struct{ suffix, wantPath string }{
		{"", "/v1/messages"},
		{"/", "/v1/messages"},
		{"/gateway/anthropic", "/gateway/anthropic/v1/messages"},
	}
	for _, tt := range tests {
		t.Run(tt.suffix, func(t *testing.T) {
			f := providertest.NewFakeAPI(t, tt.wantPath, message(text("Hello.")))
			m := anthropic.New(testModel, anthropic.WithBaseURL(f.URL(tt.suffix)))
			got, err := m.Request(t.Context(), providertest.Prompt("Hi"), agentrunner.RequestParams{})
			if err != nil {
				t.Fatalf("Request: %v", err)
			}
			if got.Text() != "Hello." {
				t.Errorf("text: got %q, want Hello.", got.Text())
			}
		})
	}
}

// The SDK's environment variables are ignored: configuration comes from
// the options only.
func TestDefaultsIgnoreEnvironment(t *testing.T) {
	t.Setenv("ANTHROPIC_BASE_URL", "http://127.0.0.1:1")
	t.Setenv("ANTHROPIC_API_KEY", "sk-ant-from-the-environment")
	var (
		gotURL  string
		gotAuth string
	)
	hc := providertest.StubClient(message(text("Hello.")).Body, func(r *http.Request) {
		gotURL, gotAuth = r.URL.String(), r.Header.Get("Authorization")+r.Header.Get("X-Api-Key")
	})
	m := anthropic.New(testModel, anthropic.WithAPIKey(testKey), anthropic.WithHTTPClient(hc))
	if _, err := m.Request(t.Context(), providertest.Prompt("Hi"), agentrunner.RequestParams{}); err != nil {
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
	f := providertest.NewFakeAPI(t, path, message(text("Done.")))
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
	providertest.DiffJSON(t, "request", f.Request(0).Body, `{
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
	f := providertest.NewFakeAPI(t, path, message(text("Done.")))
	defs := []agentrunner.ToolDefinition{
		{Name: "ping"},
		{Name: "limit", Description: "Set a limit.", Parameters: json.RawMessage(`{"$schema":"https://json-schema.org/draft/2020-12/schema","type":"object","properties":{"n":{"type":"number","maximum":1e21,"multipleOf":0.1}},"required":["n"],"additionalProperties":false,"$defs":{"x":{"type":"string"}}}`)},
	}
	if _, err := newModel(f).Request(t.Context(), providertest.Prompt("Hi"), agentrunner.RequestParams{Tools: defs}); err != nil {
		t.Fatalf("Request: %v", err)
	}
	providertest.DiffJSON(t, "tools", f.Request(0).Body["tools"], `[
		{"name": "ping", "input_schema": {"type": "object", "properties": {}}},
		{"name": "limit", "description": "Set a limit.", "input_schema":
			{"$schema":"https://json-schema.org/draft/2020-12/schema","type":"object","properties":{"n":{"type":"number","maximum":1e21,"multipleOf":0.1}},"required":["n"],"additionalProperties":false,"$defs":{"x":{"type":"string"}}}}
	]`)

	_, err := newModel(f).Request(t.Context(), providertest.Prompt("Hi"), agentrunner.RequestParams{Tools: []agentrunner.ToolDefinition{{Name: "bad", Parameters: json.RawMessage(`{`)}}})
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
		{name: "not JSON", reply: reply{Body: "{not json"}, wantText: "anthropic claude-sonnet-4-5: "},
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
			f := providertest.NewFakeAPI(t, path, tt.reply)
			if tt.wantText != "" {
				providertest.CheckRequestError(t.Context(), t, newModel(f), testKey, tt.wantText, tt.wantErr)
				return
			}
			got, err := newModel(f).Request(t.Context(), providertest.Prompt("Hi"), agentrunner.RequestParams{})
			if err != nil {
				t.Fatalf("Request: %v", err)
			}
			providertest.DiffParts(t, got.Parts, tt.wantParts)
		})
	}
}

// A Model never shows its key, whichever way it is printed.
func TestPrintingHidesKey(t *testing.T) {
	providertest.CheckPrinting(t, anthropic.New(testModel, anthropic.WithAPIKey(testKey)), testKey, "anthropic:claude-sonnet-4-5")
}

// One Model serves concurrent runs.
func TestConcurrentRequests(t *testing.T) {
	const n = 8
	f := providertest.NewFakeAPI(t, path, providertest.Repeat(message(text("Hello.")), n)...)
	providertest.CheckConcurrent(t, newModel(f), f, n)
}
