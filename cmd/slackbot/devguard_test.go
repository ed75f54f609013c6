package main

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

// TestDevAnswersOnlyItsOwnHostAndOrigin: `slackbot dev` serves its
// emulator, which clicks as anyone, only to requests addressed to it: a
// DNS-rebinding page (another Host) or another site's page (another
// Origin) gets 403 and reaches nothing: neither a click nor the clock,
// which moves slackbot's deadlines, reminders and grants.
func TestDevAnswersOnlyItsOwnHostAndOrigin(t *testing.T) {
	t.Parallel()
	base, _ := startRun(t, map[string]string{"ADDR": "127.0.0.1:0"}, "dev")
	host := strings.TrimPrefix(base, "http://")

	tests := []struct {
		name, method, path, host, origin string
		want                             int
		body                             string
	}{
		{"the page", "GET", "/dev/", host, "", http.StatusOK, ""},
		{"the page by localhost", "GET", "/dev/", "localhost:" + host[strings.LastIndex(host, ":")+1:], "", http.StatusOK, ""},
		{"the page under a rebound name", "GET", "/dev/", "evil.example" + host[strings.LastIndex(host, ":"):], "", http.StatusForbidden, ""},
		{"a click from another site", "POST", "/dev/click", host, "http://evil.example", http.StatusForbidden, ""},
		{"the fake Slack under a rebound name", "POST", "/api/auth.test", "evil.example" + host[strings.LastIndex(host, ":"):], "", http.StatusForbidden, ""},
		{"the clock from another site", "POST", "/dev/clock", host, "http://evil.example", http.StatusForbidden, `{"advance":"1h"}`},
		{"the clock under a rebound name", "POST", "/dev/clock", "evil.example" + host[strings.LastIndex(host, ":"):], "", http.StatusForbidden, `{"advance":"1h"}`},
		{"the clock from its own page", "POST", "/dev/clock", host, base, http.StatusOK, `{"advance":"10m"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			body := tt.body
			if body == "" {
				body = "{}"
			}
			req, err := http.NewRequestWithContext(t.Context(), tt.method, base+tt.path, strings.NewReader(body))
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
			defer resp.Body.Close()
			if resp.StatusCode != tt.want {
				t.Errorf("status: got %d, want %d", resp.StatusCode, tt.want)
			}
			if tt.path == "/dev/clock" && tt.want == http.StatusOK {
				// Only its own page's step moved the clock.
				var moved struct{ Minutes int64 }
				if err := json.NewDecoder(resp.Body).Decode(&moved); err != nil || moved.Minutes != 10 {
					t.Errorf("the clock is %d min ahead (%v), want 10: a refused request moved it", moved.Minutes, err)
				}
			}
		})
	}
}
