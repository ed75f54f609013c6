// Package webauthntest is a software WebAuthn authenticator for tests:
// one ECDSA P-256 credential answering registration and assertion
// ceremonies as a browser hands them to a relying party (the JSON
// navigator.credentials.create and .get results serialize to), with every
// field a hostile test may spoil (RP ID, counter, flags, origin) its own.
// The browser tests use Chromium's virtual authenticator instead.
package webauthntest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"testing"

	"github.com/go-webauthn/webauthn/protocol/webauthncbor"
)

// Key is one credential of a software authenticator. ID is its
// credential id; RPID the relying party it signs for (its SHA-256 leads
// authenticatorData); Count its signature counter, advanced before each
// assertion; Handle the user handle it returns (nil: none).
type Key struct {
	key    *ecdsa.PrivateKey
	ID     []byte
	RPID   string
	Count  uint32
	Handle []byte
}

// New makes a credential for rpID and the user handle.
func New(t testing.TB, rpID string, handle []byte) *Key {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	id := make([]byte, 16)
	_, _ = rand.Read(id)
	return &Key{key: k, ID: id, RPID: rpID, Handle: handle}
}

// The authenticatorData flags: user present, user verified, attested
// credential data included.
const (
	FlagUP = 0x01
	FlagUV = 0x04
	flagAT = 0x40
)

// B64 is base64url without padding, as WebAuthn's JSON carries bytes.
func B64(b []byte) string { return base64.RawURLEncoding.EncodeToString(b) }

func clientData(typ string, challenge []byte, origin string) []byte {
	b, _ := json.Marshal(map[string]any{"type": typ, "challenge": B64(challenge), "origin": origin, "crossOrigin": false})
	return b
}

func (s *Key) authData(rpID string, flags byte, attested []byte) []byte {
	h := sha256.Sum256([]byte(rpID))
	out := append(h[:], flags)
	out = binary.BigEndian.AppendUint32(out, s.Count)
	return append(out, attested...)
}

// Create answers a registration ceremony with "none" attestation.
func (s *Key) Create(t testing.TB, challenge []byte, origin string) json.RawMessage {
	t.Helper()
	x, y := s.key.X.FillBytes(make([]byte, 32)), s.key.Y.FillBytes(make([]byte, 32))
	cose, err := webauthncbor.Marshal(map[int]any{1: 2, 3: -7, -1: 1, -2: x, -3: y})
	if err != nil {
		t.Fatal(err)
	}
	attested := make([]byte, 16) // AAGUID: none
	attested = binary.BigEndian.AppendUint16(attested, uint16(len(s.ID)))
	attested = append(append(attested, s.ID...), cose...)
	att, err := webauthncbor.Marshal(map[string]any{"fmt": "none", "attStmt": map[string]any{}, "authData": s.authData(s.RPID, FlagUP|FlagUV|flagAT, attested)})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(map[string]any{
		"id": B64(s.ID), "rawId": B64(s.ID), "type": "public-key", "clientExtensionResults": map[string]any{},
		"response": map[string]any{"clientDataJSON": B64(clientData("webauthn.create", challenge, origin)), "attestationObject": B64(att)},
	})
	return b
}

// Get answers an assertion ceremony: the signature over authenticatorData
// and SHA-256(clientDataJSON), the counter advanced first.
func (s *Key) Get(t testing.TB, challenge []byte, origin string, flags byte) json.RawMessage {
	t.Helper()
	s.Count++
	ad := s.authData(s.RPID, flags, nil)
	cd := clientData("webauthn.get", challenge, origin)
	sum := sha256.Sum256(cd)
	digest := sha256.Sum256(append(append([]byte{}, ad...), sum[:]...))
	sig, err := ecdsa.SignASN1(rand.Reader, s.key, digest[:])
	if err != nil {
		t.Fatal(err)
	}
	resp := map[string]any{"clientDataJSON": B64(cd), "authenticatorData": B64(ad), "signature": B64(sig)}
	if s.Handle != nil {
		resp["userHandle"] = B64(s.Handle)
	}
	b, _ := json.Marshal(map[string]any{"id": B64(s.ID), "rawId": B64(s.ID), "type": "public-key", "clientExtensionResults": map[string]any{}, "response": resp})
	return b
}
