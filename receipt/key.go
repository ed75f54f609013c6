package receipt

import (
	"crypto"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"

	"github.com/go-jose/go-jose/v4"
)

// SeedSize is the size of an Ed25519 seed, the form RECEIPT_KEY takes.
const SeedSize = ed25519.SeedSize

// Key is a receipt signing key: an Ed25519 private key and its key id,
// the RFC 7638 thumbprint of its public JWK. No fmt verb, slog handler or
// JSON encoding of a Key or *Key shows the private key.
type Key struct {
	priv ed25519.PrivateKey
	id   string
}

// NewKey returns the key of a 32-byte Ed25519 seed.
func NewKey(seed []byte) (*Key, error) {
	if len(seed) != SeedSize {
		return nil, fmt.Errorf("an Ed25519 seed is %d bytes, this one is %d", SeedSize, len(seed))
	}
	priv := ed25519.NewKeyFromSeed(seed)
	id, err := thumbprint(priv.Public().(ed25519.PublicKey))
	if err != nil {
		return nil, err
	}
	return &Key{priv: priv, id: id}, nil
}

// ParseSeed returns the key of a base64 seed, as RECEIPT_KEY holds it:
// standard or URL alphabet, padded or not, surrounding space ignored. Its
// errors never quote the seed.
func ParseSeed(s string) (*Key, error) {
	s = strings.TrimRight(strings.TrimSpace(s), "=")
	for _, enc := range []*base64.Encoding{base64.RawStdEncoding, base64.RawURLEncoding} {
		if seed, err := enc.DecodeString(s); err == nil {
			return NewKey(seed)
		}
	}
	return nil, errors.New("not base64: want the base64 of a 32-byte Ed25519 seed (e.g. `openssl rand -base64 32`)")
}

// GenerateSeed returns a new random seed from crypto/rand.
func GenerateSeed() ([]byte, error) {
	seed := make([]byte, SeedSize)
	if _, err := rand.Read(seed); err != nil {
		return nil, fmt.Errorf("generate receipt key: %w", err)
	}
	return seed, nil
}

// EncodeSeed writes seed as RECEIPT_KEY takes it (standard base64).
func EncodeSeed(seed []byte) string { return base64.StdEncoding.EncodeToString(seed) }

// ID returns the key's id, the kid of the receipts it signs.
func (k *Key) ID() string { return k.id }

// Public returns the key's public half.
func (k *Key) Public() ed25519.PublicKey { return k.priv.Public().(ed25519.PublicKey) }

// String names the key by its id only.
func (k Key) String() string { return "receipt key " + k.id }

// GoString keeps the private key out of %#v.
func (k Key) GoString() string { return k.String() }

// Format prints the key as String does whatever the verb (%d, %x, %v…),
// so that no verb prints the private key, whether k is a pointer, a value
// or a field of a struct being printed.
func (k Key) Format(f fmt.State, verb rune) {
	if verb == 'q' {
		fmt.Fprintf(f, "%q", k.String())
		return
	}
	_, _ = io.WriteString(f, k.String())
}

// LogValue logs the key as its id (slog).
func (k Key) LogValue() slog.Value { return slog.StringValue(k.String()) }

// MarshalJSON keeps the private key out of any JSON k is part of: a key
// marshals as its id.
func (k Key) MarshalJSON() ([]byte, error) { return json.Marshal(k.String()) }

// thumbprint is the RFC 7638 SHA-256 thumbprint of pub's JWK, base64url.
func thumbprint(pub ed25519.PublicKey) (string, error) {
	jwk := jose.JSONWebKey{Key: pub}
	tp, err := jwk.Thumbprint(crypto.SHA256)
	if err != nil {
		return "", fmt.Errorf("key id: %w", err)
	}
	return base64.RawURLEncoding.EncodeToString(tp), nil
}
