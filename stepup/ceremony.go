package stepup

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/go-webauthn/webauthn/protocol"
	"github.com/go-webauthn/webauthn/webauthn"
)

// person is a Slack user as WebAuthn sees them, with the passkeys
// registered to them.
type person struct {
	team, user string
	keys       []Passkey
	creds      []webauthn.Credential
}

// userHandle is the WebAuthn user id of a Slack user: a digest, so that
// the authenticator stores no Slack id, and a credential made for one
// person never matches another (go-webauthn checks an assertion's
// userHandle against it).
func userHandle(team, user string) []byte {
	h := sha256.Sum256([]byte("slackbot passkey user v1\x00" + team + "\x00" + user))
	return h[:]
}

func (p *person) WebAuthnID() []byte                         { return userHandle(p.team, p.user) }
func (p *person) WebAuthnName() string                       { return p.user }
func (p *person) WebAuthnDisplayName() string                { return "Slack user " + p.user }
func (p *person) WebAuthnCredentials() []webauthn.Credential { return p.creds }

// loadPerson reads the person's passkeys; a credential that no longer
// decodes is skipped (logged), never fatal to the others.
func (h *Handler) loadPerson(ctx context.Context, team, user string) (*person, error) {
	keys, err := h.cfg.Store.Passkeys(ctx, team, user)
	if err != nil {
		return nil, fmt.Errorf("passkeys of %s: %w", user, err)
	}
	p := &person{team: team, user: user}
	for _, k := range keys {
		var c webauthn.Credential
		if err := json.Unmarshal(k.Credential, &c); err != nil {
			h.cfg.Log.Error("stepup: a stored passkey does not decode", "user", user, "cred", k.ID, "err", err)
			continue
		}
		c.Authenticator.SignCount = k.SignCount
		p.keys = append(p.keys, k)
		p.creds = append(p.creds, c)
	}
	return p, nil
}

// derive returns SHA-256 over label and parts, NUL-separated: a
// registration's challenge or pending TOTP secret, bound to the link's
// values, one of which (its Token) only slackbot knows.
func derive(label string, l RegistrationLink) []byte {
	h := sha256.New()
	for _, s := range []string{label, l.ID, l.Token, l.Team, l.User, strconv.FormatInt(l.Expires.Unix(), 10)} {
		h.Write([]byte(s))
		h.Write([]byte{0})
	}
	return h.Sum(nil)
}

// withCreationChallenge sets the registration's challenge: derived from
// the link, so that the page and the POST that finishes compute the same
// session without keeping one anywhere.
func withCreationChallenge(c []byte) webauthn.RegistrationOption {
	return func(o *protocol.PublicKeyCredentialCreationOptions) error {
		o.Challenge = c
		return nil
	}
}

// beginRegistration is the registration ceremony of link l for p: its
// options for the browser and the session to check the answer against.
// It is computed alike on the page and on the POST.
func (h *Handler) beginRegistration(p *person, l RegistrationLink) (*protocol.CredentialCreation, *webauthn.SessionData, error) {
	exclude := make([]protocol.CredentialDescriptor, 0, len(p.creds))
	for _, c := range p.creds {
		exclude = append(exclude, c.Descriptor())
	}
	return h.wa.BeginRegistration(p,
		withCreationChallenge(derive("slackbot passkey registration v1", l)),
		webauthn.WithExclusions(exclude),
	)
}

// beginLogin is the assertion ceremony of a step-up: the challenge is
// approval.StepUpChallenge of the link, the allowed credentials the
// approver's passkeys, user verification required.
func (h *Handler) beginLogin(p *person, challenge []byte) (*protocol.CredentialAssertion, *webauthn.SessionData, error) {
	return h.wa.BeginLogin(p, webauthn.WithChallenge(challenge), webauthn.WithUserVerification(protocol.VerificationRequired))
}

// registrationChallenge is the challenge an existing passkey signs to
// allow adding another on link l: bound, as approval.StepUpChallenge is
// for a step-up link, to the link's id, secret token, person and expiry,
// with its own purpose so that it is never a step-up's or a creation's.
func registrationChallenge(l RegistrationLink) []byte {
	return derive("slackbot passkey register: existing passkey v1", l)
}

// credentialID is a credential id as Passkey.ID and approval.StepUp hold
// it.
func credentialID(raw []byte) string { return base64.RawURLEncoding.EncodeToString(raw) }
