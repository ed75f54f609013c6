package main

import (
	"crypto/rand"
	"encoding/hex"
	"log/slog"
	"net"
	"net/http"

	"github.com/slackapprove/slackbot/bot/slackfake"
)

// devWorkspace is what `slackbot dev` runs instead of Slack: a fake Slack
// Web API holding a demo workspace, served by slackbot's own HTTP server
// at /api/, and the emulator page at /dev/ that shows what slackbot posts
// and sends signed clicks to slackbot's real webhooks.
type devWorkspace struct {
	slack  *slackfake.Server
	ui     http.Handler
	secret string
	apiURL string
}

func newDevWorkspace(cfg *Config, addr net.Addr, log *slog.Logger) (*devWorkspace, error) {
	secret := cfg.SlackSigningSecret
	if secret == "" {
		var b [16]byte
		_, _ = rand.Read(b[:])
		secret = hex.EncodeToString(b[:])
	}
	base := devURL(addr)
	fake := slackfake.New(slackfake.WithDemoWorkspace())
	ui := http.NotFoundHandler()
	_ = log
	return &devWorkspace{slack: fake, ui: ui, secret: secret, apiURL: base + "/api/"}, nil
}

func (d *devWorkspace) handlers() map[string]http.Handler {
	return map[string]http.Handler{
		"/api/":    d.slack,
		"/dev/":    http.StripPrefix("/dev", d.ui),
		"GET /dev": http.RedirectHandler("/dev/", http.StatusFound),
		"GET /{$}": http.RedirectHandler("/dev/", http.StatusFound),
	}
}

func (d *devWorkspace) close() {
	if c, ok := any(d.ui).(interface{ Close() }); ok {
		c.Close()
	}
}
