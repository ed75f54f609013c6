package store_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/slackapprove/slackbot/store"
)

func TestPasskeysAddListRemove(t *testing.T) {
	e := newEnv(t)
	s, ctx := e.store(), t.Context()
	if got, err := s.Passkeys(ctx, "T1", "U1"); err != nil || len(got) != 0 {
		t.Fatalf("Passkeys of nobody = %v, %v; want none", got, err)
	}
	t0 := e.clock.Now()
	for i := range store.MaxPasskeys {
		p := store.StoredPasskey{ID: fmt.Sprintf("cred%d", i), Name: fmt.Sprintf("key %d", i), Credential: json.RawMessage(`{"id":"x"}`), SignCount: uint32(i), Added: t0.Add(time.Duration(i) * time.Second)}
		if err := s.AddPasskey(ctx, "T1", "U1", p); err != nil {
			t.Fatalf("AddPasskey %d: %v", i, err)
		}
	}
	err := s.AddPasskey(ctx, "T1", "U1", store.StoredPasskey{ID: "one-too-many", Added: t0})
	if !errors.Is(err, store.ErrPasskeyLimit) {
		t.Fatalf("AddPasskey past the limit = %v; want ErrPasskeyLimit", err)
	}
	// Registering an id again is refused as such, even at the limit.
	if err := s.AddPasskey(ctx, "T1", "U1", store.StoredPasskey{ID: "cred0", Name: "renamed", Credential: json.RawMessage(`{}`), Added: t0}); !errors.Is(err, store.ErrPasskeyExists) {
		t.Fatalf("AddPasskey again = %v; want ErrPasskeyExists", err)
	}
	got, err := s.Passkeys(ctx, "T1", "U1")
	if err != nil || len(got) != store.MaxPasskeys {
		t.Fatalf("Passkeys = %d, %v; want %d", len(got), err, store.MaxPasskeys)
	}
	if got[0].ID != "cred0" || got[0].Name != "key 0" || got[3].SignCount != 3 || !got[3].Added.Equal(t0.Add(3*time.Second)) {
		t.Errorf("Passkeys[0], [3] = %+v, %+v", got[0], got[3])
	}
	// Another person's are their own.
	if other, _ := s.Passkeys(ctx, "T1", "U2"); len(other) != 0 {
		t.Errorf("U2 has %d passkeys; want 0", len(other))
	}
	if ok, err := s.RemovePasskey(ctx, "T1", "U1", "cred1"); !ok || err != nil {
		t.Fatalf("RemovePasskey = %v, %v; want true", ok, err)
	}
	if ok, _ := s.RemovePasskey(ctx, "T1", "U1", "cred1"); ok {
		t.Error("RemovePasskey twice = true; want false")
	}
	if err := s.UsePasskey(ctx, "T1", "U1", "cred1", 9, t0); !errors.Is(err, store.ErrPasskeyGone) {
		t.Errorf("UsePasskey of a removed passkey = %v; want ErrPasskeyGone", err)
	}
	if ttl := e.rdb.PTTL(ctx, e.prefix+"pk:T1:U1").Val(); ttl <= 0 {
		t.Errorf("the passkeys' key has TTL %v; want one", ttl)
	}
}

func TestUsePasskeySignCount(t *testing.T) {
	e := newEnv(t)
	s, ctx := e.store(), t.Context()
	t0 := e.clock.Now()
	for _, id := range []string{"counted", "zero"} {
		if err := s.AddPasskey(ctx, "T1", "U1", store.StoredPasskey{ID: id, Credential: json.RawMessage(`{}`), Added: t0}); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.UsePasskey(ctx, "T1", "U1", "counted", 5, t0.Add(time.Minute)); err != nil {
		t.Fatalf("UsePasskey 5: %v", err)
	}
	for _, n := range []uint32{5, 4, 0} {
		if err := s.UsePasskey(ctx, "T1", "U1", "counted", n, t0); !errors.Is(err, store.ErrSignCount) {
			t.Errorf("UsePasskey %d after 5 = %v; want ErrSignCount", n, err)
		}
	}
	// An authenticator that keeps no counter (always 0) is not refused.
	for range 2 {
		if err := s.UsePasskey(ctx, "T1", "U1", "zero", 0, t0); err != nil {
			t.Errorf("UsePasskey 0, 0 = %v; want nil", err)
		}
	}
	got, _ := s.Passkeys(ctx, "T1", "U1")
	if got[0].ID != "counted" || got[0].SignCount != 5 || !got[0].LastUsed.Equal(t0.Add(time.Minute)) {
		t.Errorf("after use: %+v; want sign count 5, last used %v", got[0], t0.Add(time.Minute))
	}
	// Two uses racing with one counter value: one passes.
	var wg sync.WaitGroup
	var mu sync.Mutex
	passed := 0
	for range 8 {
		wg.Go(func() {
			if s.UsePasskey(ctx, "T1", "U1", "counted", 6, t0) == nil {
				mu.Lock()
				passed++
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if passed != 1 {
		t.Errorf("%d racing uses with counter 6 passed; want 1", passed)
	}
}

func TestTOTPStore(t *testing.T) {
	e := newEnv(t)
	s, ctx := e.store(), t.Context()
	if secret, _, err := s.TOTP(ctx, "T1", "U1"); secret != nil || err != nil {
		t.Fatalf("TOTP of nobody = %v, %v", secret, err)
	}
	if ok, _ := s.UseTOTPStep(ctx, "T1", "U1", 10); ok {
		t.Error("UseTOTPStep without a secret = true")
	}
	at := e.clock.Now()
	if err := s.SetTOTP(ctx, "T1", "U1", []byte("12345678901234567890"), at); err != nil {
		t.Fatal(err)
	}
	secret, added, err := s.TOTP(ctx, "T1", "U1")
	if string(secret) != "12345678901234567890" || !added.Equal(at) || err != nil {
		t.Fatalf("TOTP = %q, %v, %v", secret, added, err)
	}
	for _, c := range []struct {
		step int64
		want bool
	}{{100, true}, {100, false}, {99, false}, {101, true}} {
		if ok, err := s.UseTOTPStep(ctx, "T1", "U1", c.step); ok != c.want || err != nil {
			t.Errorf("UseTOTPStep %d = %v, %v; want %v", c.step, ok, err, c.want)
		}
	}
	if ok, _ := s.RemoveTOTP(ctx, "T1", "U1"); !ok {
		t.Error("RemoveTOTP = false")
	}
	if secret, _, _ := s.TOTP(ctx, "T1", "U1"); secret != nil {
		t.Error("TOTP after RemoveTOTP still there")
	}
}

func TestRegistrationLinkSingleUse(t *testing.T) {
	e := newEnv(t)
	s, ctx := e.store(), t.Context()
	id := strings.Repeat("a", 43)
	l := store.Registration{ID: id, Token: "secret", Team: "T1", User: "U1", Expires: e.clock.Now().Add(5 * time.Minute)}
	if err := s.SaveRegistration(ctx, l); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if got, err := s.RegistrationLink(ctx, id); err != nil || got == nil || got.User != "U1" || got.Token != "secret" {
			t.Fatalf("RegistrationLink = %+v, %v", got, err)
		}
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	taken := 0
	for range 8 {
		wg.Go(func() {
			if got, err := e.otherProcess(t).TakeRegistration(ctx, id); err == nil && got != nil {
				mu.Lock()
				taken++
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if taken != 1 {
		t.Errorf("link taken %d times; want 1", taken)
	}
	if got, _ := s.RegistrationLink(ctx, id); got != nil {
		t.Errorf("RegistrationLink after Take = %+v; want nil", got)
	}
	// An expired link reads as gone, by the store's clock.
	id2 := strings.Repeat("b", 43)
	if err := s.SaveRegistration(ctx, store.Registration{ID: id2, Team: "T1", User: "U1", Expires: e.clock.Now().Add(time.Minute)}); err != nil {
		t.Fatal(err)
	}
	e.clock.Advance(time.Minute)
	if got, _ := s.TakeRegistration(ctx, id2); got != nil {
		t.Errorf("TakeRegistration of an expired link = %+v; want nil", got)
	}
	if got, _ := s.RegistrationLink(ctx, "short"); got != nil {
		t.Error("RegistrationLink of a malformed id found something")
	}
}

func TestAuditPasskey(t *testing.T) {
	e := newEnv(t)
	s, ctx := e.store(), t.Context()
	if err := s.AuditPasskey(ctx, store.AuditPasskeyAdded, "T1", "U1", "webauthn", "cred0", "laptop", e.clock.Now()); err != nil {
		t.Fatal(err)
	}
	evs, err := s.ReadAudit(ctx, "", 0)
	if err != nil || len(evs) != 1 {
		t.Fatalf("ReadAudit = %v, %v", evs, err)
	}
	ev := evs[0]
	if ev.Type != store.AuditPasskeyAdded || ev.By != "U1" || ev.Decision != "webauthn" || ev.Detail != `{"team":"T1","cred":"cred0","name":"laptop"}` {
		t.Errorf("audit event = %+v", ev)
	}
}

// TestPasskeyAddRefusesAnExistingID: adding a credential id the person
// has already fails and keeps the stored one (its key, name, counter).
func TestPasskeyAddRefusesAnExistingID(t *testing.T) {
	e := newEnv(t)
	s, ctx := e.store(), t.Context()
	t0 := e.clock.Now()
	if err := s.AddPasskey(ctx, "T1", "U1", store.StoredPasskey{ID: "cred0", Name: "laptop", Credential: json.RawMessage(`{"k":1}`), SignCount: 7, Added: t0}); err != nil {
		t.Fatal(err)
	}
	err := s.AddPasskey(ctx, "T1", "U1", store.StoredPasskey{ID: "cred0", Name: "evil", Credential: json.RawMessage(`{"k":2}`), SignCount: 0, Added: t0})
	if err == nil {
		t.Fatal("AddPasskey of an id already there succeeded; want it refused")
	}
	got, _ := s.Passkeys(ctx, "T1", "U1")
	if len(got) != 1 || got[0].Name != "laptop" || got[0].SignCount != 7 || string(got[0].Credential) != `{"k":1}` {
		t.Errorf("Passkeys = %+v; want the first kept as it was", got)
	}
}

// TestTOTPFailuresCountAndDecay: wrong codes count per link and per
// person; the person's count lasts its window from the first.
func TestTOTPFailuresCountAndDecay(t *testing.T) {
	e := newEnv(t)
	s, ctx := e.store(), t.Context()
	for i := 1; i <= 3; i++ {
		a, b, err := s.TOTPFailed(ctx, "T1", "U1", "stepup:L1", time.Minute, time.Hour)
		if err != nil || a != i || b != i {
			t.Fatalf("TOTPFailed #%d = %d, %d, %v", i, a, b, err)
		}
	}
	if a, b, err := s.TOTPFailed(ctx, "T1", "U1", "stepup:L2", time.Minute, time.Hour); err != nil || a != 1 || b != 4 {
		t.Fatalf("another link = %d, %d, %v; want 1, 4", a, b, err)
	}
	if a, b, _ := s.TOTPFailures(ctx, "T1", "U1", "stepup:L1"); a != 3 || b != 4 {
		t.Errorf("TOTPFailures = %d, %d; want 3, 4", a, b)
	}
	if a, b, _ := s.TOTPFailures(ctx, "T1", "U2", "stepup:L9"); a != 0 || b != 0 {
		t.Errorf("another person's = %d, %d; want 0, 0", a, b)
	}
	if ttl := e.rdb.PTTL(ctx, e.prefix+"totpfail:T1:U1").Val(); ttl <= 0 || ttl > time.Hour {
		t.Errorf("the person's counter has TTL %v; want at most the window", ttl)
	}
}

// TestLastRemoval: removing a passkey or the TOTP secret notes when, in
// the same step; removing what is not there notes nothing.
func TestLastRemoval(t *testing.T) {
	e := newEnv(t)
	s, ctx := e.store(), t.Context()
	if at, err := s.LastRemoval(ctx, "T1", "U1"); err != nil || !at.IsZero() {
		t.Fatalf("LastRemoval of nobody = %v, %v; want zero", at, err)
	}
	if err := s.AddPasskey(ctx, "T1", "U1", store.StoredPasskey{ID: "cred", Name: "key", Credential: json.RawMessage(`{"id":"x"}`), Added: e.clock.Now()}); err != nil {
		t.Fatal(err)
	}
	if ok, err := s.RemovePasskey(ctx, "T1", "U1", "nope"); ok || err != nil {
		t.Fatalf("RemovePasskey of an unknown id = %v, %v", ok, err)
	}
	if at, _ := s.LastRemoval(ctx, "T1", "U1"); !at.IsZero() {
		t.Errorf("LastRemoval after removing nothing = %v; want zero", at)
	}
	removed := e.clock.Now()
	if ok, err := s.RemovePasskey(ctx, "T1", "U1", "cred"); !ok || err != nil {
		t.Fatalf("RemovePasskey = %v, %v", ok, err)
	}
	if at, err := s.LastRemoval(ctx, "T1", "U1"); err != nil || !at.Equal(removed.Truncate(time.Millisecond)) {
		t.Errorf("LastRemoval after a removal = %v, %v; want %v", at, err, removed)
	}
	if err := s.SetTOTP(ctx, "T1", "U2", []byte("12345678901234567890"), e.clock.Now()); err != nil {
		t.Fatal(err)
	}
	if ok, err := s.RemoveTOTP(ctx, "T1", "U2"); !ok || err != nil {
		t.Fatalf("RemoveTOTP = %v, %v", ok, err)
	}
	if at, _ := s.LastRemoval(ctx, "T1", "U2"); at.IsZero() {
		t.Error("LastRemoval after removing the TOTP secret is zero")
	}
}
