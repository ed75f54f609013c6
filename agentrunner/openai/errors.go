package openai

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"
	"unicode/utf8"

	sdk "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
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
	s := strconv.Itoa(e.StatusCode)
	if t := http.StatusText(e.StatusCode); t != "" {
		s += " " + t
	}
	if e.Message != "" {
		s += ": " + e.Message
	}
	return s
}

// Unwrap returns the SDK's error.
func (e *APIError) Unwrap() error { return e.err }

// maxMessage bounds the server's message in an error, which ends up in a
// Slack thread.
const maxMessage = 1000

func newAPIError(e *sdk.Error, redact *strings.Replacer) *APIError {
	msg := truncate(strings.TrimSpace(e.Message), maxMessage)
	if redact != nil {
		msg = redact.Replace(msg)
	}
	return &APIError{StatusCode: e.StatusCode, Type: e.Type, Code: e.Code, Message: msg, err: e}
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

// bodyMessage finds an error message in a response body of any of the
// shapes servers use: {"error":{"message":...}}, {"message":...},
// {"error":"..."}, {"detail":"..."}, or short plain text.
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
		if e, ok := obj.Error.(map[string]any); ok {
			if s, ok := e["message"].(string); ok && s != "" {
				return s
			}
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
// placeholders ("ollama", "x") for servers that check no key, and hiding
// them would garble messages that happen to contain the word.
const minRedactLen = 8

func newRedactor(key string) *strings.Replacer {
	if len(key) < minRedactLen {
		return nil
	}
	return strings.NewReplacer(key, "[redacted]")
}
