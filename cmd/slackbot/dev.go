package main

import (
	"crypto/rand"
	"encoding/hex"
	"log/slog"
	"net"
	"net/http"

	"github.com/slackapprove/slackbot/internal/devui"
	"github.com/slackapprove/slackbot/internal/slackfake"
)

// devWorkspace is what `slackbot dev` runs instead of Slack: a fake Slack
// Web API holding a demo workspace, served by slackbot's own HTTP server
// at /api/, and the emulator page at /dev/ that shows what slackbot posts
// and sends signed clicks to slackbot's real webhooks.
type devWorkspace struct {
	slack *slackfake.Server
	ui    *devui.Handler
	// clock is slackbot's clock in dev: the page can move it forward.
	clock  *devui.Clock
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
	// slackbot's own server, as the emulator reaches it on this machine.
	base := devURL(addr)
	fake := slackfake.New(slackfake.WithDemoWorkspace())
	clock := &devui.Clock{}
	ui := devui.New(devui.Config{Slack: fake, SigningSecret: secret, Webhook: base, Log: log, Clock: clock})
	return &devWorkspace{slack: fake, ui: ui, clock: clock, secret: secret, apiURL: base + "/api/"}, nil
}

func (d *devWorkspace) handlers() map[string]http.Handler {
	return map[string]http.Handler{
		"/api/":    d.slack,
		"/dev/":    http.StripPrefix("/dev", d.ui),
		"GET /dev": http.RedirectHandler("/dev/", http.StatusFound),
		"GET /{$}": http.RedirectHandler("/dev/", http.StatusFound),
	}
}

// close ends the emulator's open event streams, so shutdown does not wait
// on the browser.
func (d *devWorkspace) close() { d.ui.Close() }
