package stepup

import (
	"encoding/json"
	"html"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/go-webauthn/webauthn/protocol"

	"github.com/slackapprove/slackbot/agentrunner"
	"github.com/slackapprove/slackbot/internal/webauthntest"
)

var assertAttr = regexp.MustCompile(`data-assert="([^"]*)"`)

// assertChallenge is the challenge of the assertion a registration page
// asks of an existing passkey; nil when it asks for none.
func assertChallenge(t *testing.T, page string) []byte {
	t.Helper()
	m := assertAttr.FindStringSubmatch(page)
	if m == nil {
		return nil
	}
	var v protocol.CredentialAssertion
	if err := json.Unmarshal([]byte(html.UnescapeString(m[1])), &v); err != nil {
		t.Fatalf("the page's assertion options: %v", err)
	}
	return v.Response.Challenge
}

// newRegistration opens a fresh registration link's page for UALICE: its
// path, the creation challenge and the assertion challenge (nil: none
// asked).
func newRegistration(t *testing.T, hs *harness) (string, []byte, []byte) {
	t.Helper()
	link, _, err := hs.h.RegistrationLink(t.Context(), "T1", "UALICE")
	if err != nil {
		t.Fatal(err)
	}
	path := strings.TrimPrefix(link, testOrigin)
	w := hs.do(http.MethodGet, path, "", nil)
	if w.Code != http.StatusOK {
		t.Fatalf("GET %s: %d %s", path, w.Code, w.Body)
	}
	page := w.Body.String()
	return path, options[protocol.CredentialCreation](t, page).Response.Challenge, assertChallenge(t, page)
}

const uvFlags = webauthntest.FlagUP | webauthntest.FlagUV

// TestSecondPasskeyNeedsAnExistingOne: once Alice has a passkey, a
// registration link (from a stolen Slack session, say) adds no other
// without an assertion of hers over that link's challenge; with one it
// does.
func TestSecondPasskeyNeedsAnExistingOne(t *testing.T) {
	hs := newHarness(t)
	alice := hs.register("T1", "UALICE")
	path, ch, ach := newRegistration(t, hs)
	if ach == nil {
		t.Fatal("the registration page of a person with a passkey asks for no assertion")
	}
	attacker := webauthntest.New(t, testHost, userHandle("T1", "UALICE"))
	refusals := []struct {
		name string
		body map[string]any
	}{
		{"no assertion", map[string]any{"credential": attacker.Create(t, ch, testOrigin)}},
		{"the attacker's own key", map[string]any{"credential": attacker.Create(t, ch, testOrigin), "assertion": attacker.Get(t, ach, testOrigin, uvFlags)}},
		{"no user verification", map[string]any{"credential": attacker.Create(t, ch, testOrigin), "assertion": alice.Get(t, ach, testOrigin, webauthntest.FlagUP)}},
		{"another challenge", map[string]any{"credential": attacker.Create(t, ch, testOrigin), "assertion": alice.Get(t, ch, testOrigin, uvFlags)}},
	}
	for _, r := range refusals {
		code, a := hs.postJSON(path, r.body)
		if code != http.StatusForbidden || a.OK || !strings.Contains(a.Message, "Nothing changed") {
			t.Errorf("%s: %d %+v; want 403", r.name, code, a)
		}
	}
	if keys, _ := hs.store.Passkeys(t.Context(), "T1", "UALICE"); len(keys) != 1 {
		t.Fatalf("passkeys = %d; want Alice's one only", len(keys))
	}
	// An assertion replayed (its counter not advanced) is refused.
	stale := alice.Get(t, ach, testOrigin, uvFlags)
	second := webauthntest.New(t, testHost, userHandle("T1", "UALICE"))
	if code, a := hs.postJSON(path, map[string]any{"credential": second.Create(t, ch, testOrigin), "assertion": stale, "name": "phone"}); code != http.StatusOK || !a.OK {
		t.Fatalf("with Alice's assertion: %d %+v", code, a)
	}
	keys, _ := hs.store.Passkeys(t.Context(), "T1", "UALICE")
	if len(keys) != 2 || keys[1].ID != webauthntest.B64(second.ID) || keys[0].SignCount != alice.Count {
		t.Fatalf("passkeys = %d; want the second added and the first's counter moved", len(keys))
	}
	path, ch, _ = newRegistration(t, hs)
	third := webauthntest.New(t, testHost, userHandle("T1", "UALICE"))
	if code, a := hs.postJSON(path, map[string]any{"credential": third.Create(t, ch, testOrigin), "assertion": stale}); code != http.StatusForbidden || a.OK {
		t.Errorf("a replayed assertion: %d %+v; want 403", code, a)
	}
}

// TestTOTPOnlyPersonNeedsACodeToAdd: a person with only an authenticator
// app proves it with a current code before a passkey (or another app) is
// added.
func TestTOTPOnlyPersonNeedsACodeToAdd(t *testing.T) {
	hs := newHarness(t)
	old := []byte("12345678901234567890")
	_ = hs.store.SetTOTP(t.Context(), "T1", "UALICE", old, hs.clock.Now())
	path, ch, ach := newRegistration(t, hs)
	if ach != nil {
		t.Error("a person without a passkey is asked for an assertion")
	}
	k := webauthntest.New(t, testHost, userHandle("T1", "UALICE"))
	if code, a := hs.postJSON(path, map[string]any{"credential": k.Create(t, ch, testOrigin)}); code != http.StatusForbidden || a.OK {
		t.Errorf("no code: %d %+v; want 403", code, a)
	}
	if code, a := hs.postJSON(path, map[string]any{"credential": k.Create(t, ch, testOrigin), "code": "000000"}); code != http.StatusForbidden || a.OK {
		t.Errorf("a wrong code: %d %+v; want 403", code, a)
	}
	// Replacing the app needs the old app's code too.
	newSecret := pendingTOTP(*mustLink(t, hs, path))
	if w := hs.postForm(path+"/totp", url.Values{"code": {totpAt(newSecret, stepOf(hs.clock.Now()))}}); w.Code != http.StatusForbidden {
		t.Errorf("replacing the app without the old one's code: %d", w.Code)
	}
	if s, _, _ := hs.store.TOTP(t.Context(), "T1", "UALICE"); string(s) != string(old) {
		t.Fatal("the app was replaced without the old one's code")
	}
	if keys, _ := hs.store.Passkeys(t.Context(), "T1", "UALICE"); len(keys) != 0 {
		t.Fatalf("a passkey was added without the app's code")
	}
	good := totpAt(old, stepOf(hs.clock.Now()))
	if code, a := hs.postJSON(path, map[string]any{"credential": k.Create(t, ch, testOrigin), "code": good}); code != http.StatusOK || !a.OK {
		t.Fatalf("with the app's code: %d %+v", code, a)
	}
}

func mustLink(t *testing.T, hs *harness, path string) *RegistrationLink {
	t.Helper()
	l, _ := hs.store.RegistrationLink(t.Context(), strings.TrimPrefix(path, "/passkeys/"))
	if l == nil {
		t.Fatal("no registration link")
	}
	return l
}

// TestTOTPEnrolmentNeedsAnExistingPasskey: a person with a passkey sets
// up an app only with an assertion of it.
func TestTOTPEnrolmentNeedsAnExistingPasskey(t *testing.T) {
	hs := newHarness(t)
	alice := hs.register("T1", "UALICE")
	path, _, _ := newRegistration(t, hs)
	page := hs.do(http.MethodGet, path+"/totp", "", nil).Body.String()
	secret := pendingTOTP(*mustLink(t, hs, path))
	code := totpAt(secret, stepOf(hs.clock.Now()))
	if w := hs.postForm(path+"/totp", url.Values{"code": {code}}); w.Code != http.StatusForbidden {
		t.Errorf("an app set up without a passkey's assertion: %d", w.Code)
	}
	if s, _, _ := hs.store.TOTP(t.Context(), "T1", "UALICE"); s != nil {
		t.Fatal("the app was set up without the passkey")
	}
	ach := assertChallenge(t, page)
	if ach == nil {
		t.Fatalf("the app's page asks for no assertion:\n%s", page)
	}
	if c, a := hs.postJSON(path+"/totp", map[string]any{"assertion": alice.Get(t, ach, testOrigin, uvFlags), "code": code}); c != http.StatusOK || !a.OK {
		t.Fatalf("with the passkey: %d %+v", c, a)
	}
	if s, _, _ := hs.store.TOTP(t.Context(), "T1", "UALICE"); string(s) != string(secret) {
		t.Fatal("the app was not set up")
	}
}

// TestSamePasskeyTwiceIsRefused: registering a credential id the person
// already has is refused (409), and the stored one is kept as it was.
func TestSamePasskeyTwiceIsRefused(t *testing.T) {
	hs := newHarness(t)
	alice := hs.register("T1", "UALICE")
	path, ch, ach := newRegistration(t, hs)
	body := map[string]any{"credential": alice.Create(t, ch, testOrigin), "name": "replaced"}
	if ach != nil {
		body["assertion"] = alice.Get(t, ach, testOrigin, uvFlags)
	}
	code, a := hs.postJSON(path, body)
	if code != http.StatusConflict || a.OK || !strings.Contains(a.Message, "already registered") {
		t.Errorf("the same passkey again: %d %+v; want 409", code, a)
	}
	if keys, _ := hs.store.Passkeys(t.Context(), "T1", "UALICE"); len(keys) != 1 || keys[0].Name != "laptop" {
		t.Errorf("passkeys = %d (first named %q); want the first kept", len(keys), keys[0].Name)
	}
}

// TestTOTPGuessesBurnTheLinkAndThePerson: three wrong codes burn a
// step-up link; ten in an hour refuse codes for the person until the hour
// passes, audited; nothing is recorded meanwhile.
func TestTOTPGuessesBurnTheLinkAndThePerson(t *testing.T) {
	hs := newHarness(t)
	secret := []byte("12345678901234567890")
	_ = hs.store.SetTOTP(t.Context(), "T1", "UALICE", secret, hs.clock.Now())
	wrong := func() string {
		c := totpAt(secret, stepOf(hs.clock.Now()))
		return map[bool]string{true: "111111", false: "000000"}[c == "000000"]
	}
	hs.ap.add("L1", "T1", "UALICE", []string{MethodTOTP}, payout)
	for range maxLinkTOTPFailures {
		if w := hs.postForm("/step-up/L1/totp", url.Values{"code": {wrong()}}); w.Code != http.StatusForbidden {
			t.Fatalf("a wrong code: %d", w.Code)
		}
	}
	w := hs.postForm("/step-up/L1/totp", url.Values{"code": {totpAt(secret, stepOf(hs.clock.Now()))}})
	if w.Code == http.StatusOK || !strings.Contains(w.Body.String(), "Nothing changed") || len(hs.ap.records()) != 0 {
		t.Fatalf("the right code after three wrong ones: %d %s; want the link burned", w.Code, w.Body)
	}
	// Across links: the person's limit.
	n := maxLinkTOTPFailures
	for i := 0; n < maxPersonTOTPFailures; i++ {
		id := "M" + string(rune('a'+i))
		hs.ap.add(id, "T1", "UALICE", []string{MethodTOTP}, payout)
		for j := 0; j < 2 && n < maxPersonTOTPFailures; j++ {
			hs.postForm("/step-up/"+id+"/totp", url.Values{"code": {wrong()}})
			n++
		}
	}
	hs.ap.add("Z", "T1", "UALICE", []string{MethodTOTP}, payout)
	w = hs.postForm("/step-up/Z/totp", url.Values{"code": {totpAt(secret, stepOf(hs.clock.Now()))}})
	if w.Code != http.StatusTooManyRequests || !strings.Contains(w.Body.String(), "Nothing changed") || len(hs.ap.records()) != 0 {
		t.Fatalf("the right code after %d wrong ones: %d %s; want 429", n, w.Code, w.Body)
	}
	locked := 0
	for _, e := range hs.store.events {
		if e.Type == EventTOTPLocked && e.User == "UALICE" {
			locked++
		}
	}
	if locked != 1 {
		t.Errorf("audit = %+v; want one totp lock", hs.store.events)
	}
	hs.clock.Advance(totpFailureWindow)
	hs.ap.add("Z2", "T1", "UALICE", []string{MethodTOTP}, payout)
	if w := hs.postForm("/step-up/Z2/totp", url.Values{"code": {totpAt(secret, stepOf(hs.clock.Now()))}}); w.Code != http.StatusOK {
		t.Errorf("after the window: %d %s", w.Code, w.Body)
	}
}

// TestEnrolmentGuessesBurnTheLink: wrong codes on an app's enrolment
// count too.
func TestEnrolmentGuessesBurnTheLink(t *testing.T) {
	hs := newHarness(t)
	path, _, _ := newRegistration(t, hs)
	secret := pendingTOTP(*mustLink(t, hs, path))
	for range maxLinkTOTPFailures {
		hs.postForm(path+"/totp", url.Values{"code": {"abcdef"}})
	}
	if w := hs.postForm(path+"/totp", url.Values{"code": {totpAt(secret, stepOf(hs.clock.Now()))}}); w.Code == http.StatusOK {
		t.Fatalf("enrolment after three wrong codes: %d", w.Code)
	}
}

// TestFirstPasskeyWaitsAfterARemoval: removing is a click in Slack, so a
// stolen Slack session could remove Alice's only passkey and add its own
// at once. After a removal, a first credential waits RecoveryDelay: the
// page says until when, nothing is stored; afterwards it is added.
func TestFirstPasskeyWaitsAfterARemoval(t *testing.T) {
	hs := newHarness(t)
	link := removedAll(t, hs)
	path := strings.TrimPrefix(link, testOrigin)
	if w := hs.do(http.MethodGet, path, "", nil); w.Code != http.StatusForbidden || !strings.Contains(w.Body.String(), "can be added from") {
		t.Fatalf("the registration page right after the removal: %d %s; want it refused, saying until when", w.Code, w.Body)
	}
	// A script that skips the page is refused the same way.
	l, err := hs.store.RegistrationLink(t.Context(), strings.TrimPrefix(path, "/passkeys/"))
	if err != nil || l == nil {
		t.Fatalf("the registration link: %v, %v", l, err)
	}
	mallory := webauthntest.New(t, testHost, userHandle("T1", "UALICE"))
	if code, a := hs.postJSON(path, map[string]any{"credential": mallory.Create(t, derive("slackbot passkey registration v1", *l), testOrigin), "name": "mallory"}); code != http.StatusForbidden || a.OK || !strings.Contains(a.Message, "can be added from") {
		t.Errorf("a credential posted right after the removal: %d %+v; want 403", code, a)
	}
	if keys, _ := hs.store.Passkeys(t.Context(), "T1", "UALICE"); len(keys) != 0 {
		t.Errorf("passkeys after the refused registration: %d; want none", len(keys))
	}
	hs.clock.Advance(RecoveryDelay + time.Minute)
	hs.register("T1", "UALICE")
}

// TestPageRevealsInvisibleCharacters: the step-up page shows a call as
// the card does, with characters that are invisible or reorder text
// (here a right-to-left override that would make "gro.evil" read
// "live.org") written as \uXXXX, in the tool's name and its arguments.
func TestPageRevealsInvisibleCharacters(t *testing.T) {
	hs := newHarness(t)
	hs.register("T1", "UALICE")
	hostile := agentrunner.ToolCallPart{ToolName: "send_payout\u200b", ToolCallID: "call-9",
		Args: json.RawMessage("{\"amount\":50000,\"to\":\"acct-42 \u202egro.evil\"}")}
	hs.ap.add("LH", "T1", "UALICE", []string{MethodWebAuthn}, hostile)
	w := hs.do(http.MethodGet, "/step-up/LH", "", nil)
	body := w.Body.String()
	if w.Code != http.StatusOK || strings.ContainsRune(body, '\u202e') || strings.ContainsRune(body, '\u200b') {
		t.Fatalf("the page: %d, with the raw override or zero-width space in it", w.Code)
	}
	if !strings.Contains(body, `\u202egro.evil`) || !strings.Contains(body, `send_payout\u200b`) {
		t.Errorf("the page does not show the hidden characters as \\uXXXX:\n%s", body)
	}
}

// TestFirstAppWaitsAfterARemoval: the authenticator app's set-up page
// refuses a first credential after a removal too, as its POST does.
func TestFirstAppWaitsAfterARemoval(t *testing.T) {
	hs := newHarness(t)
	link := removedAll(t, hs)
	path := strings.TrimPrefix(link, testOrigin) + "/totp"
	if w := hs.do(http.MethodGet, path, "", nil); w.Code != http.StatusForbidden || !strings.Contains(w.Body.String(), "can be added from") {
		t.Fatalf("the app's set-up page right after the removal: %d; want it refused, saying until when", w.Code)
	}
	hs.clock.Advance(RecoveryDelay + time.Minute)
	link, _, err := hs.h.RegistrationLink(t.Context(), "T1", "UALICE")
	if err != nil {
		t.Fatal(err)
	}
	if w := hs.do(http.MethodGet, strings.TrimPrefix(link, testOrigin)+"/totp", "", nil); w.Code != http.StatusOK {
		t.Errorf("the app's set-up page a day later: %d; want it shown", w.Code)
	}
}

// removedAll registers Alice's passkey, removes it as App Home does, and
// returns a registration link she asks for right after.
func removedAll(t *testing.T, hs *harness) string {
	t.Helper()
	hs.register("T1", "UALICE")
	keys, _ := hs.store.Passkeys(t.Context(), "T1", "UALICE")
	if err := hs.h.Remove(t.Context(), "T1", "UALICE", keys[0].ID); err != nil {
		t.Fatal(err)
	}
	link, _, err := hs.h.RegistrationLink(t.Context(), "T1", "UALICE")
	if err != nil {
		t.Fatal(err)
	}
	return link
}
