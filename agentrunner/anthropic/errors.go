package anthropic

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"unicode/utf8"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"
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
	s := strconv.Itoa(e.StatusCode)
	if t := statusText(e.StatusCode); t != "" {
		s += " " + t
	}
	if e.Message != "" {
		s += ": " + e.Message
	}
	return s
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

// maxMessage bounds the API's message in an error, which ends up in a Slack
// thread.
const maxMessage = 1000

func newAPIError(e *sdk.Error, redact *strings.Replacer) *APIError {
	msg := e.Message
	if msg == "" {
		// A gateway in front of the API may answer in its own shape.
		msg = bodyMessage([]byte(e.RawJSON()))
	}
	msg = truncate(strings.TrimSpace(msg), maxMessage)
	if redact != nil {
		msg = redact.Replace(msg)
	}
	return &APIError{StatusCode: e.StatusCode, Type: string(e.Type()), Message: msg, err: e}
}

// bodyMessage finds an error message in a response body of the shapes
// gateways use: {"message":...}, {"error":"..."}, {"detail":"..."}, or
// short plain text.
func bodyMessage(body []byte) string {
	body = bytes.TrimSpace(body)
	var obj struct {
		Error   any    `json:"error"`
		Message string `json:"message"`
		Detail  any    `json:"detail"`
	}
	if json.Unmarshal(body, &obj) == nil {
		if s, ok := obj.Error.(string); ok && s != "" {
			return s
		}
		if obj.Message != "" {
			return obj.Message
		}
		if s, ok := obj.Detail.(string); ok {
			return s
		}
		return ""
	}
	if len(body) == 0 || body[0] == '<' || len(body) > 300 || !utf8.Valid(body) {
		return "" // HTML error pages and the like say nothing useful
	}
	return string(body)
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

// redactedError hides the API key in the text of an error that is not an
// HTTP error (a transport error may quote a URL or a header).
type redactedError struct {
	err    error
	redact *strings.Replacer
}

func (e *redactedError) Error() string { return e.redact.Replace(e.err.Error()) }
func (e *redactedError) Unwrap() error { return e.err }

// minRedactLen is the shortest key that is redacted: shorter ones are
// placeholders for gateways that check no key, and hiding them would garble
// messages that happen to contain the word.
const minRedactLen = 8

func newRedactor(key string) *strings.Replacer {
	if len(key) < minRedactLen {
		return nil
	}
	return strings.NewReplacer(key, "[redacted]")
}
