package httpapi_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/slackapprove/slackbot/bot/httpapi"
)

// In production a callback_url may not point into the network slackbot
// runs in: loopback, private, link-local (the cloud metadata service) and
// plain http are refused when the request is made.
func TestCallbackURLsToInternalAddressesAreRefused(t *testing.T) {
	e := newEnv(t, envOptions{publicCallbacksOnly: true})
	one := `{"tool_name":"delete_file","args":{"path":"a"},"tool_call_id":"c1"}`
	for _, u := range []string{
		"https://127.0.0.1:15000/quitquitquit", "https://localhost/cb", "https://10.1.2.3/cb",
		"https://169.254.169.254/latest/meta-data/", "https://[::1]/cb", "https://192.168.0.10/cb",
		"http://127.0.0.1:8080/cb", "http://agent.example/cb",
	} {
		resp := e.do(request{key: keyBilling, method: http.MethodPost, path: "/v1/approvals",
			body: `{"approvals":[` + one + `],"callback_url":"` + u + `"}`})
		if resp.status != http.StatusBadRequest || !strings.Contains(string(resp.body), httpapi.CodeInvalidRequest) {
			t.Errorf("callback_url %s: got %d %s, want 400 invalid_request", u, resp.status, resp.body)
		}
	}
	resp := e.do(request{key: keyBilling, method: http.MethodPost, path: "/v1/approvals",
		body: `{"approvals":[` + one + `],"callback_url":"https://agent.example/cb"}`})
	if resp.status != http.StatusCreated {
		t.Errorf("a public https callback: got %d %s, want 201", resp.status, resp.body)
	}
}
