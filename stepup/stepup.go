package stepup

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/go-webauthn/webauthn/protocol"
	"github.com/go-webauthn/webauthn/webauthn"

	"github.com/slackapprove/slackbot/approval"
)

// Limits and lifetimes.
const (
	// MaxPasskeys is how many passkeys one person may register: enough
	// for a laptop, a phone and a few security keys, and a bound on what
	// every step-up page lists.
	MaxPasskeys = 10
	// RegistrationTTL is how long a registration link may be used.
	RegistrationTTL = 5 * time.Minute
	// maxBody caps a POST's body: an assertion or attestation is a few
	// KiB; an attestation with a certificate chain stays well under this.
	maxBody = 64 << 10
	// maxNameLen caps a passkey's name.
	maxNameLen = 64
)

// Errors a Store returns that the pages explain.
var (
	// ErrPasskeyLimit: the person already has MaxPasskeys passkeys.
	ErrPasskeyLimit = errors.New("passkey limit reached")
	// ErrPasskeyGone: the credential is not (or no longer) registered to
	// the person.
	ErrPasskeyGone = errors.New("passkey not registered")
	// ErrSignCount: the authenticator's signature counter did not move
	// past the one recorded: a replayed assertion or a cloned
	// authenticator.
	ErrSignCount = errors.New("signature counter did not advance")
	// ErrPasskeyExists: the person already has a passkey with this
	// credential id; it is kept as it was.
	ErrPasskeyExists = errors.New("passkey already registered")
)

// Approvals is what the step-up page needs of approval.Service: the link
// as it stands (read without consuming it) and the completion that takes
// it and decides. *approval.Service implements it.
type Approvals interface {
	StepUpLink(ctx context.Context, id string) (*approval.StepUpLink, *approval.Request, error)
	CompleteStepUp(ctx context.Context, id, team, user string, proof approval.StepUp) (*approval.Decided, error)
}

// RecoveryDelay is Config.RecoveryDelay's default: a day, in which the
// person is told twice in Slack (the removal, and the refused
// registration) and the audit stream shows both.
const RecoveryDelay = 24 * time.Hour

// Config is what New needs.
type Config struct {
	// PublicURL is slackbot's public URL (PUBLIC_URL): the pages answer
	// only on its host; the WebAuthn RP ID is its host name and the only
	// origin accepted is its scheme://host.
	PublicURL *url.URL
	// Approvals reads and completes step-up links.
	Approvals Approvals
	// Viewer builds the view of a call the page shows, the card's own.
	Viewer approval.Viewer
	// Store keeps credentials, TOTP secrets and registration links.
	Store Store
	// Notify tells a person, in Slack, that a passkey was added to or
	// removed from their account; nil: nobody is told (tests). A failure
	// is logged, never undoes the change.
	Notify func(ctx context.Context, team, user, text string)
	// Now is the clock; nil: time.Now.
	Now func() time.Time
	// Log receives what went wrong inside (never a secret); nil: discard.
	Log *slog.Logger
	// RecoveryDelay is how long after a person removed a credential a
	// first one (they have none left) may be added; 0: RecoveryDelay.
	// Removing is a click in Slack: without the delay a stolen Slack
	// session could remove a person's passkeys and at once add its own.
	RecoveryDelay time.Duration
	// Note is a line every page that asks for a passkey shows under its
	// button; empty: none. `slackbot dev` says there how to get a passkey
	// in a browser made for testing, which has none.
	Note string
}

// Store keeps what step-up needs between requests: each person's
// passkeys and TOTP secret, and single-use registration links. cmd/slackbot
// implements it over package store (store/passkeys.go).
type Store interface {
	// Passkeys returns the person's passkeys, oldest first.
	Passkeys(ctx context.Context, team, user string) ([]Passkey, error)
	// AddPasskey registers p; ErrPasskeyLimit past MaxPasskeys,
	// ErrPasskeyExists (nothing changed) when the person has p.ID already.
	AddPasskey(ctx context.Context, team, user string, p Passkey) error
	// RemovePasskey forgets the passkey; false when there was none.
	RemovePasskey(ctx context.Context, team, user, id string) (bool, error)
	// UsePasskey records a use: signCount must be above the one recorded
	// unless both are 0 (an authenticator without a counter), else
	// ErrSignCount; ErrPasskeyGone when the passkey was removed meanwhile.
	UsePasskey(ctx context.Context, team, user, id string, signCount uint32, at time.Time) error
	// SaveRegistration stores a registration link until it expires.
	SaveRegistration(ctx context.Context, l RegistrationLink) error
	// TakeRegistration returns the link and deletes it, atomically: nil
	// when it is unknown, used or expired.
	TakeRegistration(ctx context.Context, id string) (*RegistrationLink, error)
	// RegistrationLink returns the link without consuming it: nil when it
	// is unknown, used or expired.
	RegistrationLink(ctx context.Context, id string) (*RegistrationLink, error)
	// AuditPasskey appends e to the audit stream.
	AuditPasskey(ctx context.Context, e PasskeyEvent) error
	// TOTP returns the person's TOTP secret and when it was added; nil
	// when they have none.
	TOTP(ctx context.Context, team, user string) ([]byte, time.Time, error)
	// SetTOTP stores the person's TOTP secret, replacing any.
	SetTOTP(ctx context.Context, team, user string, secret []byte, at time.Time) error
	// RemoveTOTP forgets the person's TOTP secret; false when there was
	// none.
	RemoveTOTP(ctx context.Context, team, user string) (bool, error)
	// LastRemoval returns when the person last removed a passkey or their
	// TOTP secret (RemovePasskey, RemoveTOTP note it); zero when never.
	LastRemoval(ctx context.Context, team, user string) (time.Time, error)
	// UseTOTPStep records step as used: false when it, or a later step,
	// was used already (RFC 6238 §5.2: a code is accepted once).
	UseTOTPStep(ctx context.Context, team, user string, step int64) (bool, error)
	// TOTPFailures returns how many wrong codes were counted against
	// scope (a link) and against the person in the current window.
	TOTPFailures(ctx context.Context, team, user, scope string) (scopeN, personN int, err error)
	// TOTPFailed counts one wrong code against scope (forgotten after
	// scopeTTL) and against the person (forgotten window after the
	// window's first), atomically, and returns both counts.
	TOTPFailed(ctx context.Context, team, user, scope string, scopeTTL, window time.Duration) (scopeN, personN int, err error)
}

// Passkey is one registered WebAuthn credential.
type Passkey struct {
	// ID is the credential id, base64url without padding.
	ID   string
	Name string
	// Credential is the webauthn.Credential as JSON: its public key,
	// flags and authenticator data.
	Credential json.RawMessage
	// SignCount is the last signature counter seen (kept beside the
	// credential so that a use updates it atomically).
	SignCount       uint32
	Added, LastUsed time.Time
}

// RegistrationLink is a single-use link to the registration page, bound
// to one person.
type RegistrationLink struct {
	// ID is in the URL; Token never leaves slackbot: the ceremony's
	// challenge and a TOTP secret offered are derived from it.
	ID, Token  string
	Team, User string
	Expires    time.Time
}

// PasskeyEvent is an audit entry: a passkey or TOTP secret added or
// removed.
type PasskeyEvent struct {
	// Type is one of the Event* constants.
	Type       string
	Team, User string
	// ID is the credential id ("totp" for a TOTP secret); Name its name.
	ID, Name string
	// Method is MethodWebAuthn or MethodTOTP.
	Method string
	At     time.Time
}

// The audit types of a PasskeyEvent.
const (
	EventAdded   = "passkey_added"
	EventRemoved = "passkey_removed"
)

// The step-up methods a route may allow (routing's step_up_methods).
const (
	MethodWebAuthn = "webauthn"
	MethodTOTP     = "totp"
)

// PasskeyInfo is what App Home lists of a passkey (or TOTP secret).
type PasskeyInfo struct {
	ID, Name, Method string
	Added, LastUsed  time.Time
}

// Handler serves /step-up/ and /passkeys/.
type Handler struct {
	cfg    Config
	host   string
	origin string
	wa     *webauthn.WebAuthn
	mux    *http.ServeMux
}

// New returns the handler of the step-up and passkey pages.
func New(cfg Config) (*Handler, error) {
	if cfg.PublicURL == nil || cfg.PublicURL.Host == "" || (cfg.PublicURL.Scheme != "https" && cfg.PublicURL.Scheme != "http") {
		return nil, errors.New("stepup: PublicURL must be an http(s) URL with a host")
	}
	if cfg.Approvals == nil || cfg.Store == nil {
		return nil, errors.New("stepup: Approvals and Store are required")
	}
	if cfg.RecoveryDelay <= 0 {
		cfg.RecoveryDelay = RecoveryDelay
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	origin := cfg.PublicURL.Scheme + "://" + cfg.PublicURL.Host
	wa, err := webauthn.New(&webauthn.Config{
		RPID:          cfg.PublicURL.Hostname(),
		RPDisplayName: "slackbot",
		RPOrigins:     []string{origin},
		AuthenticatorSelection: protocol.AuthenticatorSelection{
			ResidentKey:      protocol.ResidentKeyRequirementPreferred,
			UserVerification: protocol.VerificationRequired,
		},
		AttestationPreference: protocol.PreferNoAttestation,
		Timeouts: webauthn.TimeoutsConfig{
			Login:        webauthn.TimeoutConfig{Timeout: 2 * time.Minute, TimeoutUVD: 2 * time.Minute},
			Registration: webauthn.TimeoutConfig{Timeout: 2 * time.Minute, TimeoutUVD: 2 * time.Minute},
		},
	})
	if err != nil {
		return nil, fmt.Errorf("stepup: webauthn: %w", err)
	}
	h := &Handler{cfg: cfg, host: strings.ToLower(cfg.PublicURL.Host), origin: origin, wa: wa, mux: http.NewServeMux()}
	h.routes()
	return h, nil
}

func (h *Handler) routes() {
	h.mux.Handle("GET /step-up/assets/", assets())
	h.mux.HandleFunc("GET /step-up/{id}", h.stepUpPage)
	h.mux.HandleFunc("POST /step-up/{id}", h.stepUpWebAuthn)
	h.mux.HandleFunc("POST /step-up/{id}/totp", h.stepUpTOTP)
	h.mux.HandleFunc("GET /passkeys/{id}", h.registerPage)
	h.mux.HandleFunc("POST /passkeys/{id}", h.registerWebAuthn)
	h.mux.HandleFunc("GET /passkeys/{id}/totp", h.totpPage)
	h.mux.HandleFunc("POST /passkeys/{id}/totp", h.registerTOTP)
}

// ServeHTTP answers only on PUBLIC_URL's host (a passkey is bound to
// that host, and the pages must not be served under another name that a
// proxy happens to route here), with headers that forbid framing,
// caching, referrers and every script, style or connection not our own.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	hd := w.Header()
	hd.Set("Content-Security-Policy", CSP)
	hd.Set("Cache-Control", "no-store")
	hd.Set("Referrer-Policy", "no-referrer")
	hd.Set("X-Content-Type-Options", "nosniff")
	hd.Set("X-Frame-Options", "DENY")
	hd.Set("Cross-Origin-Opener-Policy", "same-origin")
	if h.cfg.PublicURL.Scheme == "https" {
		hd.Set("Strict-Transport-Security", "max-age=31536000")
	}
	if !strings.EqualFold(r.Host, h.host) {
		h.refuse(w, http.StatusMisdirectedRequest, "Wrong address", "This page is served only at "+h.origin+". Open the link slackbot sent you as it is.")
		return
	}
	if r.Method == http.MethodPost {
		// A POST from another site is refused before anything is read:
		// browsers send Origin on every cross-origin POST.
		if o := r.Header.Get("Origin"); o != "" && !strings.EqualFold(o, h.origin) {
			h.refuse(w, http.StatusForbidden, "Wrong origin", "This form can be sent only from "+h.origin+". Nothing changed.")
			return
		}
		r.Body = http.MaxBytesReader(w, r.Body, maxBody)
	}
	h.mux.ServeHTTP(w, r)
}

// CSP is the Content-Security-Policy of every page: our own script and
// style only (embedded, never inline), no framing, forms and fetches to
// ourselves alone.
const CSP = "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self' data:; frame-ancestors 'none'; form-action 'self'; base-uri 'none'"

// randomID returns 32 random bytes, base64url: a link id or token.
func randomID() (string, error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return base64.RawURLEncoding.EncodeToString(b), nil
}

func (h *Handler) notify(ctx context.Context, team, user, text string) {
	if h.cfg.Notify == nil {
		return
	}
	h.cfg.Notify(context.WithoutCancel(ctx), team, user, text)
}
