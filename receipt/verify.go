package receipt

import (
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/go-jose/go-jose/v4"
)

// Why a receipt does not verify; Verify's errors wrap one of them.
var (
	ErrMissing    = errors.New("no approval receipt")
	ErrMalformed  = errors.New("approval receipt malformed")
	ErrUnknownKey = errors.New("approval receipt signed by an unknown key")
	ErrSignature  = errors.New("approval receipt signature does not verify")
	ErrMismatch   = errors.New("approval receipt is for another call")
	ErrExpired    = errors.New("approval receipt expired")
	// ErrNoStepUp: Expect.RequireStepUp, and the receipt says no approver
	// stepped up (a passkey or a one-time code) beyond the click.
	ErrNoStepUp = errors.New("approval receipt has no step-up")
)

// MaxReceiptBytes bounds a receipt Verify reads; slackbot's are well
// under 1 KiB.
const MaxReceiptBytes = 8 << 10

// Skew is the clock difference between slackbot and a verifier that
// Verify allows for iat and exp.
const Skew = time.Minute

// Expect is the call a receipt must be for.
type Expect struct {
	// CallID and Tool are the call's tool_call_id and tool name.
	CallID string
	Tool   string
	// Args is the JSON object of the arguments that will run (empty
	// means {}); any difference in its canonical form refuses the receipt.
	Args json.RawMessage
	// Token, when set, is the resume token the call was decided on.
	Token string
	// Issuer, when set, is the iss the receipt must name (slackbot's
	// PUBLIC_URL).
	Issuer string
	// Now is the verifier's clock; zero means time.Now().
	Now time.Time
	// RequireStepUp refuses (ErrNoStepUp, which wraps ErrMismatch) a
	// receipt whose approvers did not each give a step-up proof: one with
	// no amr, or fewer credential ids than approvers.
	RequireStepUp bool
	// StepUpMethods, when set, also refuses (ErrNoStepUp) a receipt whose
	// approvers stepped up with any method reference (amr) outside it:
	// []string{"hwk"} demands a passkey, where a route also accepts a
	// one-time code ("otp"). It implies RequireStepUp.
	StepUpMethods []string
}

// FromMetadata returns the receipt in a call's results metadata, or "".
func FromMetadata(md map[string]any) string {
	s, _ := md[MetadataKey].(string)
	return s
}

// Verify checks that jws is a receipt signed by one of the set's keys
// for exactly the call want describes, and returns its claims. Its error
// wraps ErrMissing, ErrMalformed (including any algorithm but EdDSA, and
// any typ but Type), ErrUnknownKey, ErrSignature, ErrMismatch or
// ErrExpired.
func (ks *KeySet) Verify(jws string, want Expect) (*Claims, error) {
	c, err := ks.verified(jws)
	if err != nil {
		return nil, err
	}
	if err := c.check(want); err != nil {
		return nil, err
	}
	return c, nil
}

// verified returns the claims of a receipt whose signature verifies.
func (ks *KeySet) verified(jws string) (*Claims, error) {
	switch {
	case jws == "":
		return nil, ErrMissing
	case len(jws) > MaxReceiptBytes:
		return nil, fmt.Errorf("%w: %d bytes, at most %d", ErrMalformed, len(jws), MaxReceiptBytes)
	}
	if err := canonicalParts(jws); err != nil {
		return nil, err
	}
	obj, err := jose.ParseSignedCompact(jws, []jose.SignatureAlgorithm{jose.EdDSA})
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrMalformed, err)
	}
	if len(obj.Signatures) != 1 {
		return nil, fmt.Errorf("%w: %d signatures", ErrMalformed, len(obj.Signatures))
	}
	h := obj.Signatures[0].Protected
	if typ, _ := h.ExtraHeaders[jose.HeaderType].(string); typ != Type {
		return nil, fmt.Errorf("%w: typ %q, want %q", ErrMalformed, typ, Type)
	}
	var pub ed25519.PublicKey
	if ks != nil {
		pub = ks.keys[h.KeyID]
	}
	if pub == nil {
		return nil, fmt.Errorf("%w: kid %q", ErrUnknownKey, h.KeyID)
	}
	payload, err := obj.Verify(pub)
	if err != nil {
		return nil, ErrSignature
	}
	var c Claims
	if err := json.Unmarshal(payload, &c); err != nil {
		return nil, fmt.Errorf("%w: claims: %v", ErrMalformed, err)
	}
	return &c, nil
}

// check compares the claims with the call they must be for.
func (c *Claims) check(want Expect) error {
	args := want.Args
	if len(args) == 0 {
		args = json.RawMessage("{}")
	}
	digest, err := ArgsSHA256(args)
	if err != nil {
		return fmt.Errorf("%w: the arguments: %v", ErrMismatch, err)
	}
	now := want.Now
	if now.IsZero() {
		now = time.Now()
	}
	switch {
	case c.CallID != want.CallID:
		return fmt.Errorf("%w: it approves tool call %q, not %q", ErrMismatch, c.CallID, want.CallID)
	case c.Tool != want.Tool:
		return fmt.Errorf("%w: it approves tool %q, not %q", ErrMismatch, c.Tool, want.Tool)
	case c.ArgsSHA256 != digest:
		return fmt.Errorf("%w: it approves other arguments than these", ErrMismatch)
	case want.Token != "" && c.TokenSHA256 != TokenSHA256(want.Token):
		return fmt.Errorf("%w: it was decided on another request", ErrMismatch)
	case want.Issuer != "" && c.Issuer != want.Issuer:
		return fmt.Errorf("%w: issued by %q, not %q", ErrMismatch, c.Issuer, want.Issuer)
	case (want.RequireStepUp || len(want.StepUpMethods) > 0) && (len(c.AMR) == 0 || len(c.Cred) != len(c.By)):
		return fmt.Errorf("%w: %w: its approval was a click, without the passkey (or one-time code) this tool requires", ErrMismatch, ErrNoStepUp)
	case len(want.StepUpMethods) > 0 && !allIn(c.AMR, want.StepUpMethods):
		return fmt.Errorf("%w: %w: its approvers stepped up with %v; this tool accepts only %v", ErrMismatch, ErrNoStepUp, c.AMR, want.StepUpMethods)
	case now.After(time.Unix(c.ExpiresAt, 0).Add(Skew)):
		return fmt.Errorf("%w at %s", ErrExpired, time.Unix(c.ExpiresAt, 0).UTC().Format(time.RFC3339))
	case time.Unix(c.IssuedAt, 0).After(now.Add(Skew)):
		return fmt.Errorf("%w: issued in the future (%s)", ErrMalformed, time.Unix(c.IssuedAt, 0).UTC().Format(time.RFC3339))
	}
	return nil
}

// canonicalParts refuses a JWS whose parts are not each the one unpadded
// base64url form of their bytes: a decoder that ignores the unused bits
// of the last character would take several spellings of one receipt, and
// a tool that remembers the receipts it ran by their text would be fooled.
func canonicalParts(jws string) error {
	for i, part := range strings.SplitN(jws, ".", 4) {
		if _, err := base64.RawURLEncoding.Strict().DecodeString(part); err != nil {
			return fmt.Errorf("%w: part %d is not canonical unpadded base64url", ErrMalformed, i+1)
		}
	}
	return nil
}

// allIn reports whether every element of got is in allowed.
func allIn(got, allowed []string) bool {
	for _, g := range got {
		if !slices.Contains(allowed, g) {
			return false
		}
	}
	return true
}
