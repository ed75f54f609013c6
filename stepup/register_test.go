package stepup

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/go-webauthn/webauthn/protocol"

	"github.com/slackapprove/slackbot/internal/webauthntest"
)

// TestRegistrationRefusals: a registration link is single use, expires,
// and a credential made for another origin, RP or challenge, or without
// user verification, is not stored.
func TestRegistrationRefusals(t *testing.T) {
	cases := []struct {
		name   string
		try    func(t *testing.T, hs *harness, path string, ch []byte) (int, answer)
		status int
		want   string
	}{
		{"used twice", func(t *testing.T, hs *harness, path string, ch []byte) (int, answer) {
			k := webauthntest.New(t, testHost, userHandle("T1", "UALICE"))
			if _, a := hs.postJSON(path, map[string]any{"credential": k.Create(t, ch, testOrigin)}); !a.OK {
				t.Fatalf("first: %+v", a)
			}
			k2 := webauthntest.New(t, testHost, userHandle("T1", "UALICE"))
			return hs.postJSON(path, map[string]any{"credential": k2.Create(t, ch, testOrigin)})
		}, http.StatusNotFound, "already used"},
		{"expired", func(t *testing.T, hs *harness, path string, ch []byte) (int, answer) {
			hs.clock.Advance(RegistrationTTL)
			return hs.postJSON(path, map[string]any{"credential": webauthntest.New(t, testHost, nil).Create(t, ch, testOrigin)})
		}, http.StatusNotFound, "has expired"},
		{"wrong origin", func(t *testing.T, hs *harness, path string, ch []byte) (int, answer) {
			return hs.postJSON(path, map[string]any{"credential": webauthntest.New(t, testHost, nil).Create(t, ch, "https://evil.example")})
		}, http.StatusForbidden, "could not be registered"},
		{"wrong RP ID", func(t *testing.T, hs *harness, path string, ch []byte) (int, answer) {
			return hs.postJSON(path, map[string]any{"credential": webauthntest.New(t, "evil.example", nil).Create(t, ch, testOrigin)})
		}, http.StatusForbidden, "could not be registered"},
		{"another challenge", func(t *testing.T, hs *harness, path string, _ []byte) (int, answer) {
			return hs.postJSON(path, map[string]any{"credential": webauthntest.New(t, testHost, nil).Create(t, []byte("0123456789abcdef0123456789abcdef"), testOrigin)})
		}, http.StatusForbidden, "could not be registered"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			hs := newHarness(t)
			link, exp, err := hs.h.RegistrationLink(t.Context(), "T1", "UALICE")
			if err != nil || !exp.Equal(hs.clock.Now().Add(RegistrationTTL)) || !strings.HasPrefix(link, testOrigin+"/passkeys/") {
				t.Fatalf("RegistrationLink = %s, %v, %v", link, exp, err)
			}
			path := strings.TrimPrefix(link, testOrigin)
			ch := options[protocol.CredentialCreation](t, hs.do(http.MethodGet, path, "", nil).Body.String()).Response.Challenge
			before, _ := hs.store.Passkeys(t.Context(), "T1", "UALICE")
			code, a := c.try(t, hs, path, ch)
			if code != c.status || a.OK || !strings.Contains(a.Message, c.want) || !strings.Contains(a.Message, "Nothing changed") {
				t.Errorf("got %d %+v; want %d and a refusal saying %q", code, a, c.status, c.want)
			}
			after, _ := hs.store.Passkeys(t.Context(), "T1", "UALICE")
			if len(after) != len(before) && c.name != "used twice" || c.name == "used twice" && len(after) != 1 {
				t.Errorf("passkeys %d → %d", len(before), len(after))
			}
		})
	}
}

// TestRemoveAuditsAndNotifies: List shows passkeys (and a TOTP app);
// Remove forgets one, audits it, and tells the person.
func TestRemoveAuditsAndNotifies(t *testing.T) {
	hs := newHarness(t)
	key := hs.register("T1", "UALICE")
	_ = hs.store.SetTOTP(t.Context(), "T1", "UALICE", []byte("12345678901234567890"), time.Now())
	got, err := hs.h.List(t.Context(), "T1", "UALICE")
	if err != nil || len(got) != 2 || got[0].ID != webauthntest.B64(key.ID) || got[0].Method != MethodWebAuthn || got[1].ID != "totp" || got[1].Method != MethodTOTP {
		t.Fatalf("List = %+v, %v", got, err)
	}
	if err := hs.h.Remove(t.Context(), "T1", "UALICE", webauthntest.B64(key.ID)); err != nil {
		t.Fatal(err)
	}
	if err := hs.h.Remove(t.Context(), "T1", "UALICE", "totp"); err != nil {
		t.Fatal(err)
	}
	if got, _ := hs.h.List(t.Context(), "T1", "UALICE"); len(got) != 0 {
		t.Errorf("List after Remove = %+v", got)
	}
	ev := hs.store.events
	if len(ev) != 3 || ev[1].Type != EventRemoved || ev[1].ID != webauthntest.B64(key.ID) || ev[1].Name != "laptop" || ev[2].Method != MethodTOTP {
		t.Errorf("audit = %+v", ev)
	}
	notes := hs.notified()
	if len(notes) != 3 || !strings.Contains(notes[1], `"laptop" was removed`) {
		t.Errorf("notified %q", notes)
	}
	// Removing what is not there changes nothing and tells no one.
	if err := hs.h.Remove(t.Context(), "T1", "UALICE", "nothing"); err != nil || len(hs.store.events) != 3 || len(hs.notified()) != 3 {
		t.Errorf("Remove of nothing: %v, %d events", err, len(hs.store.events))
	}
}
