package stepup

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

// softKey is a software authenticator: one ECDSA P-256 credential, as a
// platform authenticator makes one, answering WebAuthn ceremonies the way
// a browser would hand them to slackbot (navigator.credentials.create and
// .get, serialized as the page's script does). Each field a test may spoil
// is its own.
type softKey struct {
	key    *ecdsa.PrivateKey
	id     []byte
	rpID   string
	count  uint32
	handle []byte
}

func newSoftKey(t *testing.T, rpID string, handle []byte) *softKey {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	id := make([]byte, 16)
	_, _ = rand.Read(id)
	return &softKey{key: k, id: id, rpID: rpID, handle: handle}
}

const (
	flagUP = 0x01
	flagUV = 0x04
	flagAT = 0x40
)

func b64(b []byte) string { return base64.RawURLEncoding.EncodeToString(b) }

func clientData(typ string, challenge []byte, origin string) []byte {
	b, _ := json.Marshal(map[string]any{"type": typ, "challenge": b64(challenge), "origin": origin, "crossOrigin": false})
	return b
}

func (s *softKey) authData(rpID string, flags byte, attested []byte) []byte {
	h := sha256.Sum256([]byte(rpID))
	out := append(h[:], flags)
	out = binary.BigEndian.AppendUint32(out, s.count)
	return append(out, attested...)
}

// create answers a registration ceremony with "none" attestation.
func (s *softKey) create(t *testing.T, challenge []byte, origin string) json.RawMessage {
	t.Helper()
	x, y := s.key.X.FillBytes(make([]byte, 32)), s.key.Y.FillBytes(make([]byte, 32))
	cose, err := webauthncbor.Marshal(map[int]any{1: 2, 3: -7, -1: 1, -2: x, -3: y})
	if err != nil {
		t.Fatal(err)
	}
	attested := make([]byte, 16) // AAGUID: none
	attested = binary.BigEndian.AppendUint16(attested, uint16(len(s.id)))
	attested = append(append(attested, s.id...), cose...)
	att, err := webauthncbor.Marshal(map[string]any{"fmt": "none", "attStmt": map[string]any{}, "authData": s.authData(s.rpID, flagUP|flagUV|flagAT, attested)})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(map[string]any{
		"id": b64(s.id), "rawId": b64(s.id), "type": "public-key", "clientExtensionResults": map[string]any{},
		"response": map[string]any{"clientDataJSON": b64(clientData("webauthn.create", challenge, origin)), "attestationObject": b64(att)},
	})
	return b
}

// get answers an assertion ceremony: the signature over authenticatorData
// and SHA-256(clientDataJSON), the counter advanced first.
func (s *softKey) get(t *testing.T, challenge []byte, origin string, flags byte) json.RawMessage {
	t.Helper()
	s.count++
	ad := s.authData(s.rpID, flags, nil)
	cd := clientData("webauthn.get", challenge, origin)
	sum := sha256.Sum256(cd)
	digest := sha256.Sum256(append(append([]byte{}, ad...), sum[:]...))
	sig, err := ecdsa.SignASN1(rand.Reader, s.key, digest[:])
	if err != nil {
		t.Fatal(err)
	}
	resp := map[string]any{"clientDataJSON": b64(cd), "authenticatorData": b64(ad), "signature": b64(sig)}
	if s.handle != nil {
		resp["userHandle"] = b64(s.handle)
	}
	b, _ := json.Marshal(map[string]any{"id": b64(s.id), "rawId": b64(s.id), "type": "public-key", "clientExtensionResults": map[string]any{}, "response": resp})
	return b
}
