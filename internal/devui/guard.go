package devui

import (
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
)

// Guard serves next only to requests addressed to the server listening on
// listen, and answers every other one 403 without reaching next.
//
// The emulator signs clicks as any member of its workspace, so a web page
// that reached it could approve anything. A page on another site cannot
// read its answers (same-origin policy), but through DNS rebinding — its
// own host name re-pointed at 127.0.0.1 — it can send requests that the
// browser considers same-origin with that name. Such requests still carry
// the attacker's host name in Host, and a cross-site form or fetch carries
// the attacker's page in Origin. So a request is served only when:
//
//   - its Host is the listen address, or localhost, 127.0.0.1 or [::1] on
//     the listen port; when slackbot listens on every interface (0.0.0.0,
//     [::]) any IP address on that port is accepted too, since an address
//     cannot be rebound; no other host name is;
//   - its Origin, when the browser sends one, is the page's own: http or
//     https and the same host and port as Host. GET requests of the page
//     itself, curl and slackbot's own webhook calls send none and are fine.
func Guard(listen net.Addr, next http.Handler) http.Handler {
	host, port, _ := net.SplitHostPort(listen.String())
	ip, _ := netip.ParseAddr(host)
	anyIP := host == "" || (ip.IsValid() && ip.IsUnspecified())
	names := map[string]bool{"localhost": true, "127.0.0.1": true, "::1": true}
	if host != "" && !anyIP {
		names[strings.ToLower(host)] = true
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !allowedHost(r, names, port, anyIP) {
			refuse(w, fmt.Sprintf("slackbot dev answers only requests for its own address; Host %q is not one (DNS rebinding?).", r.Host))
			return
		}
		if origin, ok := r.Header["Origin"]; ok && !sameOrigin(origin, r.Host) {
			refuse(w, "slackbot dev answers only its own page; this request comes from another origin.")
			return
		}
		next.ServeHTTP(w, r)
	})
}

// allowedHost reports whether r's Host names this server.
func allowedHost(r *http.Request, names map[string]bool, port string, anyIP bool) bool {
	host, p, err := net.SplitHostPort(r.Host)
	if err != nil {
		// No port: the scheme's default.
		host, p = strings.TrimSuffix(strings.TrimPrefix(r.Host, "["), "]"), "80"
		if r.TLS != nil {
			p = "443"
		}
	}
	if p != port || host == "" {
		return false
	}
	host = strings.ToLower(host)
	if names[host] {
		return true
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && anyIP && ip.Zone() == ""
}

// sameOrigin reports whether the Origin header values are exactly one
// origin, http or https, on host.
func sameOrigin(values []string, host string) bool {
	if len(values) != 1 {
		return false
	}
	u, err := url.Parse(values[0])
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Path != "" || u.User != nil {
		return false
	}
	return strings.EqualFold(u.Host, host)
}

func refuse(w http.ResponseWriter, msg string) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(http.StatusForbidden)
	_, _ = fmt.Fprintln(w, msg)
}
