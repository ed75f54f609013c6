package mcptools

import (
	"errors"
	"strings"
	"testing"
)

// An unavailable server's error never repeats a secret from its URL.
func TestUnavailableErrorRedactsURLs(t *testing.T) {
	cause := errors.New(`rejected by transport: Post "https://bot:pa55@mcp.example.com/mcp?api_key=SUPERSECRET123&x=1": dial tcp 10.0.0.1:443: connection refused`)
	e := &UnavailableError{Server: "tickets", Transport: "streamable HTTP https://mcp.example.com/mcp", Err: cause}
	got := e.Error()
	for _, secret := range []string{"SUPERSECRET123", "pa55", "api_key"} {
		if strings.Contains(got, secret) {
			t.Errorf("error %q contains %q", got, secret)
		}
	}
	if !strings.Contains(got, "https://mcp.example.com/mcp?…") || !strings.Contains(got, "connection refused") {
		t.Errorf("error %q lost the useful part", got)
	}
}
