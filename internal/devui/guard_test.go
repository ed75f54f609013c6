package devui

import (
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
)

func TestGuard(t *testing.T) {
	loopback := &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 8080}
	everywhere := &net.TCPAddr{IP: net.IPv4zero, Port: 8080}
	tests := []struct {
		name   string
		listen net.Addr
		method string
		host   string
		origin []string // nil: no Origin header
		want   int
	}{
		{"the page, by the listen address", loopback, "GET", "127.0.0.1:8080", nil, http.StatusOK},
		{"the page, by localhost", loopback, "GET", "localhost:8080", nil, http.StatusOK},
		{"the page, by LOCALHOST", loopback, "GET", "LOCALHOST:8080", nil, http.StatusOK},
		{"the page, by [::1]", loopback, "GET", "[::1]:8080", nil, http.StatusOK},
		{"a click from the page", loopback, "POST", "127.0.0.1:8080", []string{"http://127.0.0.1:8080"}, http.StatusOK},
		{"a click from the page over https", loopback, "POST", "localhost:8080", []string{"https://localhost:8080"}, http.StatusOK},
		{"slackbot's own webhook call, no Origin", loopback, "POST", "127.0.0.1:8080", nil, http.StatusOK},
		{"DNS rebinding: the attacker's name", loopback, "POST", "evil.example:8080", []string{"http://evil.example:8080"}, http.StatusForbidden},
		{"DNS rebinding, GET without Origin", loopback, "GET", "evil.example:8080", nil, http.StatusForbidden},
		{"a name ending like localhost", loopback, "GET", "localhost.evil.example:8080", nil, http.StatusForbidden},
		{"another port", loopback, "GET", "127.0.0.1:9090", nil, http.StatusForbidden},
		{"no port means 80", loopback, "GET", "localhost", nil, http.StatusForbidden},
		{"no Host", loopback, "GET", "", nil, http.StatusForbidden},
		{"a foreign Origin on a good Host", loopback, "POST", "127.0.0.1:8080", []string{"http://evil.example"}, http.StatusForbidden},
		{"the right host on another port", loopback, "POST", "127.0.0.1:8080", []string{"http://127.0.0.1:9090"}, http.StatusForbidden},
		{"Origin null (sandboxed frame, file:)", loopback, "POST", "127.0.0.1:8080", []string{"null"}, http.StatusForbidden},
		{"an empty Origin", loopback, "POST", "127.0.0.1:8080", []string{""}, http.StatusForbidden},
		{"two Origins", loopback, "POST", "127.0.0.1:8080", []string{"http://127.0.0.1:8080", "http://evil.example"}, http.StatusForbidden},
		{"an Origin with a path", loopback, "POST", "127.0.0.1:8080", []string{"http://127.0.0.1:8080/x"}, http.StatusForbidden},
		{"listening everywhere: the machine's address", everywhere, "GET", "192.168.1.20:8080", nil, http.StatusOK},
		{"listening everywhere: localhost", everywhere, "GET", "localhost:8080", nil, http.StatusOK},
		{"listening everywhere: a name still is not", everywhere, "GET", "evil.example:8080", nil, http.StatusForbidden},
		{"listening everywhere: a click from another address's page", everywhere, "POST", "192.168.1.20:8080", []string{"http://192.168.1.20:8080"}, http.StatusOK},
		{"listening on 127.0.0.1: another address is not", loopback, "GET", "192.168.1.20:8080", nil, http.StatusForbidden},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			reached := false
			h := Guard(tt.listen, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { reached = true }))
			r := httptest.NewRequest(tt.method, "/dev/click", nil)
			r.Host = tt.host
			for _, o := range tt.origin {
				r.Header.Add("Origin", o)
			}
			w := httptest.NewRecorder()
			h.ServeHTTP(w, r)
			if w.Code != tt.want {
				t.Errorf("status: got %d, want %d (%s)", w.Code, tt.want, w.Body)
			}
			if reached != (tt.want == http.StatusOK) {
				t.Errorf("handler reached: got %v, want %v", reached, tt.want == http.StatusOK)
			}
		})
	}
}

// TestGuardDefaultPort: on port 80, a Host without a port is the server.
func TestGuardDefaultPort(t *testing.T) {
	h := Guard(&net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 80}, http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	r := httptest.NewRequest("GET", "/dev/", nil)
	r.Host = "localhost"
	r.Header.Set("Origin", "http://localhost")
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	if w.Code != http.StatusOK {
		t.Errorf("status: got %d, want 200", w.Code)
	}
}
