package stepup

import (
	"bytes"
	"context"
	"encoding/json"
	"html"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-webauthn/webauthn/protocol"

	"github.com/slackapprove/slackbot/internal/webauthntest"
)

const (
	testHost   = "slackbot.example.com"
	testOrigin = "https://" + testHost
)

// testClock is a clock that moves only when told.
type testClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *testClock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *testClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// harness is the handler on fakes of its ports, spoken to over HTTP as a
// browser would.
type harness struct {
	t     *testing.T
	h     *Handler
	store *memStore
	ap    *fakeApprovals
	clock *testClock
	mu    sync.Mutex
	notes []string
}

func newHarness(t *testing.T) *harness {
	t.Helper()
	hs := &harness{t: t, clock: &testClock{t: time.Now().Truncate(time.Second)}}
	hs.store, hs.ap = newMemStore(hs.clock.Now), newFakeApprovals(hs.clock.Now)
	u, _ := url.Parse(testOrigin)
	h, err := New(Config{PublicURL: u, Approvals: hs.ap, Store: hs.store, Now: hs.clock.Now,
		Notify: func(_ context.Context, team, user, text string) {
			hs.mu.Lock()
			defer hs.mu.Unlock()
			hs.notes = append(hs.notes, team+"/"+user+": "+text)
		}})
	if err != nil {
		t.Fatal(err)
	}
	hs.h = h
	return hs
}

func (hs *harness) notified() []string {
	hs.mu.Lock()
	defer hs.mu.Unlock()
	return append([]string(nil), hs.notes...)
}

// do sends a request to the handler as a browser on testOrigin would.
func (hs *harness) do(method, path, ctype string, body []byte) *httptest.ResponseRecorder {
	hs.t.Helper()
	r := httptest.NewRequest(method, testOrigin+path, bytes.NewReader(body))
	if ctype != "" {
		r.Header.Set("Content-Type", ctype)
	}
	if method == http.MethodPost {
		r.Header.Set("Origin", testOrigin)
	}
	w := httptest.NewRecorder()
	hs.h.ServeHTTP(w, r)
	return w
}

// postJSON posts a ceremony's answer and returns the page's answer.
func (hs *harness) postJSON(path string, v any) (int, answer) {
	hs.t.Helper()
	b, _ := json.Marshal(v)
	w := hs.do(http.MethodPost, path, "application/json", b)
	var a answer
	if err := json.Unmarshal(w.Body.Bytes(), &a); err != nil {
		hs.t.Fatalf("POST %s: %d %q is no answer: %v", path, w.Code, w.Body, err)
	}
	return w.Code, a
}

func (hs *harness) postForm(path string, form url.Values) *httptest.ResponseRecorder {
	hs.t.Helper()
	return hs.do(http.MethodPost, path, "application/x-www-form-urlencoded", []byte(form.Encode()))
}

var optionsAttr = regexp.MustCompile(`data-options="([^"]*)"`)

// options returns the ceremony options a page carries for its script.
func options[T any](t *testing.T, page string) T {
	t.Helper()
	var v T
	m := optionsAttr.FindStringSubmatch(page)
	if m == nil {
		t.Fatalf("the page carries no ceremony options:\n%s", page)
	}
	if err := json.Unmarshal([]byte(html.UnescapeString(m[1])), &v); err != nil {
		t.Fatalf("the page's options: %v", err)
	}
	return v
}

// register adds a passkey for team/user through the registration page
// and returns the authenticator holding it.
func (hs *harness) register(team, user string) *webauthntest.Key {
	hs.t.Helper()
	link, _, err := hs.h.RegistrationLink(hs.t.Context(), team, user)
	if err != nil {
		hs.t.Fatal(err)
	}
	path := strings.TrimPrefix(link, testOrigin)
	w := hs.do(http.MethodGet, path, "", nil)
	if w.Code != http.StatusOK {
		hs.t.Fatalf("GET %s: %d %s", path, w.Code, w.Body)
	}
	opts := options[protocol.CredentialCreation](hs.t, w.Body.String())
	key := webauthntest.New(hs.t, testHost, userHandle(team, user))
	code, a := hs.postJSON(path, map[string]any{"credential": key.Create(hs.t, opts.Response.Challenge, testOrigin), "name": "laptop"})
	if code != http.StatusOK || !a.OK {
		hs.t.Fatalf("register: %d %+v", code, a)
	}
	return key
}

// challenge is the assertion challenge the step-up page asks for.
func (hs *harness) challenge(id string) []byte {
	hs.t.Helper()
	w := hs.do(http.MethodGet, "/step-up/"+id, "", nil)
	if w.Code != http.StatusOK {
		hs.t.Fatalf("GET /step-up/%s: %d %s", id, w.Code, w.Body)
	}
	return options[protocol.CredentialAssertion](hs.t, w.Body.String()).Response.Challenge
}
