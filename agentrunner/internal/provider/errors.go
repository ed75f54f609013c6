package provider

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"unicode/utf8"
)

// MaxMessage bounds a server's message in an error, which ends up in a
// Slack thread.
const MaxMessage = 1000

// MinRedactLen is the length of the shortest API key that is redacted:
// shorter ones are placeholders ("ollama", "x") for servers and gateways
// that check no key, and hiding them would garble messages that happen to
// contain the word.
const MinRedactLen = 8

// Redactor hides an API key in text that people read. A nil *Redactor,
// which NewRedactor returns for a key too short to be a secret, hides
// nothing.
type Redactor struct {
	r *strings.Replacer
}

// NewRedactor returns a Redactor that replaces key with "[redacted]", or
// nil if key is shorter than MinRedactLen.
func NewRedactor(key string) *Redactor {
	if len(key) < MinRedactLen {
		return nil
	}
	return &Redactor{r: strings.NewReplacer(key, "[redacted]")}
}

// Format prints a Redactor as "provider.Redactor" whatever the verb, so
// that printing one cannot show the key.
func (Redactor) Format(f fmt.State, _ rune) { _, _ = io.WriteString(f, "provider.Redactor") }

// Replace returns s with the key hidden.
func (r *Redactor) Replace(s string) string {
	if r == nil {
		return s
	}
	return r.r.Replace(s)
}

// Error returns err with the key hidden in its text; errors.Is and
// errors.As still see err. It is for errors that are not the server's
// answer: a transport error may quote a URL or a header.
func (r *Redactor) Error(err error) error {
	if r == nil || err == nil {
		return err
	}
	return &redactedError{err: err, redact: r}
}

// redactedError is an error whose text hides the API key.
type redactedError struct {
	err    error
	redact *Redactor
}

func (e *redactedError) Error() string { return e.redact.Replace(e.err.Error()) }
func (e *redactedError) Unwrap() error { return e.err }

// ServerMessage prepares a server's message for an error that a person
// reads: trimmed, the key hidden, and cut to MaxMessage bytes. The key is
// hidden before the cut, so that a cut cannot leave part of it.
func ServerMessage(msg string, redact *Redactor) string {
	return truncate(redact.Replace(strings.TrimSpace(msg)), MaxMessage)
}

// ErrorText is the text of a provider's *APIError: the status, its
// statusText when there is one, and the server's message, e.g.
// "429 Too Many Requests: Rate limit reached for gpt-4o-mini".
func ErrorText(status int, statusText, message string) string {
	s := strconv.Itoa(status)
	if statusText != "" {
		s += " " + statusText
	}
	if message != "" {
		s += ": " + message
	}
	return s
}

// BodyMessage finds an error message in a response body of the shapes
// gateways and compatible servers use: {"error":"..."}, {"message":...},
// {"detail":"..."}, or short plain text. It returns "" for anything else,
// such as an HTML error page. An API's own error shape, e.g. OpenAI's
// {"error":{"message":...}}, is for its provider's package to read first.
func BodyMessage(body []byte) string {
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

// truncate cuts s to at most n bytes and an ellipsis, at a rune boundary.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}
