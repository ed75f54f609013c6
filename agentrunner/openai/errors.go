package openai

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"

	sdk "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/slackapprove/slackbot/agentrunner/internal/provider"
)

// ErrEmptyResponse is returned (wrapped) when the server answers without
// choices, or with a choice that has neither text nor tool calls.
var ErrEmptyResponse = errors.New("empty response")

// ErrMalformedResponse is returned (wrapped) when a response cannot be
// mapped onto agentrunner's messages, e.g. a tool call without a name.
var ErrMalformedResponse = errors.New("malformed response")

// APIError is an HTTP error the server answered with, after retries. Its
// text is the status and the server's message, e.g. "429 Too Many Requests:
// Rate limit reached for gpt-4o-mini". It unwraps to the SDK's *openai.Error.
type APIError struct {
	// StatusCode is the HTTP status.
	StatusCode int
	// Type and Code classify the error when the server does, e.g.
	// "invalid_request_error" and "invalid_api_key".
	Type, Code string
	// Message is the server's explanation, with the API key redacted.
	Message string

	err error
}

// Error returns the status and the server's message.
func (e *APIError) Error() string {
	return provider.ErrorText(e.StatusCode, http.StatusText(e.StatusCode), e.Message)
}

// Unwrap returns the SDK's error.
func (e *APIError) Unwrap() error { return e.err }

// newAPIError returns the *APIError for the SDK's error, the API key
// hidden in its message. normalizeErrors has already put the message of
// any server's error body where the SDK reads it.
func newAPIError(e *sdk.Error, redact *provider.Redactor) error {
	return &APIError{StatusCode: e.StatusCode, Type: e.Type, Code: e.Code, Message: provider.ServerMessage(e.Message, redact), err: e}
}

// normalizeErrors is a middleware that rewrites an error response whose
// body is not OpenAI's {"error":{...}} into that shape, keeping the message
// it finds. OpenAI-compatible servers differ here (vLLM puts "message" at
// the top level, others send {"error":"..."} or a proxy's HTML page), and
// the SDK, which expects OpenAI's shape, would otherwise lose the status
// or the message.
func normalizeErrors(req *http.Request, next option.MiddlewareNext) (*http.Response, error) {
	res, err := next(req)
	if err != nil || res.StatusCode < 400 || res.Body == nil {
		return res, err
	}
	body, rerr := io.ReadAll(io.LimitReader(res.Body, 1<<20))
	_ = res.Body.Close()
	if rerr != nil {
		body = nil
	}
	var shaped struct {
		Error json.RawMessage `json:"error"`
	}
	if json.Unmarshal(body, &shaped) != nil || !bytes.HasPrefix(bytes.TrimSpace(shaped.Error), []byte("{")) {
		body, _ = json.Marshal(map[string]any{"error": map[string]string{"message": bodyMessage(body)}})
		res.Header.Set("Content-Type", "application/json")
	}
	res.Body = io.NopCloser(bytes.NewReader(body))
	res.ContentLength = int64(len(body))
	res.Header.Del("Content-Length")
	return res, nil
}

// bodyMessage finds an error message in a response body: in OpenAI's own
// {"error":{"message":...}} first, then in the shapes other servers use
// (provider.BodyMessage).
func bodyMessage(body []byte) string {
	var openAI struct {
		Error struct {
			Message string `json:"message"`
		} `json:"error"`
	}
	if json.Unmarshal(body, &openAI) == nil && openAI.Error.Message != "" {
		return openAI.Error.Message
	}
	return provider.BodyMessage(body)
}
