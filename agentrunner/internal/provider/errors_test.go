package provider_test

import (
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"testing"

	"github.com/slackapprove/slackbot/agentrunner/internal/provider"
)

const key = "sk-test-0123456789abcdef"

func TestBodyMessage(t *testing.T) {
	tests := []struct {
		name, body, want string
	}{
		{"error string", `{"error":"model \"x\" not found"}`, `model "x" not found`},
		{"top-level message (vLLM)", `{"object":"error","message":"The model does not exist.","code":404}`, "The model does not exist."},
		{"detail string (FastAPI)", ` {"detail":"Not authenticated"} `, "Not authenticated"},
		{"detail that is not a string", `{"detail":[{"loc":["body"],"msg":"field required"}]}`, ""},
		{"empty error string falls through to message", `{"error":"","message":"Forbidden"}`, "Forbidden"},
		{"nested error object is left to the provider", `{"error":{"message":"Incorrect API key"}}`, ""},
		{"JSON without a message", `{"status":"bad"}`, ""},
		{"short plain text", "upstream connect error\n", "upstream connect error"},
		{"HTML page", "<html><body>Bad gateway</body></html>", ""},
		{"long plain text", strings.Repeat("x", 301), ""},
		{"not UTF-8", "\xff\xfe", ""},
		{"empty", "  ", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := provider.BodyMessage([]byte(tt.body)); got != tt.want {
				t.Errorf("BodyMessage(%q): got %q, want %q", tt.body, got, tt.want)
			}
		})
	}
}

func TestServerMessage(t *testing.T) {
	long := strings.Repeat("a", provider.MaxMessage-1) + "é and more" // é straddles the bound
	tests := []struct {
		name, msg string
		redact    *provider.Redactor
		want      string
	}{
		{"trimmed", "  Rate limit reached.\n", nil, "Rate limit reached."},
		{"key hidden", "Incorrect API key provided: " + key + ".", provider.NewRedactor(key), "Incorrect API key provided: [redacted]."},
		{"nil redactor hides nothing", "key " + key, nil, "key " + key},
		{"cut at a rune boundary", long, nil, strings.Repeat("a", provider.MaxMessage-1) + "…"},
		{"key hidden before the cut", strings.Repeat("a", provider.MaxMessage-4) + key, provider.NewRedactor(key),
			strings.Repeat("a", provider.MaxMessage-4) + "[redacted]"[:4] + "…"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := provider.ServerMessage(tt.msg, tt.redact); got != tt.want {
				t.Errorf("ServerMessage: got %q, want %q", got, tt.want)
			}
		})
	}
}

func TestErrorText(t *testing.T) {
	tests := []struct {
		status          int
		statusText, msg string
		want            string
	}{
		{429, "Too Many Requests", "Rate limit reached.", "429 Too Many Requests: Rate limit reached."},
		{502, "Bad Gateway", "", "502 Bad Gateway"},
		{599, "", "odd", "599: odd"},
		{599, "", "", "599"},
	}
	for _, tt := range tests {
		if got := provider.ErrorText(tt.status, tt.statusText, tt.msg); got != tt.want {
			t.Errorf("ErrorText(%d, %q, %q): got %q, want %q", tt.status, tt.statusText, tt.msg, got, tt.want)
		}
	}
}

func TestRedactor(t *testing.T) {
	tests := []struct {
		name, key, text, want string
	}{
		{"secret key", key, "Bearer " + key + " refused", "Bearer [redacted] refused"},
		{"placeholder key is kept", "ollama", "try ollama pull", "try ollama pull"},
		{"shortest redacted key", "12345678", "key 12345678", "key [redacted]"},
		{"no key", "", "nothing to hide", "nothing to hide"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := provider.NewRedactor(tt.key)
			if got := r.Replace(tt.text); got != tt.want {
				t.Errorf("Replace: got %q, want %q", got, tt.want)
			}
			err := fmt.Errorf("post: %s: %w", tt.text, fs.ErrPermission)
			got := r.Error(err)
			if got.Error() != "post: "+tt.want+": permission denied" {
				t.Errorf("Error: got %q, want the text with the key hidden", got)
			}
			if !errors.Is(got, fs.ErrPermission) {
				t.Errorf("Error: got %v, want it to wrap fs.ErrPermission", got)
			}
		})
	}
	if got := provider.NewRedactor(key).Error(nil); got != nil {
		t.Errorf("Error(nil): got %v, want nil", got)
	}
}

// Printing a Redactor, however it is printed, shows no key.
func TestRedactorPrinting(t *testing.T) {
	r := provider.NewRedactor(key)
	for _, verb := range []string{"%v", "%+v", "%#v", "%s", "%q", "%x"} {
		for _, v := range []any{r, *r} {
			if s := fmt.Sprintf(verb, v); strings.Contains(s, key) || strings.Contains(s, fmt.Sprintf("%x", key)) {
				t.Errorf("Sprintf(%q, %T) shows the key: %s", verb, v, s)
			}
		}
	}
}
