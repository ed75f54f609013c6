package receipt

import (
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/go-jose/go-jose/v4"
)

// MetadataKey is where a receipt goes in DeferredToolResults.metadata of
// its tool_call_id.
const MetadataKey = "slackbot_receipt"

// ErrorMetadataKey is where, instead of a receipt, slackbot says why an
// approved call has none (its arguments hold a number no receipt can bind
// exactly, see Canonical).
const ErrorMetadataKey = "slackbot_receipt_error"

// Type is the typ header of a receipt (RFC 8725 explicit typing), so no
// other JWT signed by the key passes for a receipt.
const Type = "slackbot-receipt+jwt"

// DefaultIssuer is the iss of receipts when slackbot has no PUBLIC_URL.
const DefaultIssuer = "slackbot"

// DefaultTTL is how long a receipt holds after its approval took effect: a day, so a
// run resumed late (its replica died, slackbot restarted) or a client
// reading its results hours later still gets one that verifies, while an
// old receipt cannot be replayed for long (a tool that must run a call
// once also remembers the sub it ran).
const DefaultTTL = 24 * time.Hour

// Claims are what a receipt says (the JWT claims of its payload).
type Claims struct {
	// Issuer is slackbot's PUBLIC_URL, or DefaultIssuer.
	Issuer string `json:"iss"`
	// CallID is the tool_call_id of the approved call (the JWT sub).
	CallID string `json:"sub"`
	// Tool is the tool's name.
	Tool string `json:"tool"`
	// ArgsSHA256 is ArgsSHA256 of the arguments that run: the approver's
	// edit when there is one, the call's own otherwise.
	ArgsSHA256 string `json:"args_sha256"`
	// By is who approved: the approvers' Slack user ids (every approver of
	// a quorum), or "policy:<route>", or "grant:<approver>", or
	// "api:<client>" for an API client answering its own request (after
	// the people who voted, when it completed a quorum).
	By []string `json:"by"`
	// Route is the route that sent the call to its approvers; empty when
	// no route did.
	Route string `json:"route,omitempty"`
	// TokenSHA256 is TokenSHA256 of the resume token of the request the
	// call was decided on; empty for a call a policy approved inside a run
	// before any request was recorded.
	TokenSHA256 string `json:"tok,omitempty"`
	// IssuedAt is when the approval took effect (its request resolved, or
	// a policy approved the call inside a run), ExpiresAt when the receipt
	// stops holding (Unix seconds).
	IssuedAt  int64 `json:"iat"`
	ExpiresAt int64 `json:"exp"`
	// AMR are the authentication methods (RFC 8176) of the approvers'
	// step-up proofs, their union: ["hwk"] for a passkey, ["otp"] for a
	// one-time code. Empty when any approver only clicked.
	AMR []string `json:"amr,omitempty"`
	// Cred are the approvers' step-up credential ids (base64url WebAuthn
	// credential ids, "totp" for a one-time code), in By's order; set with
	// AMR only.
	Cred []string `json:"cred,omitempty"`
}

// Signer signs receipts with one key. It is safe for concurrent use.
//
// Ed25519 signatures are deterministic, so the same claims signed with
// the same key give the same receipt; a Signer remembers the last few
// thousand it made, so that reading a decided request again (a card
// update, a resume, a long poll) does not sign again.
type Signer struct {
	key    *Key
	issuer string
	ttl    time.Duration
	signer jose.Signer

	mu   sync.Mutex
	memo map[string]string // payload → receipt
}

// memoMax bounds a Signer's memory of receipts it made (~600 B each).
const memoMax = 4096

// NewSigner returns a signer with key for issuer (empty: DefaultIssuer)
// whose receipts hold ttl after their decision (zero: DefaultTTL).
func NewSigner(key *Key, issuer string, ttl time.Duration) (*Signer, error) {
	if key == nil {
		return nil, errors.New("receipt signer: no key")
	}
	if issuer == "" {
		issuer = DefaultIssuer
	}
	if ttl <= 0 {
		ttl = DefaultTTL
	}
	js, err := jose.NewSigner(
		jose.SigningKey{Algorithm: jose.EdDSA, Key: jose.JSONWebKey{Key: key.priv, KeyID: key.ID()}},
		(&jose.SignerOptions{}).WithType(Type),
	)
	if err != nil {
		return nil, fmt.Errorf("receipt signer: %w", err)
	}
	return &Signer{key: key, issuer: issuer, ttl: ttl, signer: js, memo: map[string]string{}}, nil
}

// KeyID returns the id of the key the signer signs with.
func (s *Signer) KeyID() string { return s.key.ID() }

// Sign returns the compact JWS of c, with the signer's issuer as iss and
// exp its TTL after c.IssuedAt (both set here, whatever c says).
func (s *Signer) Sign(c Claims) (string, error) {
	c.Issuer = s.issuer
	c.ExpiresAt = c.IssuedAt + int64(s.ttl/time.Second)
	if c.By == nil {
		c.By = []string{}
	}
	payload, err := json.Marshal(c)
	if err != nil {
		return "", fmt.Errorf("receipt of %s: %w", c.CallID, err)
	}
	s.mu.Lock()
	jws, ok := s.memo[string(payload)]
	s.mu.Unlock()
	if ok {
		return jws, nil
	}
	obj, err := s.signer.Sign(payload)
	if err != nil {
		return "", fmt.Errorf("receipt of %s: %w", c.CallID, err)
	}
	if jws, err = obj.CompactSerialize(); err != nil {
		return "", fmt.Errorf("receipt of %s: %w", c.CallID, err)
	}
	s.mu.Lock()
	if len(s.memo) >= memoMax {
		clear(s.memo)
	}
	s.memo[string(payload)] = jws
	s.mu.Unlock()
	return jws, nil
}
