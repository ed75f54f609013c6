package stepup

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/go-webauthn/webauthn/protocol"

	"github.com/slackapprove/slackbot/agentrunner"
	"github.com/slackapprove/slackbot/approval"
	"github.com/slackapprove/slackbot/internal/webauthntest"
)

var payout = agentrunner.ToolCallPart{ToolName: "send_payout", ToolCallID: "call-1", Args: json.RawMessage(`{"amount":50000,"to":"acct-42"}`)}

// TestRegisterThenStepUpApproves drives the whole flow over HTTP: a
// passkey registered from its link, the step-up page showing the call and
// asking for exactly approval.StepUpChallenge(link) from that passkey, and
// the assertion completing the approval with a webauthn proof.
func TestRegisterThenStepUpApproves(t *testing.T) {
	hs := newHarness(t)
	key := hs.register("T1", "UALICE")

	keys, _ := hs.store.Passkeys(t.Context(), "T1", "UALICE")
	if len(keys) != 1 || keys[0].ID != webauthntest.B64(key.ID) || keys[0].Name != "laptop" {
		t.Fatalf("passkeys after registration = %+v", keys)
	}
	if ev := hs.store.events; len(ev) != 1 || ev[0].Type != EventAdded || ev[0].User != "UALICE" || ev[0].ID != webauthntest.B64(key.ID) {
		t.Errorf("audit after registration = %+v", ev)
	}
	if n := hs.notified(); len(n) != 1 || !strings.Contains(n[0], "T1/UALICE") || !strings.Contains(n[0], "laptop") {
		t.Errorf("notified %q; want the person told of the new passkey", n)
	}

	l := hs.ap.add("link-1", "T1", "UALICE", []string{MethodWebAuthn}, payout)
	w := hs.do(http.MethodGet, "/step-up/link-1", "", nil)
	page := w.Body.String()
	if w.Code != http.StatusOK {
		t.Fatalf("GET step-up page: %d %s", w.Code, page)
	}
	for _, want := range []string{"<h1>Approve send_payout?</h1>", "&#34;amount&#34;: 50000", "acct-42", "payments", "Approve with your passkey"} {
		if !strings.Contains(page, want) {
			t.Errorf("the step-up page lacks %q", want)
		}
	}
	if n := strings.Count(page, `class="primary"`); n != 1 {
		t.Errorf("the page has %d primary buttons; want 1", n)
	}
	opts := options[protocol.CredentialAssertion](t, page).Response
	if !bytes.Equal(opts.Challenge, approval.StepUpChallenge(l)) {
		t.Errorf("challenge %x; want StepUpChallenge(link) %x", []byte(opts.Challenge), approval.StepUpChallenge(l))
	}
	if len(opts.AllowedCredentials) != 1 || !bytes.Equal(opts.AllowedCredentials[0].CredentialID, key.ID) || opts.UserVerification != protocol.VerificationRequired || opts.RelyingPartyID != testHost {
		t.Errorf("assertion options = %+v; want alice's passkey, UV required, RP %s", opts, testHost)
	}

	code, a := hs.postJSON("/step-up/link-1", map[string]any{"credential": key.Get(t, opts.Challenge, testOrigin, webauthntest.FlagUP|webauthntest.FlagUV)})
	if code != http.StatusOK || !a.OK || !strings.HasPrefix(a.Message, "Approved.") {
		t.Fatalf("step-up: %d %+v", code, a)
	}
	recs := hs.ap.records()
	if len(recs) != 1 || recs[0].User != "UALICE" || recs[0].Proof.Method != "webauthn" || recs[0].Proof.CredentialID != webauthntest.B64(key.ID) ||
		len(recs[0].Proof.AMR) != 1 || recs[0].Proof.AMR[0] != "hwk" || !recs[0].Proof.At.Equal(hs.clock.Now()) {
		t.Errorf("recorded %+v; want alice's webauthn proof", recs)
	}
	keys, _ = hs.store.Passkeys(t.Context(), "T1", "UALICE")
	if keys[0].SignCount != 1 || !keys[0].LastUsed.Equal(hs.clock.Now()) {
		t.Errorf("passkey after use = %+v; want sign count 1, last used now", keys[0])
	}
}

// TestStepUpRefusals: each hostile or stale attempt is refused with a
// sentence that says so, and approval records nothing.
func TestStepUpRefusals(t *testing.T) {
	other := agentrunner.ToolCallPart{ToolName: "delete_customer", ToolCallID: "call-2", Args: json.RawMessage(`{"id":"c9"}`)}
	cases := []struct {
		name string
		// try returns the status and answer of the refused attempt.
		try        func(t *testing.T, hs *harness, alice *webauthntest.Key) (int, answer)
		wantStatus int
		want       string
		// done is how many completions are recorded (earlier legitimate ones).
		done int
	}{
		{"link used twice", func(t *testing.T, hs *harness, alice *webauthntest.Key) (int, answer) {
			ch := hs.challenge("A")
			if code, a := hs.postJSON("/step-up/A", map[string]any{"credential": alice.Get(t, ch, testOrigin, webauthntest.FlagUP|webauthntest.FlagUV)}); !a.OK {
				t.Fatalf("first use: %d %+v", code, a)
			}
			return hs.postJSON("/step-up/A", map[string]any{"credential": alice.Get(t, ch, testOrigin, webauthntest.FlagUP|webauthntest.FlagUV)})
		}, http.StatusNotFound, "already used", 1},
		{"replayed assertion", func(t *testing.T, hs *harness, alice *webauthntest.Key) (int, answer) {
			ch := hs.challenge("A")
			cred := alice.Get(t, ch, testOrigin, webauthntest.FlagUP|webauthntest.FlagUV)
			if _, a := hs.postJSON("/step-up/A", map[string]any{"credential": cred}); !a.OK {
				t.Fatalf("first use: %+v", a)
			}
			return hs.postJSON("/step-up/A", map[string]any{"credential": cred})
		}, http.StatusNotFound, "already used", 1},
		{"signature counter did not advance", func(t *testing.T, hs *harness, alice *webauthntest.Key) (int, answer) {
			if _, a := hs.postJSON("/step-up/A", map[string]any{"credential": alice.Get(t, hs.challenge("A"), testOrigin, webauthntest.FlagUP|webauthntest.FlagUV)}); !a.OK {
				t.Fatalf("first use: %+v", a)
			}
			alice.Count-- // a clone of the authenticator, one use behind
			return hs.postJSON("/step-up/B", map[string]any{"credential": alice.Get(t, hs.challenge("B"), testOrigin, webauthntest.FlagUP|webauthntest.FlagUV)})
		}, http.StatusForbidden, "counter did not advance", 1},
		{"another user's passkey", func(t *testing.T, hs *harness, _ *webauthntest.Key) (int, answer) {
			bob := hs.register("T1", "UBOB")
			return hs.postJSON("/step-up/A", map[string]any{"credential": bob.Get(t, hs.challenge("A"), testOrigin, webauthntest.FlagUP|webauthntest.FlagUV)})
		}, http.StatusForbidden, "not registered to the person this link was made for", 0},
		{"unregistered credential", func(t *testing.T, hs *harness, _ *webauthntest.Key) (int, answer) {
			stranger := webauthntest.New(t, testHost, userHandle("T1", "UALICE"))
			return hs.postJSON("/step-up/A", map[string]any{"credential": stranger.Get(t, hs.challenge("A"), testOrigin, webauthntest.FlagUP|webauthntest.FlagUV)})
		}, http.StatusForbidden, "not registered to the person", 0},
		{"removed credential", func(t *testing.T, hs *harness, alice *webauthntest.Key) (int, answer) {
			ch := hs.challenge("A")
			if err := hs.h.Remove(t.Context(), "T1", "UALICE", webauthntest.B64(alice.ID)); err != nil {
				t.Fatal(err)
			}
			return hs.postJSON("/step-up/A", map[string]any{"credential": alice.Get(t, ch, testOrigin, webauthntest.FlagUP|webauthntest.FlagUV)})
		}, http.StatusForbidden, "no passkey registered", 0},
		{"assertion for another link's challenge", func(t *testing.T, hs *harness, alice *webauthntest.Key) (int, answer) {
			return hs.postJSON("/step-up/A", map[string]any{"credential": alice.Get(t, hs.challenge("B"), testOrigin, webauthntest.FlagUP|webauthntest.FlagUV)})
		}, http.StatusForbidden, "could not be verified", 0},
		{"wrong origin", func(t *testing.T, hs *harness, alice *webauthntest.Key) (int, answer) {
			return hs.postJSON("/step-up/A", map[string]any{"credential": alice.Get(t, hs.challenge("A"), "https://evil.example", webauthntest.FlagUP|webauthntest.FlagUV)})
		}, http.StatusForbidden, "could not be verified", 0},
		{"wrong RP ID", func(t *testing.T, hs *harness, alice *webauthntest.Key) (int, answer) {
			alice.RPID = "evil.example"
			return hs.postJSON("/step-up/A", map[string]any{"credential": alice.Get(t, hs.challenge("A"), testOrigin, webauthntest.FlagUP|webauthntest.FlagUV)})
		}, http.StatusForbidden, "could not be verified", 0},
		{"no user verification", func(t *testing.T, hs *harness, alice *webauthntest.Key) (int, answer) {
			return hs.postJSON("/step-up/A", map[string]any{"credential": alice.Get(t, hs.challenge("A"), testOrigin, webauthntest.FlagUP)})
		}, http.StatusForbidden, "could not be verified", 0},
		{"after expiry", func(t *testing.T, hs *harness, alice *webauthntest.Key) (int, answer) {
			ch := hs.challenge("A")
			hs.clock.Advance(5 * time.Minute)
			return hs.postJSON("/step-up/A", map[string]any{"credential": alice.Get(t, ch, testOrigin, webauthntest.FlagUP|webauthntest.FlagUV)})
		}, http.StatusNotFound, "expired", 0},
		{"call decided elsewhere meanwhile", func(t *testing.T, hs *harness, alice *webauthntest.Key) (int, answer) {
			ch := hs.challenge("A")
			hs.ap.decideElsewhere("A")
			return hs.postJSON("/step-up/A", map[string]any{"credential": alice.Get(t, ch, testOrigin, webauthntest.FlagUP|webauthntest.FlagUV)})
		}, http.StatusConflict, "already denied by @U_OTHER", 0},
		{"malformed answer", func(t *testing.T, hs *harness, _ *webauthntest.Key) (int, answer) {
			return hs.postJSON("/step-up/A", map[string]any{"credential": map[string]any{"id": "x"}})
		}, http.StatusBadRequest, "could not be verified", 0},
		{"passkeys not accepted on the route", func(t *testing.T, hs *harness, alice *webauthntest.Key) (int, answer) {
			hs.ap.add("C", "T1", "UALICE", []string{MethodTOTP}, payout)
			return hs.postJSON("/step-up/C", map[string]any{"credential": alice.Get(t, approval.StepUpChallenge(hs.ap.links["C"]), testOrigin, webauthntest.FlagUP|webauthntest.FlagUV)})
		}, http.StatusForbidden, "does not accept passkeys", 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			hs := newHarness(t)
			alice := hs.register("T1", "UALICE")
			hs.ap.add("A", "T1", "UALICE", nil, payout)
			hs.ap.add("B", "T1", "UALICE", nil, other)
			code, a := c.try(t, hs, alice)
			if code != c.wantStatus || a.OK || !strings.Contains(a.Message, c.want) || !strings.Contains(a.Message, "Nothing changed") {
				t.Errorf("got %d %+v; want %d, a refusal saying %q and that nothing changed", code, a, c.wantStatus, c.want)
			}
			if got := len(hs.ap.records()); got != c.done {
				t.Errorf("%d completions recorded; want %d", got, c.done)
			}
		})
	}
}

// TestStepUpPageRefusals: a page that cannot be used says why, as a page.
func TestStepUpPageRefusals(t *testing.T) {
	hs := newHarness(t)
	hs.ap.add("nokey", "T1", "UCAROL", nil, payout)
	hs.register("T1", "UALICE")
	hs.ap.add("decided", "T1", "UALICE", nil, payout)
	hs.ap.decideElsewhere("decided")
	for _, c := range []struct {
		path   string
		status int
		want   string
	}{
		{"/step-up/unknown", http.StatusNotFound, "already used, has expired, or never existed"},
		{"/step-up/nokey", http.StatusForbidden, "You have no passkey registered"},
		{"/step-up/decided", http.StatusConflict, "already denied by @U_OTHER"},
		{"/passkeys/unknown", http.StatusNotFound, "already used, has expired, or never existed"},
	} {
		w := hs.do(http.MethodGet, c.path, "", nil)
		if w.Code != c.status || !strings.Contains(w.Body.String(), c.want) || !strings.Contains(w.Header().Get("Content-Type"), "text/html") {
			t.Errorf("GET %s: %d %q; want %d and a page saying %q", c.path, w.Code, w.Body, c.status, c.want)
		}
		if strings.Contains(w.Body.String(), "data-options") {
			t.Errorf("GET %s offers a ceremony on a refusal", c.path)
		}
	}
}

// TestOnlyOnPublicHost: the pages answer only on PUBLIC_URL's host, and a
// POST from another origin is refused before anything is read.
func TestOnlyOnPublicHost(t *testing.T) {
	hs := newHarness(t)
	hs.register("T1", "UALICE")
	hs.ap.add("A", "T1", "UALICE", nil, payout)
	for _, host := range []string{"evil.example", "slackbot.example.com.evil.example", "127.0.0.1"} {
		r := httptest.NewRequest(http.MethodGet, "http://"+host+"/step-up/A", nil)
		w := httptest.NewRecorder()
		hs.h.ServeHTTP(w, r)
		if w.Code != http.StatusMisdirectedRequest || !strings.Contains(w.Body.String(), "served only at "+testOrigin) || strings.Contains(w.Body.String(), "send_payout") {
			t.Errorf("GET on %s: %d %q; want 421 and no call shown", host, w.Code, w.Body)
		}
	}
	r := httptest.NewRequest(http.MethodPost, testOrigin+"/step-up/A", strings.NewReader(`{}`))
	r.Header.Set("Origin", "https://evil.example")
	w := httptest.NewRecorder()
	hs.h.ServeHTTP(w, r)
	if w.Code != http.StatusForbidden || !strings.Contains(w.Body.String(), "Nothing changed") {
		t.Errorf("cross-origin POST: %d %q; want 403", w.Code, w.Body)
	}
	if len(hs.ap.records()) != 0 {
		t.Error("something was recorded")
	}
}

var (
	srcHref     = regexp.MustCompile(`(?i)\b(?:src|href|action)="([^"]*)"`)
	scriptTag   = regexp.MustCompile(`(?is)<script\b[^>]*>`)
	inlineStyle = regexp.MustCompile(`(?i)\sstyle=|<style`)
	handlerAttr = regexp.MustCompile(`(?i)\son[a-z]+=`)
)

// TestSecurityHeadersAndOwnAssets: every page, a refusal too, carries the
// CSP and the other headers; the HTML loads only slackbot's own embedded
// script and style, with nothing inline.
func TestSecurityHeadersAndOwnAssets(t *testing.T) {
	hs := newHarness(t)
	hs.register("T1", "UALICE")
	hs.ap.add("A", "T1", "UALICE", []string{MethodWebAuthn, MethodTOTP}, payout)
	link, _, _ := hs.h.RegistrationLink(t.Context(), "T1", "UALICE")
	reg := strings.TrimPrefix(link, testOrigin)
	for _, path := range []string{"/step-up/A", reg, reg + "/totp", "/step-up/unknown", "/step-up/assets/stepup.js"} {
		w := hs.do(http.MethodGet, path, "", nil)
		h := w.Header()
		for k, want := range map[string]string{
			"Content-Security-Policy": "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self' data:; frame-ancestors 'none'; form-action 'self'; base-uri 'none'",
			"Cache-Control":           "no-store", "Referrer-Policy": "no-referrer", "X-Content-Type-Options": "nosniff", "X-Frame-Options": "DENY",
			"Strict-Transport-Security": "max-age=31536000",
		} {
			if got := h.Get(k); got != want {
				t.Errorf("GET %s: %s = %q; want %q", path, k, got, want)
			}
		}
		if !strings.Contains(h.Get("Content-Type"), "html") {
			continue
		}
		body := w.Body.String()
		for _, m := range srcHref.FindAllStringSubmatch(body, -1) {
			if !strings.HasPrefix(m[1], "/") || strings.HasPrefix(m[1], "//") {
				t.Errorf("GET %s: %q is not one of slackbot's own URLs", path, m[0])
			}
		}
		for _, tag := range scriptTag.FindAllString(body, -1) {
			if tag != `<script src="/step-up/assets/stepup.js">` {
				t.Errorf("GET %s: script %q; want only the embedded one", path, tag)
			}
		}
		if inlineStyle.MatchString(body) || handlerAttr.MatchString(body) {
			t.Errorf("GET %s: inline style or event handler in\n%s", path, body)
		}
	}
	for path, ctype := range map[string]string{"/step-up/assets/stepup.js": "javascript", "/step-up/assets/stepup.css": "text/css"} {
		w := hs.do(http.MethodGet, path, "", nil)
		if w.Code != http.StatusOK || !strings.Contains(w.Header().Get("Content-Type"), ctype) || w.Body.Len() < 100 {
			t.Errorf("GET %s: %d %s", path, w.Code, w.Header().Get("Content-Type"))
		}
	}
	if w := hs.do(http.MethodGet, "/step-up/assets/page.html", "", nil); w.Code != http.StatusNotFound {
		t.Errorf("the template is served: %d", w.Code)
	}
}
