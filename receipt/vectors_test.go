package receipt_test

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"flag"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/slackapprove/slackbot/receipt"
)

var update = flag.Bool("update", false, "rewrite testdata/vectors.json")

// vectors is testdata/vectors.json: receipts and what each verifier must
// say of them. The Python and TypeScript clients' verifiers are tested
// against the same file, so the three agree on every case.
type vectors struct {
	Note  string          `json:"note"`
	JWKS  json.RawMessage `json:"jwks"`
	Cases []vectorCase    `json:"cases"`
}

type vectorCase struct {
	Name    string `json:"name"`
	Receipt string `json:"receipt"`
	Expect  struct {
		CallID string          `json:"call_id"`
		Tool   string          `json:"tool"`
		Args   json.RawMessage `json:"args"`
		Token  string          `json:"token,omitempty"`
		Now    int64           `json:"now"`
		// RequireStepUp is Expect.RequireStepUp (require_step_up=True in
		// Python, requireStepUp: true in TypeScript).
		RequireStepUp bool `json:"require_step_up,omitempty"`
	} `json:"expect"`
	// Error is "" for a receipt that verifies, else the error's kind:
	// missing, malformed, unknown_key, signature, mismatch, expired.
	Error string `json:"error"`
}

var kinds = map[string]error{
	"missing": receipt.ErrMissing, "malformed": receipt.ErrMalformed, "unknown_key": receipt.ErrUnknownKey,
	"signature": receipt.ErrSignature, "mismatch": receipt.ErrMismatch, "expired": receipt.ErrExpired,
}

func makeVectors(t *testing.T) vectors {
	cur, old, stranger := key(t, seedA), key(t, seedB), key(t, strings.Repeat("c", 32))
	s, sOld, sStranger := signer(t, cur), signer(t, old), signer(t, stranger)
	sign := func(s *receipt.Signer, c receipt.Claims) string {
		jws, err := s.Sign(c)
		if err != nil {
			t.Fatal(err)
		}
		return jws
	}
	good := sign(s, claims(t, refundArgs))
	parts := strings.Split(good, ".")
	payload, _ := base64.RawURLEncoding.DecodeString(parts[1])
	other := claims(t, refundArgs)
	other.CallID = "call_2"
	forOther := sign(s, other)
	expired := claims(t, refundArgs)
	expired.IssuedAt -= 3 * 3600
	edited := `{"amount": 100, "customer": "cus_42", "note": "dup charge ✓"}`
	nested := `{"path":"/tmp/x","opts":{"recursive":true,"depth":-0.5,"tags":["a","\u00e9","😀"]},"n":1e21,"e":[]}`

	var cases []vectorCase
	add := func(name, jws, args, token, errKind string, now int64) {
		c := vectorCase{Name: name, Receipt: jws, Error: errKind}
		c.Expect.CallID, c.Expect.Tool, c.Expect.Args, c.Expect.Token, c.Expect.Now = "call_1", "issue_refund", json.RawMessage(args), token, now
		cases = append(cases, c)
	}
	now := t0.Add(time.Minute).Unix()
	add("verifies", good, refundArgs, "tok_secret", "", now)
	add("the same arguments written another way", good, `{"note":"dup charge \u2713","customer":"cus_42","amount":2.5e2}`, "", "", now)
	add("signed by the previous key", sign(sOld, claims(t, refundArgs)), refundArgs, "", "", now)
	add("edited arguments", sign(s, claims(t, edited)), edited, "", "", now)
	add("edited arguments, the original ones given", sign(s, claims(t, edited)), refundArgs, "", "mismatch", now)
	add("nested arguments, unicode and exponents", sign(s, claims(t, nested)), nested, "", "", now)
	add("missing", "", refundArgs, "", "missing", now)
	add("tampered payload", parts[0]+"."+base64.RawURLEncoding.EncodeToString(bytes.Replace(payload, []byte("U0ALICE"), []byte("U0MALLO"), 1))+"."+parts[2], refundArgs, "", "signature", now)
	add("signature with unused bits set in its last character", parts[0]+"."+parts[1]+"."+lastBits(parts[2]), refundArgs, "", "malformed", now)
	add("swapped signature", parts[0]+"."+parts[1]+"."+strings.Split(forOther, ".")[2], refundArgs, "", "signature", now)
	add("another call's receipt", forOther, refundArgs, "", "mismatch", now)
	add("other arguments", good, `{"amount": 251, "customer": "cus_42", "note": "dup charge ✓"}`, "", "mismatch", now)
	add("another request", good, refundArgs, "tok_other", "mismatch", now)
	add("unknown kid", sign(sStranger, claims(t, refundArgs)), refundArgs, "", "unknown_key", now)
	add("alg none", forge(map[string]string{"alg": "none", "kid": cur.ID(), "typ": receipt.Type}, json.RawMessage(payload), ""), refundArgs, "", "malformed", now)
	add("HS256 with the public key as secret", hs256(cur, payload), refundArgs, "", "malformed", now)
	add("expired", sign(s, expired), refundArgs, "", "expired", now)
	otherTool := claims(t, refundArgs)
	otherTool.Tool = "delete_file"
	add("another tool's receipt", sign(s, otherTool), refundArgs, "", "mismatch", now)

	stepped := claims(t, refundArgs)
	stepped.AMR, stepped.Cred = []string{"hwk"}, []string{"Y3JlZC1hbGljZQ"}
	quorum := claims(t, refundArgs)
	quorum.By, quorum.AMR, quorum.Cred = []string{"U0ALICE", "U0BOB"}, []string{"hwk"}, []string{"Y3JlZC1hbGljZQ"}
	requireStepUp := func() { cases[len(cases)-1].Expect.RequireStepUp = true }
	add("stepped up with a passkey, step-up required", sign(s, stepped), refundArgs, "", "", now)
	requireStepUp()
	add("stepped up with a passkey, step-up not required", sign(s, stepped), refundArgs, "", "", now)
	add("a click alone, step-up required", good, refundArgs, "", "mismatch", now)
	requireStepUp()
	add("a quorum where one approver only clicked, step-up required", sign(s, quorum), refundArgs, "", "mismatch", now)
	requireStepUp()

	jwks := receipt.NewKeySet(cur, old).JWKS()
	return vectors{
		Note: "Receipts signed by receipt (Go) with fixed seeds; regenerate with go test ./receipt -run TestVectors -update. " +
			"Each verifier (Go, clients/python, clients/typescript) must accept the cases with error \"\" and refuse the others with that kind of error.",
		JWKS: jwks, Cases: cases,
	}
}

func TestVectors(t *testing.T) {
	const path = "testdata/vectors.json"
	v := makeVectors(t)
	if *update {
		b, _ := json.MarshalIndent(v, "", "  ")
		if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var file vectors
	if err := json.Unmarshal(b, &file); err != nil {
		t.Fatal(err)
	}
	if fresh, _ := json.Marshal(v); !bytes.Equal(mustCompact(t, b), fresh) {
		t.Errorf("%s is stale: go test ./receipt -run TestVectors -update", path)
	}
	ks, err := receipt.ParseJWKS(file.JWKS)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range file.Cases {
		_, err := ks.Verify(c.Receipt, receipt.Expect{CallID: c.Expect.CallID, Tool: c.Expect.Tool, Args: c.Expect.Args, Token: c.Expect.Token, Now: time.Unix(c.Expect.Now, 0), RequireStepUp: c.Expect.RequireStepUp})
		switch {
		case c.Error == "" && err != nil:
			t.Errorf("%s: %v, want it to verify", c.Name, err)
		case c.Error != "" && !errors.Is(err, kinds[c.Error]):
			t.Errorf("%s: %v, want %s", c.Name, err, c.Error)
		}
	}
}

func mustCompact(t *testing.T, b []byte) []byte {
	var out bytes.Buffer
	if err := json.Compact(&out, b); err != nil {
		t.Fatal(err)
	}
	return out.Bytes()
}

// lastBits returns part with the unused low bits of its last base64url
// character set: the same bytes to a lax decoder, another spelling.
func lastBits(part string) string {
	const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
	unused := map[int]int{2: 4, 3: 2}[len(part)%4] // bits the last character carries beyond the bytes
	last := strings.IndexByte(alphabet, part[len(part)-1])
	return part[:len(part)-1] + string(alphabet[last|(1<<unused-1)])
}
