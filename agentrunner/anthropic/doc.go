// Package anthropic is an agentrunner.Model backed by Anthropic's Messages
// API, through github.com/anthropics/anthropic-sdk-go/v2.
//
// The run's history maps onto the Messages API as Pydantic AI maps it: the
// instructions and system-prompt parts become the system parameter; user
// prompts, tool results and retry prompts become user turns; the model's
// text and tool calls assistant turns with tool_use blocks. Consecutive
// turns of one role are merged, since the API requires user and assistant to
// alternate, so the results of one response's calls travel in one user turn,
// tool_result blocks first. A failed call and a retry prompt about a call are
// tool_result blocks with is_error set; a denied call is an ordinary result
// whose text is the denial, since the call did not fail: a person declined it.
// Thinking is kept in responses but not sent back: without extended
// thinking's signatures the API would refuse it.
//
// Requests that fail with 408, 409, 429 or 5xx (529 overloaded included), or
// without a response, are retried with exponential backoff by the SDK,
// honouring the retry-after-ms and Retry-After headers. What still fails is
// an error that names the provider and the model and, for HTTP errors, an
// *APIError with the status and the API's message, ready to show to a
// person:
//
//	anthropic claude-sonnet-4-5: 401 Unauthorized: invalid x-api-key
//
// The API key never appears in an error, nor when a Model is printed.
//
// Configuration, as slackbot reads it from the environment:
//
//	MODEL=anthropic:claude-sonnet-4-5  ANTHROPIC_API_KEY=sk-ant-...
//
// which becomes
//
//	m := anthropic.New("claude-sonnet-4-5", anthropic.WithAPIKey(os.Getenv("ANTHROPIC_API_KEY")))
//
// The package reads no environment variable itself (the SDK's client would
// read ANTHROPIC_* variables and profile files; it is told not to).
package anthropic
