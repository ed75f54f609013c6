package anthropic

import (
	"errors"
	"net/http"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"

	"github.com/slackapprove/slackbot/agentrunner/internal/provider"
)

// ErrEmptyResponse is returned (wrapped) when the API answers without text
// or tool calls.
var ErrEmptyResponse = errors.New("empty response")

// ErrMalformedResponse is returned (wrapped) when a response cannot be
// mapped onto agentrunner's messages, e.g. a tool_use block without a name.
var ErrMalformedResponse = errors.New("malformed response")

// APIError is an HTTP error the API answered with, after retries. Its text
// is the status and the API's message, e.g. "529 Overloaded". It unwraps to
// the SDK's *anthropic.Error.
type APIError struct {
	// StatusCode is the HTTP status.
	StatusCode int
	// Type classifies the error, e.g. "authentication_error" or
	// "overloaded_error", when the API does.
	Type string
	// Message is the API's explanation, with the API key redacted.
	Message string

	err error
}

// Error returns the status and the API's message.
func (e *APIError) Error() string {
	return provider.ErrorText(e.StatusCode, statusText(e.StatusCode), e.Message)
}

// Unwrap returns the SDK's error.
func (e *APIError) Unwrap() error { return e.err }

// statusText is http.StatusText, knowing Anthropic's 529.
func statusText(code int) string {
	if code == 529 {
		return "Overloaded"
	}
	return http.StatusText(code)
}

// newAPIError returns the *APIError for the SDK's error, the API key
// hidden in its message.
func newAPIError(e *sdk.Error, redact *provider.Redactor) error {
	msg := e.Message // the SDK reads Anthropic's {"error":{"message":...}}
	if msg == "" {
		// A gateway in front of the API may answer in its own shape.
		msg = provider.BodyMessage([]byte(e.RawJSON()))
	}
	return &APIError{StatusCode: e.StatusCode, Type: string(e.Type()), Message: provider.ServerMessage(msg, redact), err: e}
}
