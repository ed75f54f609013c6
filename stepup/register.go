package stepup

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"
	"unicode"

	"github.com/go-webauthn/webauthn/protocol"
)

// RegistrationLink makes a single-use link, valid RegistrationTTL, to the
// page where the person adds a passkey (or a TOTP app): the URL to open
// and its expiry. The bot offers it from App Home.
func (h *Handler) RegistrationLink(ctx context.Context, team, user string) (string, time.Time, error) {
	if team == "" || user == "" {
		return "", time.Time{}, errors.New("registration link: team and user are required")
	}
	id, err := randomID()
	if err != nil {
		return "", time.Time{}, fmt.Errorf("registration link: %w", err)
	}
	token, err := randomID()
	if err != nil {
		return "", time.Time{}, fmt.Errorf("registration link: %w", err)
	}
	l := RegistrationLink{ID: id, Token: token, Team: team, User: user, Expires: h.cfg.Now().Add(RegistrationTTL).Truncate(time.Second)}
	if err := h.cfg.Store.SaveRegistration(ctx, l); err != nil {
		return "", time.Time{}, fmt.Errorf("registration link: %w", err)
	}
	return h.origin + "/passkeys/" + id, l.Expires, nil
}

// List returns the person's passkeys, and their TOTP secret as one more
// entry (ID "totp"), for App Home.
func (h *Handler) List(ctx context.Context, team, user string) ([]PasskeyInfo, error) {
	keys, err := h.cfg.Store.Passkeys(ctx, team, user)
	if err != nil {
		return nil, fmt.Errorf("list passkeys: %w", err)
	}
	out := make([]PasskeyInfo, 0, len(keys)+1)
	for _, k := range keys {
		out = append(out, PasskeyInfo{ID: k.ID, Name: k.Name, Method: MethodWebAuthn, Added: k.Added, LastUsed: k.LastUsed})
	}
	secret, added, err := h.cfg.Store.TOTP(ctx, team, user)
	if err != nil {
		return nil, fmt.Errorf("list passkeys: %w", err)
	}
	if secret != nil {
		out = append(out, PasskeyInfo{ID: MethodTOTP, Name: "Authenticator app", Method: MethodTOTP, Added: added})
	}
	return out, nil
}

// Remove forgets one of the person's passkeys (or, with id "totp", their
// TOTP secret), audits it and tells them in Slack. Removing what is not
// there is not an error.
func (h *Handler) Remove(ctx context.Context, team, user, id string) error {
	name, method := "", MethodWebAuthn
	var removed bool
	var err error
	if id == MethodTOTP {
		name, method = "Authenticator app", MethodTOTP
		removed, err = h.cfg.Store.RemoveTOTP(ctx, team, user)
	} else {
		keys, lerr := h.cfg.Store.Passkeys(ctx, team, user)
		if lerr != nil {
			return fmt.Errorf("remove passkey: %w", lerr)
		}
		for _, k := range keys {
			if k.ID == id {
				name = k.Name
			}
		}
		removed, err = h.cfg.Store.RemovePasskey(ctx, team, user, id)
	}
	if err != nil {
		return fmt.Errorf("remove passkey: %w", err)
	}
	if !removed {
		return nil
	}
	h.audit(ctx, PasskeyEvent{Type: EventRemoved, Team: team, User: user, ID: id, Name: name, Method: method})
	h.notify(ctx, team, user, fmt.Sprintf("🔑 %q was removed from your slackbot passkeys. If you did not do this, tell your admins.", name))
	return nil
}

func (h *Handler) audit(ctx context.Context, e PasskeyEvent) {
	e.At = h.cfg.Now()
	if err := h.cfg.Store.AuditPasskey(ctx, e); err != nil {
		h.cfg.Log.Error("stepup: audit passkey event", "type", e.Type, "err", err)
	}
}

const (
	msgRegGone    = "This link was already used, has expired, or never existed. Nothing changed. Ask for a new one from slackbot's App Home (\"Add a passkey\")."
	msgRegLimit   = "You already have the most passkeys slackbot keeps (10). Remove one from App Home first. Nothing changed."
	msgRegNoCheck = "Your passkey could not be registered (%s). Nothing changed."
)

// registration reads the link of the request's path; nil when it is gone
// or expired.
func (h *Handler) registration(ctx context.Context, id string) (*RegistrationLink, int, string) {
	l, err := h.cfg.Store.RegistrationLink(ctx, id)
	switch {
	case err != nil:
		h.cfg.Log.Error("stepup: read registration link", "err", err)
		return nil, http.StatusServiceUnavailable, msgTryAgain
	case l == nil || !h.cfg.Now().Before(l.Expires):
		return nil, http.StatusNotFound, msgRegGone
	}
	return l, 0, ""
}

// registerPage asks the browser to create a passkey for the link's
// person.
func (h *Handler) registerPage(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	id := r.PathValue("id")
	l, status, msg := h.registration(ctx, id)
	if status != 0 {
		h.refuse(w, status, "This link cannot be used", msg)
		return
	}
	p, err := h.loadPerson(ctx, l.Team, l.User)
	if err != nil {
		h.refuse(w, http.StatusServiceUnavailable, "This link cannot be used", msgTryAgain)
		return
	}
	if len(p.keys) >= MaxPasskeys {
		h.refuse(w, http.StatusConflict, "Too many passkeys", msgRegLimit)
		return
	}
	opts, _, err := h.beginRegistration(p, *l)
	var attr string
	if err == nil {
		attr, err = jsonAttr(opts)
	}
	if err != nil {
		h.cfg.Log.Error("stepup: begin registration", "err", err)
		h.refuse(w, http.StatusInternalServerError, "This link cannot be used", msgTryAgain)
		return
	}
	h.render(w, http.StatusOK, page{
		Kind: "register", Title: "Add a passkey", Heading: "Add a passkey for " + textMarks{}.Person(l.User),
		Lead:    "A passkey lets you confirm high-risk approvals with your device (Touch ID, Windows Hello, a security key). slackbot keeps only its public key.",
		Extra:   "This link works once and expires at " + textMarks{}.Time(l.Expires) + ".",
		Options: attr, Action: "/passkeys/" + id, Ceremony: "create", Button: "Add a passkey", Name: "Passkey " + fmt.Sprint(len(p.keys)+1),
		Link: "/passkeys/" + id + "/totp", LinkText: "Use an authenticator app (one-time codes) instead",
	})
}

// registerWebAuthn checks the browser's new credential (origin, RP ID,
// the link's challenge, user verification) and stores it, taking the
// link so that it registers once.
func (h *Handler) registerWebAuthn(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	id := r.PathValue("id")
	l, status, msg := h.registration(ctx, id)
	if status != 0 {
		writeAnswer(w, status, false, msg)
		return
	}
	var body struct {
		Credential json.RawMessage `json:"credential"`
		Name       string          `json:"name"`
	}
	if err := json.NewDecoder(r.Body).Decode(&body); err != nil || len(body.Credential) == 0 {
		writeAnswer(w, http.StatusBadRequest, false, fmt.Sprintf(msgRegNoCheck, "the browser sent no passkey"))
		return
	}
	parsed, err := protocol.ParseCredentialCreationResponseBytes(body.Credential)
	if err != nil {
		writeAnswer(w, http.StatusBadRequest, false, fmt.Sprintf(msgRegNoCheck, details(err)))
		return
	}
	p, err := h.loadPerson(ctx, l.Team, l.User)
	if err != nil {
		writeAnswer(w, http.StatusServiceUnavailable, false, msgTryAgain)
		return
	}
	_, session, err := h.beginRegistration(p, *l)
	if err != nil {
		h.cfg.Log.Error("stepup: begin registration", "err", err)
		writeAnswer(w, http.StatusInternalServerError, false, msgTryAgain)
		return
	}
	cred, err := h.wa.CreateCredential(p, *session, parsed)
	if err != nil {
		writeAnswer(w, http.StatusForbidden, false, fmt.Sprintf(msgRegNoCheck, details(err)))
		return
	}
	raw, err := json.Marshal(cred)
	if err != nil {
		writeAnswer(w, http.StatusInternalServerError, false, msgTryAgain)
		return
	}
	// Take the link only now, after every check, so that a failed attempt
	// (a cancelled prompt) can be retried; taking it is what makes it
	// single use.
	if taken, err := h.cfg.Store.TakeRegistration(ctx, id); err != nil || taken == nil || taken.Team != l.Team || taken.User != l.User {
		writeAnswer(w, http.StatusNotFound, false, msgRegGone)
		return
	}
	now := h.cfg.Now()
	pk := Passkey{ID: credentialID(cred.ID), Name: cleanName(body.Name, len(p.keys)+1), Credential: raw, SignCount: cred.Authenticator.SignCount, Added: now}
	switch err := h.cfg.Store.AddPasskey(ctx, l.Team, l.User, pk); {
	case errors.Is(err, ErrPasskeyLimit):
		writeAnswer(w, http.StatusConflict, false, msgRegLimit)
		return
	case err != nil:
		h.cfg.Log.Error("stepup: add passkey", "err", err)
		writeAnswer(w, http.StatusServiceUnavailable, false, msgTryAgain)
		return
	}
	h.audit(ctx, PasskeyEvent{Type: EventAdded, Team: l.Team, User: l.User, ID: pk.ID, Name: pk.Name, Method: MethodWebAuthn})
	h.notify(ctx, l.Team, l.User, fmt.Sprintf("🔑 A passkey, %q, was added to your slackbot account. If you did not do this, remove it from App Home and tell your admins.", pk.Name))
	writeAnswer(w, http.StatusOK, true, fmt.Sprintf("Passkey %q added. You can close this page; slackbot will ask for it when an approval needs it.", pk.Name))
}

// cleanName keeps a passkey's name short, printable and on one line.
func cleanName(name string, n int) string {
	name = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return -1
		}
		return r
	}, strings.TrimSpace(name))
	if r := []rune(name); len(r) > maxNameLen {
		name = string(r[:maxNameLen])
	}
	if name == "" {
		name = fmt.Sprint("Passkey ", n)
	}
	return name
}

// pendingTOTP is the TOTP secret the registration page offers: derived
// from the link's Token (which never leaves slackbot), so the page can be
// reloaded until the person confirms a code, and nothing is stored until
// they do.
func pendingTOTP(l RegistrationLink) []byte {
	return derive("slackbot totp secret v1", l)[:totpSecretLen]
}

// totpPage shows a new TOTP secret and asks for a code from it.
func (h *Handler) totpPage(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	l, status, msg := h.registration(r.Context(), id)
	if status != 0 {
		h.refuse(w, status, "This link cannot be used", msg)
		return
	}
	secret := pendingTOTP(*l)
	h.render(w, http.StatusOK, page{
		Kind: "totp", Title: "Set up an authenticator app", Heading: "Set up an authenticator app for " + textMarks{}.Person(l.User),
		Lead:       "Where a route allows it, a one-time code from an authenticator app can confirm an approval instead of a passkey. A passkey is stronger: it cannot be phished.",
		TOTPAction: "/passkeys/" + id + "/totp", TOTPButton: "Confirm", Secret: totpSecretText(secret), URI: otpauthURI("slackbot", l.User, secret),
		Extra: "This link works once and expires at " + textMarks{}.Time(l.Expires) + ".",
	})
}

// registerTOTP stores the offered secret once a valid code proves the app
// holds it.
func (h *Handler) registerTOTP(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	id := r.PathValue("id")
	l, status, msg := h.registration(ctx, id)
	if status != 0 {
		h.refuse(w, status, "Not set up", msg)
		return
	}
	secret := pendingTOTP(*l)
	now := h.cfg.Now()
	step, ok := matchTOTP(secret, r.PostFormValue("code"), now)
	if !ok {
		h.refuse(w, http.StatusForbidden, "Not set up", "That code does not match the key shown. Nothing changed. Go back, check the app holds the key, and type its current code.")
		return
	}
	if taken, err := h.cfg.Store.TakeRegistration(ctx, id); err != nil || taken == nil {
		h.refuse(w, http.StatusNotFound, "Not set up", msgRegGone)
		return
	}
	if err := h.cfg.Store.SetTOTP(ctx, l.Team, l.User, secret, now); err != nil {
		h.cfg.Log.Error("stepup: set totp", "err", err)
		h.refuse(w, http.StatusServiceUnavailable, "Not set up", msgTryAgain)
		return
	}
	// The confirming code's step is spent: it cannot approve anything.
	_, _ = h.cfg.Store.UseTOTPStep(ctx, l.Team, l.User, step)
	h.audit(ctx, PasskeyEvent{Type: EventAdded, Team: l.Team, User: l.User, ID: MethodTOTP, Name: "Authenticator app", Method: MethodTOTP})
	h.notify(ctx, l.Team, l.User, "🔑 An authenticator app was set up for your slackbot approvals. If you did not do this, remove it from App Home and tell your admins.")
	h.render(w, http.StatusOK, page{Kind: "message", Title: "Authenticator app set up", Heading: "Authenticator app set up", OK: true,
		Message: "Done. Where a route allows one-time codes, slackbot will accept a code from this app. You can close this page."})
}
