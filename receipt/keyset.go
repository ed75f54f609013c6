package receipt

import (
	"context"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"

	"github.com/go-jose/go-jose/v4"
)

// MaxJWKSBytes bounds a JWKS document Fetch or ParseJWKS reads.
const MaxJWKSBytes = 64 << 10

// KeySet is the public keys receipts are verified with, by key id: the
// current signing key first, then the previous ones kept during a
// rotation. The zero KeySet verifies nothing.
type KeySet struct {
	ids  []string // in the order they were given
	keys map[string]ed25519.PublicKey
}

// NewKeySet returns the public keys of keys, in order; nil keys are
// skipped, and a key given twice counts once.
func NewKeySet(keys ...*Key) *KeySet {
	ks := &KeySet{keys: map[string]ed25519.PublicKey{}}
	for _, k := range keys {
		if k != nil {
			ks.add(k.ID(), k.Public())
		}
	}
	return ks
}

func (ks *KeySet) add(id string, pub ed25519.PublicKey) {
	if _, dup := ks.keys[id]; dup {
		return
	}
	ks.ids = append(ks.ids, id)
	ks.keys[id] = pub
}

// IDs returns the key ids, current first.
func (ks *KeySet) IDs() []string { return slices.Clone(ks.ids) }

// JWKS returns the keys as an RFC 7517 JWK Set: {"keys":[{"kty":"OKP",
// "crv":"Ed25519","x":…,"kid":…,"alg":"EdDSA","use":"sig"}…]}.
func (ks *KeySet) JWKS() []byte {
	set := jose.JSONWebKeySet{Keys: make([]jose.JSONWebKey, 0, len(ks.ids))}
	for _, id := range ks.ids {
		set.Keys = append(set.Keys, jose.JSONWebKey{Key: ks.keys[id], KeyID: id, Algorithm: string(jose.EdDSA), Use: "sig"})
	}
	b, err := json.Marshal(set)
	if err != nil {
		panic("receipt: marshal JWKS: " + err.Error()) // Ed25519 public keys always marshal
	}
	return b
}

// ParseJWKS reads a JWK Set and keeps its Ed25519 signing keys; keys of
// other types, or marked for encryption, are skipped. A key whose kid is
// not its RFC 7638 thumbprint is refused: receipts name keys by thumbprint.
func ParseJWKS(data []byte) (*KeySet, error) {
	if len(data) > MaxJWKSBytes {
		return nil, fmt.Errorf("JWKS: %d bytes, at most %d", len(data), MaxJWKSBytes)
	}
	var set jose.JSONWebKeySet
	if err := json.Unmarshal(data, &set); err != nil {
		return nil, fmt.Errorf("JWKS: %w", err)
	}
	ks := &KeySet{keys: map[string]ed25519.PublicKey{}}
	for _, k := range set.Keys {
		pub, ok := k.Key.(ed25519.PublicKey)
		if !ok || (k.Use != "" && k.Use != "sig") {
			continue
		}
		id, err := thumbprint(pub)
		if err != nil {
			return nil, err
		}
		if k.KeyID != id {
			return nil, fmt.Errorf("JWKS: key %q: kid is not the key's RFC 7638 thumbprint %q", k.KeyID, id)
		}
		ks.add(id, pub)
	}
	if len(ks.ids) == 0 {
		return nil, fmt.Errorf("JWKS: no Ed25519 signing key")
	}
	return ks, nil
}

// Fetch reads the key set at url (slackbot's /.well-known/jwks.json)
// with client. Fetch again when Verify reports ErrUnknownKey: slackbot's
// keys were rotated.
func Fetch(ctx context.Context, client *http.Client, url string) (*KeySet, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, fmt.Errorf("fetch receipt keys: %w", err)
	}
	req.Header.Set("Accept", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("fetch receipt keys: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("fetch receipt keys from %s: %s", url, resp.Status)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, MaxJWKSBytes+1))
	if err != nil {
		return nil, fmt.Errorf("fetch receipt keys: %w", err)
	}
	return ParseJWKS(body)
}

// Handler serves the key set as GET /.well-known/jwks.json does: cached
// publicly for maxAge seconds, with a strong ETag so a client revalidates
// with If-None-Match for a 304.
func (ks *KeySet) Handler(maxAge int) http.Handler {
	body := ks.JWKS()
	sum := sha256.Sum256(body)
	etag := `"` + base64.RawURLEncoding.EncodeToString(sum[:18]) + `"`
	cacheControl := fmt.Sprintf("public, max-age=%d", maxAge)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Cache-Control", cacheControl)
		h.Set("ETag", etag)
		if matches(r.Header.Get("If-None-Match"), etag) {
			w.WriteHeader(http.StatusNotModified)
			return
		}
		h.Set("Content-Type", "application/jwk-set+json")
		_, _ = w.Write(body)
	})
}

// matches reports whether an If-None-Match header names etag (weakly, as
// RFC 9110 compares for GET) or is "*".
func matches(header, etag string) bool {
	for _, tag := range strings.Split(header, ",") {
		tag = strings.TrimPrefix(strings.TrimSpace(tag), "W/")
		if tag == etag || tag == "*" {
			return true
		}
	}
	return false
}
