package main

import (
	"net/http"
	"strings"
	"testing"
)

// TestDevAnswersOnlyItsOwnHostAndOrigin: `slackbot dev` serves its
// emulator, which clicks as anyone, only to requests addressed to it: a
// DNS-rebinding page (another Host) or another site's page (another
// Origin) gets 403 and reaches nothing.
func TestDevAnswersOnlyItsOwnHostAndOrigin(t *testing.T) {
	base, _ := startRun(t, map[string]string{"ADDR": "127.0.0.1:0"}, "dev")
	host := strings.TrimPrefix(base, "http://")

	tests := []struct {
		name, method, path, host, origin string
		want                             int
	}{
		{"the page", "GET", "/dev/", host, "", http.StatusOK},
		{"the page by localhost", "GET", "/dev/", "localhost:" + host[strings.LastIndex(host, ":")+1:], "", http.StatusOK},
		{"the page under a rebound name", "GET", "/dev/", "evil.example" + host[strings.LastIndex(host, ":"):], "", http.StatusForbidden},
		{"a click from another site", "POST", "/dev/click", host, "http://evil.example", http.StatusForbidden},
		{"the fake Slack under a rebound name", "POST", "/api/auth.test", "evil.example" + host[strings.LastIndex(host, ":"):], "", http.StatusForbidden},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, err := http.NewRequestWithContext(t.Context(), tt.method, base+tt.path, strings.NewReader("{}"))
			if err != nil {
				t.Fatal(err)
			}
			req.Host = tt.host
			if tt.origin != "" {
				req.Header.Set("Origin", tt.origin)
			}
			req.Header.Set("Content-Type", "application/json")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != tt.want {
				t.Errorf("status: got %d, want %d", resp.StatusCode, tt.want)
			}
		})
	}
}
