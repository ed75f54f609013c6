package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"time"

	"github.com/slackapprove/slackbot/approval"
	"github.com/slackapprove/slackbot/bot"
	"github.com/slackapprove/slackbot/stepup"
	"github.com/slackapprove/slackbot/store"
)

// newStepUp builds the step-up and passkey pages (/step-up/, /passkeys/)
// when slackbot has a public URL (PUBLIC_URL, or the dev server's own):
// without one no link could be handed out, and the pages are not served.
func (a *app) newStepUp(d appDeps, tools approval.Tools) error {
	if d.PublicURL == "" {
		return nil
	}
	u, err := url.Parse(d.PublicURL)
	if err != nil {
		return fmt.Errorf("PUBLIC_URL: %w", err)
	}
	if net.ParseIP(u.Hostname()) != nil {
		// A passkey is bound to a domain (the WebAuthn RP ID); an
		// address cannot be one. Start, without the pages.
		d.Log.Warn("PUBLIC_URL is an IP address: the step-up and passkey pages need a domain name and are not served", "public_url", d.PublicURL)
		return nil
	}
	now := d.StoreOptions.Now
	if now == nil {
		now = time.Now
	}
	a.stepup, err = stepup.New(stepup.Config{
		PublicURL: u, Approvals: a.svc, Store: passkeyStore{a.store},
		Viewer: approval.Viewer{Routes: d.Routes, Tools: tools, Now: now},
		Notify: a.cards.Notify, Now: now, Log: d.Log, Note: d.StepUpNote,
	})
	return err
}

// devStepUpNote is what the passkey pages of `slackbot dev` add under
// their button: a browser made for testing has no passkey, and the
// emulator's people are not real, so any authenticator of this browser
// will do, Chrome's virtual one too.
const devStepUpNote = "slackbot dev: any passkey of this browser works here, or Chrome's virtual authenticator (DevTools → More tools → WebAuthn → Enable virtual authenticator environment)."

// localhostURL is raw with a loopback IP host written as localhost.
func localhostURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return raw
	}
	if ip := net.ParseIP(u.Hostname()); ip != nil && ip.IsLoopback() {
		u.Host = net.JoinHostPort("localhost", u.Port())
	}
	return u.String()
}

// botPasskeys is the step-up pages' Handler as the Bot's App Home uses
// it (bot.Passkeys): the same calls, bot's copy of the list's type.
type botPasskeys struct{ h *stepup.Handler }

var _ bot.Passkeys = botPasskeys{}

func (p botPasskeys) RegistrationLink(ctx context.Context, team, user string) (string, time.Time, error) {
	return p.h.RegistrationLink(ctx, team, user)
}

func (p botPasskeys) List(ctx context.Context, team, user string) ([]bot.PasskeyInfo, error) {
	keys, err := p.h.List(ctx, team, user)
	out := make([]bot.PasskeyInfo, len(keys))
	for i, k := range keys {
		out[i] = bot.PasskeyInfo(k)
	}
	return out, err
}

func (p botPasskeys) Remove(ctx context.Context, team, user, id string) error {
	return p.h.Remove(ctx, team, user, id)
}

// passkeyStore is stepup.Store over the store's passkeys: store may not
// import stepup (docs/ARCHITECTURE.md, "Import rules"), so its records and
// errors are translated here, as runstore.go does for runs.
type passkeyStore struct{ s *store.Store }

var _ stepup.Store = passkeyStore{}

func (p passkeyStore) Passkeys(ctx context.Context, team, user string) ([]stepup.Passkey, error) {
	keys, err := p.s.Passkeys(ctx, team, user)
	if err != nil {
		return nil, err
	}
	out := make([]stepup.Passkey, len(keys))
	for i, k := range keys {
		out[i] = stepup.Passkey{ID: k.ID, Name: k.Name, Credential: k.Credential, SignCount: k.SignCount, Added: k.Added, LastUsed: k.LastUsed}
	}
	return out, nil
}

func (p passkeyStore) AddPasskey(ctx context.Context, team, user string, k stepup.Passkey) error {
	err := p.s.AddPasskey(ctx, team, user, store.StoredPasskey{ID: k.ID, Name: k.Name, Credential: k.Credential, SignCount: k.SignCount, Added: k.Added})
	switch {
	case errors.Is(err, store.ErrPasskeyLimit):
		return fmt.Errorf("%w: %w", stepup.ErrPasskeyLimit, err)
	case errors.Is(err, store.ErrPasskeyExists):
		return fmt.Errorf("%w: %w", stepup.ErrPasskeyExists, err)
	}
	return err
}

func (p passkeyStore) RemovePasskey(ctx context.Context, team, user, id string) (bool, error) {
	return p.s.RemovePasskey(ctx, team, user, id)
}

func (p passkeyStore) UsePasskey(ctx context.Context, team, user, id string, n uint32, at time.Time) error {
	err := p.s.UsePasskey(ctx, team, user, id, n, at)
	switch {
	case errors.Is(err, store.ErrSignCount):
		return fmt.Errorf("%w: %w", stepup.ErrSignCount, err)
	case errors.Is(err, store.ErrPasskeyGone):
		return fmt.Errorf("%w: %w", stepup.ErrPasskeyGone, err)
	}
	return err
}

func (p passkeyStore) SaveRegistration(ctx context.Context, l stepup.RegistrationLink) error {
	return p.s.SaveRegistration(ctx, store.Registration(l))
}

func (p passkeyStore) TakeRegistration(ctx context.Context, id string) (*stepup.RegistrationLink, error) {
	return registration(p.s.TakeRegistration(ctx, id))
}

func (p passkeyStore) RegistrationLink(ctx context.Context, id string) (*stepup.RegistrationLink, error) {
	return registration(p.s.RegistrationLink(ctx, id))
}

func registration(l *store.Registration, err error) (*stepup.RegistrationLink, error) {
	if l == nil || err != nil {
		return nil, err
	}
	r := stepup.RegistrationLink(*l)
	return &r, nil
}

func (p passkeyStore) AuditPasskey(ctx context.Context, e stepup.PasskeyEvent) error {
	return p.s.AuditPasskey(ctx, store.AuditType(e.Type), e.Team, e.User, e.Method, e.ID, e.Name, e.At)
}

func (p passkeyStore) TOTP(ctx context.Context, team, user string) ([]byte, time.Time, error) {
	return p.s.TOTP(ctx, team, user)
}

func (p passkeyStore) SetTOTP(ctx context.Context, team, user string, secret []byte, at time.Time) error {
	return p.s.SetTOTP(ctx, team, user, secret, at)
}

func (p passkeyStore) RemoveTOTP(ctx context.Context, team, user string) (bool, error) {
	return p.s.RemoveTOTP(ctx, team, user)
}

func (p passkeyStore) LastRemoval(ctx context.Context, team, user string) (time.Time, error) {
	return p.s.LastRemoval(ctx, team, user)
}

func (p passkeyStore) UseTOTPStep(ctx context.Context, team, user string, step int64) (bool, error) {
	return p.s.UseTOTPStep(ctx, team, user, step)
}

func (p passkeyStore) TOTPFailures(ctx context.Context, team, user, scope string) (int, int, error) {
	return p.s.TOTPFailures(ctx, team, user, scope)
}

func (p passkeyStore) TOTPFailed(ctx context.Context, team, user, scope string, scopeTTL, window time.Duration) (int, int, error) {
	return p.s.TOTPFailed(ctx, team, user, scope, scopeTTL, window)
}
