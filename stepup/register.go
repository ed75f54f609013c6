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

// ownerProof is what a registration must show when the person already
// has a credential: an assertion of one of their passkeys over
// registrationChallenge(link), or, if they have only an authenticator
// app, a current code from it. A first registration needs neither: it is
// as strong as the Slack session that opened the link (README, "Step-up
// with passkeys").
type ownerProof struct {
	// Assertion answers the page's data-assert options.
	Assertion json.RawMessage `json:"assertion"`
	// Current is a code from the app already set up (JSON "code" on the
	// passkey page, form "current" on the app's page).
	Current string
}

// msgNeedProof and friends: a registration refused for want of the
// person's existing credential.
const (
	msgNeedPasskey = "You already have a passkey, so adding another needs one of yours first: confirm with an existing passkey when the page asks. Nothing changed."
	msgNeedCode    = "You already have an authenticator app, so adding a passkey or another app needs a current code from it first. Nothing changed."
	msgBadProof    = "Your existing passkey's answer could not be verified for this link (%s). Nothing changed."
	msgRegExists   = "This passkey is already registered to you. Nothing changed; add a different authenticator, or keep using this one."
)

// proveOwner checks pr against the person's existing credentials for
// link l: nothing to check for a person with none. A passkey's assertion
// is verified as a step-up's is (origin, RP ID, challenge, user
// verification) and its signature counter recorded atomically, so that
// an assertion is good for one registration. It returns a refusal's
// status and sentence, or 0.
func (h *Handler) proveOwner(ctx context.Context, l RegistrationLink, p *person, pr ownerProof) (int, string) {
	if len(p.creds) > 0 {
		if len(pr.Assertion) == 0 {
			return http.StatusForbidden, msgNeedPasskey
		}
		parsed, err := protocol.ParseCredentialRequestResponseBytes(pr.Assertion)
		if err != nil {
			return http.StatusForbidden, fmt.Sprintf(msgBadProof, details(err))
		}
		_, session, err := h.beginLogin(p, registrationChallenge(l))
		if err != nil {
			h.cfg.Log.Error("stepup: begin registration assertion", "err", err)
			return http.StatusInternalServerError, msgTryAgain
		}
		cred, err := h.wa.ValidateLogin(p, *session, parsed)
		if err != nil {
			if !ownCredential(p, parsed.RawID) {
				return http.StatusForbidden, fmt.Sprintf(msgBadProof, "it is not one of your passkeys")
			}
			return http.StatusForbidden, fmt.Sprintf(msgBadProof, details(err))
		}
		if cred.Authenticator.CloneWarning {
			return http.StatusForbidden, msgReplay
		}
		switch err := h.cfg.Store.UsePasskey(ctx, l.Team, l.User, credentialID(cred.ID), cred.Authenticator.SignCount, h.cfg.Now()); {
		case errors.Is(err, ErrSignCount):
			return http.StatusForbidden, msgReplay
		case errors.Is(err, ErrPasskeyGone):
			return http.StatusForbidden, msgRemoved
		case err != nil:
			h.cfg.Log.Error("stepup: record passkey use", "err", err)
			return http.StatusServiceUnavailable, msgTryAgain
		}
		return 0, ""
	}
	secret, _, err := h.cfg.Store.TOTP(ctx, l.Team, l.User)
	if err != nil {
		h.cfg.Log.Error("stepup: read totp", "err", err)
		return http.StatusServiceUnavailable, msgTryAgain
	}
	if secret == nil {
		return h.recovering(ctx, l)
	}
	if pr.Current == "" {
		return http.StatusForbidden, msgNeedCode
	}
	if _, status, msg := h.checkTOTP(ctx, l.Team, l.User, "reg:"+l.ID, l.Expires.Sub(h.cfg.Now()), secret, pr.Current, true); status != 0 {
		if msg == "" {
			msg = "That code from your authenticator app is not valid now, or was used already. Nothing changed. Wait for the next code and try again."
		}
		return status, msg
	}
	return 0, ""
}

// msgRecovering refuses a first credential too soon after the last one
// was removed.
const msgRecovering = "You removed your last passkey or authenticator app at %s. So that someone holding your Slack session cannot remove yours and add their own, a new one can be added from %s. If you did not remove it, tell your admins now. Nothing changed."

// recovering refuses (403) the first credential of link l's person while
// their last removal is less than Config.RecoveryDelay ago; 0 otherwise.
func (h *Handler) recovering(ctx context.Context, l RegistrationLink) (int, string) {
	at, err := h.cfg.Store.LastRemoval(ctx, l.Team, l.User)
	if err != nil {
		h.cfg.Log.Error("stepup: read the last removal", "err", err)
		return http.StatusServiceUnavailable, msgTryAgain
	}
	if until := at.Add(h.cfg.RecoveryDelay); !at.IsZero() && h.cfg.Now().Before(until) {
		return http.StatusForbidden, fmt.Sprintf(msgRecovering, textMarks{}.Time(at), textMarks{}.Time(until))
	}
	return 0, ""
}

// refuseRecovering refuses, on a registration page, a first credential
// (the person has no passkey, assert empty, and no app) while their last
// removal is recent (recovering), as the POST that follows would be; it
// reports whether it did.
func (h *Handler) refuseRecovering(ctx context.Context, w http.ResponseWriter, l RegistrationLink, assert string, hasTOTP bool) bool {
	if assert != "" || hasTOTP {
		return false
	}
	status, msg := h.recovering(ctx, l)
	if status == 0 {
		return false
	}
	h.refuse(w, status, "Not yet", msg)
	return true
}

// ownerAsk is what a registration page asks of a person who already has
// a credential: the assertion options (JSON, for data-assert) when they
// have a passkey, or hasTOTP when they have only an app.
func (h *Handler) ownerAsk(ctx context.Context, l RegistrationLink, p *person) (assert string, hasTOTP bool, err error) {
	if len(p.creds) > 0 {
		opts, _, err := h.beginLogin(p, registrationChallenge(l))
		if err != nil {
			return "", false, err
		}
		a, err := jsonAttr(opts)
		return a, false, err
	}
	secret, _, err := h.cfg.Store.TOTP(ctx, l.Team, l.User)
	return "", secret != nil, err
}

// registerPage asks the browser to create a passkey for the link's
// person: first, when they have one, an assertion of an existing passkey
// (the script runs get() then create() on one click), or a code from
// their app.
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
	var attr, assert string
	var hasTOTP bool
	if err == nil {
		attr, err = jsonAttr(opts)
	}
	if err == nil {
		assert, hasTOTP, err = h.ownerAsk(ctx, *l, p)
	}
	if err != nil {
		h.cfg.Log.Error("stepup: begin registration", "err", err)
		h.refuse(w, http.StatusInternalServerError, "This link cannot be used", msgTryAgain)
		return
	}
	if h.refuseRecovering(ctx, w, *l, assert, hasTOTP) {
		return
	}
	pg := page{
		Kind: "register", Title: "Add a passkey", Heading: "Add a passkey for " + textMarks{}.Person(l.User),
		Lead:    "A passkey lets you confirm high-risk approvals with your device (Touch ID, Windows Hello, a security key). slackbot keeps only its public key.",
		Extra:   "This link works once and expires at " + textMarks{}.Time(l.Expires) + ".",
		Options: attr, Assert: assert, Action: "/passkeys/" + id, Ceremony: "create", Button: "Add a passkey", Name: "Passkey " + fmt.Sprint(len(p.keys)+1),
		Link: "/passkeys/" + id + "/totp", LinkText: "Use an authenticator app (one-time codes) instead",
	}
	switch {
	case assert != "":
		pg.Extra += " You already have a passkey: your browser will first ask for one of yours, then make the new one."
	case hasTOTP:
		pg.CodeLabel = "A current code from your authenticator app (you already have one, so it must confirm this)"
	}
	h.render(w, http.StatusOK, pg)
}

// registerWebAuthn checks the browser's new credential (origin, RP ID,
// the link's challenge, user verification) and, when the person already
// has a credential, their proof of it (proveOwner), then stores it,
// taking the link so that it registers once.
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
		Assertion  json.RawMessage `json:"assertion"`
		Code       string          `json:"code"`
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
	// The existing credential's proof comes before anything else is
	// said about this one (whether it is registered already).
	if status, msg := h.proveOwner(ctx, *l, p, ownerProof{Assertion: body.Assertion, Current: body.Code}); status != 0 {
		writeAnswer(w, status, false, msg)
		return
	}
	if ownCredential(p, cred.ID) {
		writeAnswer(w, http.StatusConflict, false, msgRegExists)
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
	case errors.Is(err, ErrPasskeyExists):
		writeAnswer(w, http.StatusConflict, false, msgRegExists)
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

// totpPage shows a new TOTP secret and asks for a code from it, and,
// when the person already has a credential, for their proof of it: an
// existing passkey's assertion (the script posts it with the code), or a
// code from the app being replaced.
func (h *Handler) totpPage(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	id := r.PathValue("id")
	l, status, msg := h.registration(ctx, id)
	if status != 0 {
		h.refuse(w, status, "This link cannot be used", msg)
		return
	}
	p, err := h.loadPerson(ctx, l.Team, l.User)
	var assert string
	var hasTOTP bool
	if err == nil {
		assert, hasTOTP, err = h.ownerAsk(ctx, *l, p)
	}
	if err != nil {
		h.cfg.Log.Error("stepup: totp page", "err", err)
		h.refuse(w, http.StatusServiceUnavailable, "This link cannot be used", msgTryAgain)
		return
	}
	if h.refuseRecovering(ctx, w, *l, assert, hasTOTP) {
		return
	}
	secret := pendingTOTP(*l)
	pg := page{
		Kind: "totp", Title: "Set up an authenticator app", Heading: "Set up an authenticator app for " + textMarks{}.Person(l.User),
		Lead:   "Where a route allows it, a one-time code from an authenticator app can confirm an approval instead of a passkey. A passkey is stronger: it cannot be phished.",
		Secret: totpSecretText(secret), URI: otpauthURI("slackbot", l.User, secret),
		Extra: "This link works once and expires at " + textMarks{}.Time(l.Expires) + ".",
	}
	if assert != "" {
		// One click: the existing passkey's assertion, then the code.
		pg.Assert, pg.Action, pg.Button = assert, "/passkeys/"+id+"/totp", "Confirm with your passkey"
		pg.CodeLabel = "Code from your authenticator app"
		pg.Extra += " You already have a passkey: your browser will ask for it to confirm this."
	} else {
		pg.TOTPAction, pg.TOTPButton, pg.Current = "/passkeys/"+id+"/totp", "Confirm", hasTOTP
	}
	h.render(w, http.StatusOK, pg)
}

// registerTOTP stores the offered secret once a valid code proves the app
// holds it, and the person's existing credential (proveOwner) allows it.
// The page's script posts JSON (an assertion and the code); the form
// posts code and current.
func (h *Handler) registerTOTP(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	id := r.PathValue("id")
	l, status, msg := h.registration(ctx, id)
	if status != 0 {
		regAnswer(w, r, h, status, false, msg)
		return
	}
	var body struct {
		Assertion json.RawMessage `json:"assertion"`
		Code      string          `json:"code"`
		Current   string          `json:"current"`
	}
	if r.Header.Get("Content-Type") == "application/json" {
		if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
			regAnswer(w, r, h, http.StatusBadRequest, false, "The browser sent nothing slackbot could read. Nothing changed.")
			return
		}
	} else {
		body.Code, body.Current = r.PostFormValue("code"), r.PostFormValue("current")
	}
	p, err := h.loadPerson(ctx, l.Team, l.User)
	if err != nil {
		regAnswer(w, r, h, http.StatusServiceUnavailable, false, msgTryAgain)
		return
	}
	secret := pendingTOTP(*l)
	now := h.cfg.Now()
	// The new app's code is counted like any other: its guesses burn the
	// link and count against the person.
	step, status, msg := h.checkTOTP(ctx, l.Team, l.User, "reg:"+id, l.Expires.Sub(now), secret, body.Code, false)
	if status != 0 {
		if msg == "" {
			msg = "That code does not match the key shown. Nothing changed. Go back, check the app holds the key, and type its current code."
		}
		regAnswer(w, r, h, status, false, msg)
		return
	}
	if status, msg := h.proveOwner(ctx, *l, p, ownerProof{Assertion: body.Assertion, Current: body.Current}); status != 0 {
		regAnswer(w, r, h, status, false, msg)
		return
	}
	if taken, err := h.cfg.Store.TakeRegistration(ctx, id); err != nil || taken == nil {
		regAnswer(w, r, h, http.StatusNotFound, false, msgRegGone)
		return
	}
	if err := h.cfg.Store.SetTOTP(ctx, l.Team, l.User, secret, now); err != nil {
		h.cfg.Log.Error("stepup: set totp", "err", err)
		regAnswer(w, r, h, http.StatusServiceUnavailable, false, msgTryAgain)
		return
	}
	// The confirming code's step is spent: it cannot approve anything.
	_, _ = h.cfg.Store.UseTOTPStep(ctx, l.Team, l.User, step)
	h.audit(ctx, PasskeyEvent{Type: EventAdded, Team: l.Team, User: l.User, ID: MethodTOTP, Name: "Authenticator app", Method: MethodTOTP})
	h.notify(ctx, l.Team, l.User, "🔑 An authenticator app was set up for your slackbot approvals. If you did not do this, remove it from App Home and tell your admins.")
	regAnswer(w, r, h, http.StatusOK, true, "Done. Where a route allows one-time codes, slackbot will accept a code from this app. You can close this page.")
}

// regAnswer answers the app's enrolment: JSON to the script, a page to
// the form.
func regAnswer(w http.ResponseWriter, r *http.Request, h *Handler, status int, ok bool, msg string) {
	answerOrPage(w, r, h, status, ok, msg, "Authenticator app set up", "Not set up")
}
