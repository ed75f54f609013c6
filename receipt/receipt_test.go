package receipt_test

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/slackapprove/slackbot/receipt"
)

var (
	seedA = strings.Repeat("a", 32)
	seedB = strings.Repeat("b", 32)
	t0    = time.Unix(1_800_000_000, 0)
)

func key(t testing.TB, seed string) *receipt.Key {
	t.Helper()
	k, err := receipt.NewKey([]byte(seed))
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func signer(t testing.TB, k *receipt.Key) *receipt.Signer {
	t.Helper()
	s, err := receipt.NewSigner(k, "https://slackbot.example.com", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

const refundArgs = `{"amount": 250, "customer": "cus_42", "note": "dup charge ✓"}`

func claims(t testing.TB, args string) receipt.Claims {
	t.Helper()
	digest, err := receipt.ArgsSHA256([]byte(args))
	if err != nil {
		t.Fatal(err)
	}
	return receipt.Claims{
		CallID: "call_1", Tool: "issue_refund", ArgsSHA256: digest, By: []string{"U0ALICE"},
		Route: "refunds", TokenSHA256: receipt.TokenSHA256("tok_secret"), IssuedAt: t0.Unix(),
	}
}

func expect(args string) receipt.Expect {
	return receipt.Expect{CallID: "call_1", Tool: "issue_refund", Args: json.RawMessage(args), Token: "tok_secret", Now: t0.Add(time.Minute)}
}

func TestSignVerify(t *testing.T) {
	k := key(t, seedA)
	jws, err := signer(t, k).Sign(claims(t, refundArgs))
	if err != nil {
		t.Fatal(err)
	}
	got, err := receipt.NewKeySet(k).Verify(jws, expect(refundArgs))
	if err != nil {
		t.Fatalf("Verify: %v", err)
	}
	if got.Issuer != "https://slackbot.example.com" || got.ExpiresAt != t0.Add(time.Hour).Unix() || got.By[0] != "U0ALICE" || got.Route != "refunds" {
		t.Errorf("claims = %+v", got)
	}
	// The same arguments written another way (key order, spacing, number
	// forms, escapes) are the same arguments.
	same := `{"note":"dup charge \u2713","customer":"cus_42","amount":2.5e2}`
	if _, err := receipt.NewKeySet(k).Verify(jws, expect(same)); err != nil {
		t.Errorf("Verify with %s: %v", same, err)
	}
	// The header names the algorithm, the key and the type.
	header, _, _ := strings.Cut(jws, ".")
	raw, _ := base64.RawURLEncoding.DecodeString(header)
	var h map[string]string
	if err := json.Unmarshal(raw, &h); err != nil {
		t.Fatal(err)
	}
	if h["alg"] != "EdDSA" || h["kid"] != k.ID() || h["typ"] != receipt.Type {
		t.Errorf("header = %v", h)
	}
}

// forge returns a compact JWS with the given header and payload and
// signature parts.
func forge(header, payload any, sig string) string {
	enc := func(v any) string {
		b, _ := json.Marshal(v)
		return base64.RawURLEncoding.EncodeToString(b)
	}
	return enc(header) + "." + enc(payload) + "." + sig
}

// hs256 returns payload signed with HS256, the public key as the secret:
// the classic confusion of a verifier that lets the token pick its
// algorithm.
func hs256(k *receipt.Key, payload []byte) string {
	head, _ := json.Marshal(map[string]string{"alg": "HS256", "kid": k.ID(), "typ": receipt.Type})
	input := base64.RawURLEncoding.EncodeToString(head) + "." + base64.RawURLEncoding.EncodeToString(payload)
	mac := hmac.New(sha256.New, k.Public())
	mac.Write([]byte(input))
	return input + "." + base64.RawURLEncoding.EncodeToString(mac.Sum(nil))
}

func TestVerifyRefuses(t *testing.T) {
	k, other := key(t, seedA), key(t, seedB)
	s := signer(t, k)
	good, err := s.Sign(claims(t, refundArgs))
	if err != nil {
		t.Fatal(err)
	}
	parts := strings.Split(good, ".")
	var payload map[string]any
	raw, _ := base64.RawURLEncoding.DecodeString(parts[1])
	_ = json.Unmarshal(raw, &payload)

	tampered := map[string]any{}
	for k, v := range payload {
		tampered[k] = v
	}
	tampered["by"] = []string{"U0MALLORY"}
	otherCall := claims(t, refundArgs)
	otherCall.CallID = "call_2"
	forOtherCall, _ := s.Sign(otherCall)
	byOtherKey, _ := signer(t, other).Sign(claims(t, refundArgs))
	expired := claims(t, refundArgs)
	expired.IssuedAt = t0.Add(-3 * time.Hour).Unix()
	expiredJWS, _ := s.Sign(expired)
	future := claims(t, refundArgs)
	future.IssuedAt = t0.Add(time.Hour).Unix()
	futureJWS, _ := s.Sign(future)

	hs256 := hs256(k, raw)

	tests := []struct {
		name string
		jws  string
		want receipt.Expect
		err  error
	}{
		{"missing", "", expect(refundArgs), receipt.ErrMissing},
		{"garbage", "not.a.jws", expect(refundArgs), receipt.ErrMalformed},
		{"tampered payload", parts[0] + "." + strings.Split(forge(nil, tampered, ""), ".")[1] + "." + parts[2], expect(refundArgs), receipt.ErrSignature},
		{"swapped signature", parts[0] + "." + parts[1] + "." + strings.Split(forOtherCall, ".")[2], expect(refundArgs), receipt.ErrSignature},
		{"another call's receipt", forOtherCall, expect(refundArgs), receipt.ErrMismatch},
		{"other tool", good, receipt.Expect{CallID: "call_1", Tool: "delete_file", Args: json.RawMessage(refundArgs), Now: t0}, receipt.ErrMismatch},
		{"other arguments", good, expect(`{"amount": 251, "customer": "cus_42", "note": "dup charge ✓"}`), receipt.ErrMismatch},
		{"one more argument", good, expect(`{"amount": 250, "customer": "cus_42", "note": "dup charge ✓", "x": null}`), receipt.ErrMismatch},
		{"one byte of a string", good, expect(`{"amount": 250, "customer": "cus_43", "note": "dup charge ✓"}`), receipt.ErrMismatch},
		{"other request", good, receipt.Expect{CallID: "call_1", Tool: "issue_refund", Args: json.RawMessage(refundArgs), Token: "tok_other", Now: t0}, receipt.ErrMismatch},
		{"other issuer", good, receipt.Expect{CallID: "call_1", Tool: "issue_refund", Args: json.RawMessage(refundArgs), Issuer: "https://evil.example", Now: t0}, receipt.ErrMismatch},
		{"unknown kid", byOtherKey, expect(refundArgs), receipt.ErrUnknownKey},
		{"alg none", forge(map[string]string{"alg": "none", "kid": k.ID(), "typ": receipt.Type}, payload, ""), expect(refundArgs), receipt.ErrMalformed},
		{"HS256 with the public key as secret", hs256, expect(refundArgs), receipt.ErrMalformed},
		{"another typ", forge(map[string]string{"alg": "EdDSA", "kid": k.ID(), "typ": "JWT"}, payload, parts[2]), expect(refundArgs), receipt.ErrMalformed},
		{"expired", expiredJWS, expect(refundArgs), receipt.ErrExpired},
		{"issued in the future", futureJWS, expect(refundArgs), receipt.ErrMalformed},
		{"huge", strings.Repeat("a", receipt.MaxReceiptBytes+1), expect(refundArgs), receipt.ErrMalformed},
	}
	ks := receipt.NewKeySet(k)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ks.Verify(tt.jws, tt.want)
			if !errors.Is(err, tt.err) {
				t.Fatalf("Verify = %+v, %v; want %v", got, err, tt.err)
			}
		})
	}
	// Past the TTL by less than the allowed skew still holds; past it by
	// more does not.
	at := expect(refundArgs)
	at.Now = t0.Add(time.Hour + receipt.Skew/2)
	if _, err := ks.Verify(good, at); err != nil {
		t.Errorf("within the skew: %v", err)
	}
	at.Now = t0.Add(time.Hour + 2*receipt.Skew)
	if _, err := ks.Verify(good, at); !errors.Is(err, receipt.ErrExpired) {
		t.Errorf("past the skew: %v, want ErrExpired", err)
	}
}

func TestRotation(t *testing.T) {
	old, cur := key(t, seedA), key(t, seedB)
	byOld, _ := signer(t, old).Sign(claims(t, refundArgs))
	byCur, _ := signer(t, cur).Sign(claims(t, refundArgs))
	ks := receipt.NewKeySet(cur, old, nil, cur)
	if got := ks.IDs(); len(got) != 2 || got[0] != cur.ID() || got[1] != old.ID() {
		t.Fatalf("IDs = %v, want [%s %s]", got, cur.ID(), old.ID())
	}
	for name, jws := range map[string]string{"previous key": byOld, "current key": byCur} {
		if _, err := ks.Verify(jws, expect(refundArgs)); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
	if _, err := receipt.NewKeySet(cur).Verify(byOld, expect(refundArgs)); !errors.Is(err, receipt.ErrUnknownKey) {
		t.Errorf("retired key: %v, want ErrUnknownKey", err)
	}
}

func TestJWKS(t *testing.T) {
	old, cur := key(t, seedA), key(t, seedB)
	ks := receipt.NewKeySet(cur, old)
	srv := httptest.NewServer(ks.Handler(300))
	defer srv.Close()
	resp, err := http.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if cc := resp.Header.Get("Cache-Control"); cc != "public, max-age=300" {
		t.Errorf("Cache-Control = %q", cc)
	}
	if ct := resp.Header.Get("Content-Type"); ct != "application/jwk-set+json" {
		t.Errorf("Content-Type = %q", ct)
	}
	etag := resp.Header.Get("ETag")
	req, _ := http.NewRequest(http.MethodGet, srv.URL, nil)
	req.Header.Set("If-None-Match", `"other", W/`+etag)
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotModified {
		t.Errorf("If-None-Match %s: %s, want 304", etag, resp.Status)
	}

	got, err := receipt.Fetch(t.Context(), srv.Client(), srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	if ids := got.IDs(); len(ids) != 2 || ids[0] != cur.ID() || ids[1] != old.ID() {
		t.Errorf("fetched %v", ids)
	}
	var doc struct {
		Keys []map[string]string `json:"keys"`
	}
	if err := json.Unmarshal(ks.JWKS(), &doc); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"kty": "OKP", "crv": "Ed25519", "alg": "EdDSA", "use": "sig", "kid": cur.ID(),
		"x": base64.RawURLEncoding.EncodeToString(cur.Public())}
	for f, v := range want {
		if doc.Keys[0][f] != v {
			t.Errorf("key[0].%s = %q, want %q", f, doc.Keys[0][f], v)
		}
	}
	if _, private := doc.Keys[0]["d"]; private {
		t.Error("the JWKS holds the private key")
	}

	wrongKid := strings.Replace(string(ks.JWKS()), cur.ID(), "chosen-by-attacker", 1)
	if _, err := receipt.ParseJWKS([]byte(wrongKid)); err == nil {
		t.Error("ParseJWKS took a kid that is not the key's thumbprint")
	}
	if _, err := receipt.ParseJWKS([]byte(`{"keys":[]}`)); err == nil {
		t.Error("ParseJWKS took an empty set")
	}
}

func TestParseSeed(t *testing.T) {
	seed := []byte(seedA + "")
	want := key(t, seedA).ID()
	for _, s := range []string{
		base64.StdEncoding.EncodeToString(seed),
		base64.RawStdEncoding.EncodeToString(seed),
		base64.URLEncoding.EncodeToString(seed) + "\n",
	} {
		k, err := receipt.ParseSeed(s)
		if err != nil || k.ID() != want {
			t.Errorf("ParseSeed(%q) = %v, %v", s, k, err)
		}
	}
	for _, s := range []string{"", "!!!", base64.StdEncoding.EncodeToString(seed[:31]), base64.StdEncoding.EncodeToString(append(seed, 0))} {
		if _, err := receipt.ParseSeed(s); err == nil {
			t.Errorf("ParseSeed(%q) took it", s)
		} else if strings.Contains(err.Error(), s) && s != "" {
			t.Errorf("the error quotes the seed: %v", err)
		}
	}
}

// The signing key shows nowhere: not in %v, %+v, %#v, %s or JSON of the
// key, of a signer, or of anything holding them.
func TestKeyNeverShown(t *testing.T) {
	k := key(t, seedA)
	s := signer(t, k)
	secret := base64.StdEncoding.EncodeToString([]byte(seedA))
	holder := struct {
		K *receipt.Key
		S *receipt.Signer
	}{k, s}
	b, _ := json.Marshal(holder)
	for _, out := range []string{fmt.Sprint(k), fmt.Sprintf("%+v %#v %s", k, k, k), string(b)} {
		if strings.Contains(out, seedA) || strings.Contains(out, secret) || strings.Contains(out, string(k.Public())) {
			t.Errorf("the key shows in %q", out)
		}
	}
}

func TestArgsSHA256(t *testing.T) {
	a, err := receipt.ArgsSHA256([]byte(`{"b":[1,2.0,"x"],"a":{"z":null,"y":true}}`))
	if err != nil {
		t.Fatal(err)
	}
	// RFC 8785: {"a":{"y":true,"z":null},"b":[1,2,"x"]}
	sum := sha256.Sum256([]byte(`{"a":{"y":true,"z":null},"b":[1,2,"x"]}`))
	if want := base64.RawURLEncoding.EncodeToString(sum[:]); a != want {
		t.Errorf("ArgsSHA256 = %s, want %s", a, want)
	}
	if _, err := receipt.ArgsSHA256([]byte(`{"id": 12345678901234567891}`)); !errors.Is(err, receipt.ErrInexactNumber) {
		t.Errorf("an integer beyond 2^53: %v, want ErrInexactNumber", err)
	}
}

// cpuTime is this process's user + system CPU time so far: on a shared
// machine, CPU per operation is steadier than ns/op (wall time).
func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func reportCPU(b *testing.B, start time.Duration) {
	b.ReportMetric(float64((cpuTime()-start).Nanoseconds())/1e3/float64(b.N), "cpu-µs/op")
}

func BenchmarkSign(b *testing.B) {
	s := signer(b, key(b, seedA))
	c := claims(b, refundArgs)
	b.ReportAllocs()
	start := cpuTime()
	for i := 0; b.Loop(); i++ {
		c.IssuedAt = int64(i) // a new receipt each time: no memo
		if _, err := s.Sign(c); err != nil {
			b.Fatal(err)
		}
	}
	reportCPU(b, start)
}

func BenchmarkSignMemo(b *testing.B) {
	s := signer(b, key(b, seedA))
	c := claims(b, refundArgs)
	b.ReportAllocs()
	start := cpuTime()
	for b.Loop() {
		if _, err := s.Sign(c); err != nil {
			b.Fatal(err)
		}
	}
	reportCPU(b, start)
}

func BenchmarkVerify(b *testing.B) {
	k := key(b, seedA)
	jws, _ := signer(b, k).Sign(claims(b, refundArgs))
	ks := receipt.NewKeySet(k)
	want := expect(refundArgs)
	b.ReportAllocs()
	start := cpuTime()
	for b.Loop() {
		if _, err := ks.Verify(jws, want); err != nil {
			b.Fatal(err)
		}
	}
	reportCPU(b, start)
}

// Arguments that are not JSON are refused as such, not as holding an
// inexact number: the error the model or the tool sees says what is wrong.
func TestCanonicalRefusesNonJSONAsSuch(t *testing.T) {
	for _, in := range []string{`{"a":1}x`, `{"a":1`, `{"a":tru}`, `{"a":"x}`} {
		_, err := receipt.Canonical([]byte(in))
		if err == nil || errors.Is(err, receipt.ErrInexactNumber) {
			t.Errorf("Canonical(%s) = %v, want an error that is not ErrInexactNumber", in, err)
		}
	}
	if _, err := receipt.Canonical([]byte(`{"a":[1e400]}`)); !errors.Is(err, receipt.ErrInexactNumber) {
		t.Errorf("a number beyond a double: %v, want ErrInexactNumber", err)
	}
}

// TestRequireStepUp: a receipt carries the approvers' step-up (amr and
// credential ids); a verifier that requires step-up refuses one without,
// and one where an approver of a quorum has no credential, with an error
// that says so and is a mismatch.
func TestRequireStepUp(t *testing.T) {
	k := key(t, seedA)
	s, ks := signer(t, k), receipt.NewKeySet(k)
	stepped := claims(t, refundArgs)
	stepped.AMR, stepped.Cred = []string{"hwk"}, []string{"Y3JlZA"}
	jws, err := s.Sign(stepped)
	if err != nil {
		t.Fatal(err)
	}
	want := expect(refundArgs)
	want.RequireStepUp = true
	got, err := ks.Verify(jws, want)
	if err != nil || len(got.AMR) != 1 || got.AMR[0] != "hwk" || len(got.Cred) != 1 || got.Cred[0] != "Y3JlZA" {
		t.Fatalf("a stepped-up receipt: %+v, %v; want amr [hwk], cred [Y3JlZA]", got, err)
	}
	click, _ := s.Sign(claims(t, refundArgs))
	if _, err := ks.Verify(click, expect(refundArgs)); err != nil {
		t.Errorf("a click's receipt without RequireStepUp: %v", err)
	}
	half := stepped
	half.By = []string{"U0ALICE", "U0BOB"}
	halfJWS, _ := s.Sign(half)
	for name, jws := range map[string]string{"a click": click, "a quorum with one credential": halfJWS} {
		_, err := ks.Verify(jws, want)
		if !errors.Is(err, receipt.ErrNoStepUp) || !errors.Is(err, receipt.ErrMismatch) || !strings.Contains(err.Error(), "without the passkey") {
			t.Errorf("%s, step-up required: %v; want ErrNoStepUp (a mismatch) saying so", name, err)
		}
	}

	// A tool that accepts only a passkey refuses a one-time code.
	passkeyOnly := expect(refundArgs)
	passkeyOnly.StepUpMethods = []string{"hwk"}
	if _, err := ks.Verify(jws, passkeyOnly); err != nil {
		t.Errorf("a passkey's receipt, passkey only: %v", err)
	}
	otp := stepped
	otp.AMR = []string{"otp"}
	otpJWS, _ := s.Sign(otp)
	for name, jws := range map[string]string{"a one-time code": otpJWS, "a click": click} {
		if _, err := ks.Verify(jws, passkeyOnly); !errors.Is(err, receipt.ErrNoStepUp) {
			t.Errorf("%s, passkey only: %v; want ErrNoStepUp", name, err)
		}
	}
}
