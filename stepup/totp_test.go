package stepup

import (
	"crypto/sha1"
	"crypto/sha256"
	"crypto/sha512"
	"hash"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/slackapprove/slackbot/agentrunner"
)

// TestTOTPVectors checks hotp over time steps against RFC 6238 Appendix B
// (T0 = 0, X = 30 s, 8 digits), with each hash's seed.
func TestTOTPVectors(t *testing.T) {
	seeds := map[string]struct {
		h    func() hash.Hash
		seed string
	}{
		"SHA1":   {sha1.New, "12345678901234567890"},
		"SHA256": {sha256.New, "12345678901234567890123456789012"},
		"SHA512": {sha512.New, "1234567890123456789012345678901234567890123456789012345678901234"},
	}
	for _, v := range []struct {
		unix int64
		want map[string]string
	}{
		{59, map[string]string{"SHA1": "94287082", "SHA256": "46119246", "SHA512": "90693936"}},
		{1111111109, map[string]string{"SHA1": "07081804", "SHA256": "68084774", "SHA512": "25091201"}},
		{1111111111, map[string]string{"SHA1": "14050471", "SHA256": "67062674", "SHA512": "99943326"}},
		{1234567890, map[string]string{"SHA1": "89005924", "SHA256": "91819424", "SHA512": "93441116"}},
		{2000000000, map[string]string{"SHA1": "69279037", "SHA256": "90698825", "SHA512": "38618901"}},
		{20000000000, map[string]string{"SHA1": "65353130", "SHA256": "77737706", "SHA512": "47863826"}},
	} {
		for name, want := range v.want {
			s := seeds[name]
			if got := hotp(s.h, []byte(s.seed), uint64(stepOf(time.Unix(v.unix, 0))), 8); got != want {
				t.Errorf("TOTP %s at %d = %s; want %s", name, v.unix, got, want)
			}
		}
	}
	// The 6 digits slackbot uses are the vector's last six (RFC 4226 §5.3).
	if got := totpAt([]byte(seeds["SHA1"].seed), stepOf(time.Unix(59, 0))); got != "287082" {
		t.Errorf("6-digit TOTP at 59 = %s; want 287082", got)
	}
}

func TestMatchTOTPSkew(t *testing.T) {
	key := []byte("12345678901234567890")
	now := time.Unix(1111111111, 0)
	cur := stepOf(now)
	for _, c := range []struct {
		step int64
		ok   bool
	}{{cur, true}, {cur - 1, true}, {cur + 1, true}, {cur - 2, false}, {cur + 2, false}} {
		step, ok := matchTOTP(key, totpAt(key, c.step), now)
		if ok != c.ok || (ok && step != c.step) {
			t.Errorf("code of step %+d: %d, %v; want %v", c.step-cur, step, ok, c.ok)
		}
	}
	for _, bad := range []string{"", "12345", "1234567", "abcdef"} {
		if _, ok := matchTOTP(key, bad, now); ok {
			t.Errorf("code %q accepted", bad)
		}
	}
	if uri := otpauthURI("slackbot", "U1", key); uri != "otpauth://totp/slackbot:U1?algorithm=SHA1&digits=6&issuer=slackbot&period=30&secret=GEZDGNBVGY3TQOJQGEZDGNBVGY3TQOJQ" {
		t.Errorf("otpauth URI = %s", uri)
	}
}

// TestTOTPEnrolAndStepUp: an authenticator app set up from the
// registration link (confirmed with a code) approves on a route that
// allows one-time codes, each code once; a route that does not is
// refused.
func TestTOTPEnrolAndStepUp(t *testing.T) {
	hs := newHarness(t)
	link, _, err := hs.h.RegistrationLink(t.Context(), "T1", "UALICE")
	if err != nil {
		t.Fatal(err)
	}
	path := strings.TrimPrefix(link, testOrigin) + "/totp"
	page := hs.do(http.MethodGet, path, "", nil).Body.String()
	l, _ := hs.store.RegistrationLink(t.Context(), strings.TrimPrefix(link, testOrigin+"/passkeys/"))
	secret := pendingTOTP(*l)
	if !strings.Contains(page, totpSecretText(secret)) || !strings.Contains(page, "otpauth://totp/slackbot:UALICE") {
		t.Fatalf("the enrolment page does not show the key:\n%s", page)
	}
	if w := hs.postForm(path, url.Values{"code": {"000000"}}); w.Code != http.StatusForbidden || !strings.Contains(w.Body.String(), "Nothing changed") {
		t.Errorf("a wrong code: %d; want a refusal", w.Code)
	}
	if s, _, _ := hs.store.TOTP(t.Context(), "T1", "UALICE"); s != nil {
		t.Fatal("a wrong code stored the secret")
	}
	code := totpAt(secret, stepOf(hs.clock.Now()))
	if w := hs.postForm(path, url.Values{"code": {code}}); w.Code != http.StatusOK || !strings.Contains(w.Body.String(), "Authenticator app set up") {
		t.Fatalf("enrol: %d %s", w.Code, w.Body)
	}
	if w := hs.postForm(path, url.Values{"code": {code}}); w.Code != http.StatusNotFound {
		t.Errorf("the registration link used twice: %d; want 404", w.Code)
	}
	if ev := hs.store.events; len(ev) != 1 || ev[0].Method != MethodTOTP || ev[0].Type != EventAdded {
		t.Errorf("audit = %+v", ev)
	}

	hs.ap.add("passkey-only", "T1", "UALICE", []string{MethodWebAuthn}, payout)
	hs.clock.Advance(totpStep)
	code = totpAt(secret, stepOf(hs.clock.Now()))
	if w := hs.postForm("/step-up/passkey-only/totp", url.Values{"code": {code}}); w.Code != http.StatusForbidden || !strings.Contains(w.Body.String(), "does not accept one-time codes") {
		t.Errorf("a code on a passkey-only route: %d %s", w.Code, w.Body)
	}
	hs.ap.add("A", "T1", "UALICE", []string{MethodWebAuthn, MethodTOTP}, payout)
	if page := hs.do(http.MethodGet, "/step-up/A", "", nil).Body.String(); !strings.Contains(page, `action="/step-up/A/totp"`) {
		t.Errorf("the step-up page offers no code:\n%s", page)
	}
	if w := hs.postForm("/step-up/A/totp", url.Values{"code": {code}}); w.Code != http.StatusOK || !strings.Contains(w.Body.String(), "one-time code confirmed") {
		t.Fatalf("step-up with a code: %d %s", w.Code, w.Body)
	}
	recs := hs.ap.records()
	if len(recs) != 1 || recs[0].Proof.Method != MethodTOTP || recs[0].Proof.CredentialID != "totp" || recs[0].Proof.AMR[0] != "otp" {
		t.Errorf("recorded %+v; want a totp proof", recs)
	}
	// The same code again, on another link, within its step: refused.
	hs.ap.add("B", "T1", "UALICE", []string{MethodTOTP}, agentrunner.ToolCallPart{ToolName: "x", ToolCallID: "c2", Args: []byte(`{}`)})
	if w := hs.postForm("/step-up/B/totp", url.Values{"code": {code}}); w.Code != http.StatusForbidden || !strings.Contains(w.Body.String(), "used already") {
		t.Errorf("a code reused: %d %s", w.Code, w.Body)
	}
	if len(hs.ap.records()) != 1 {
		t.Error("a reused code recorded an approval")
	}
}
