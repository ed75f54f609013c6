package main

import (
	"bytes"
	"encoding/json"
	"html"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/go-webauthn/webauthn/protocol"

	"github.com/slackapprove/slackbot/approval"
	"github.com/slackapprove/slackbot/internal/webauthntest"
	"github.com/slackapprove/slackbot/store"
)

const stepUpRoutes = `
default_timeout: 1h
routes:
  - name: deletions
    when: {tools: ["delete_*"]}
    channel: C0APPROVALS
    approvers: {users: [U0ALICE, U0BOB]}
    step_up: true
`

const stepUpHost = "slackbot.example.com"

// pages speaks to the step-up and passkey pages of e's app as a browser
// on PUBLIC_URL would.
type pages struct {
	t *testing.T
	e *env
}

func (p pages) do(method, path string, body []byte, host string) (int, string) {
	p.t.Helper()
	req, err := http.NewRequestWithContext(p.t.Context(), method, p.e.srv.URL+path, bytes.NewReader(body))
	if err != nil {
		p.t.Fatal(err)
	}
	req.Host = host
	if method == http.MethodPost {
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Origin", "https://"+host)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		p.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func (p pages) post(path string, v any) (int, string) {
	p.t.Helper()
	b, _ := json.Marshal(v)
	return p.do(http.MethodPost, path, b, stepUpHost)
}

// challenge is the WebAuthn challenge a page asks its script to use.
func (p pages) challenge(body string) []byte {
	p.t.Helper()
	m := regexp.MustCompile(`data-options="([^"]*)"`).FindStringSubmatch(body)
	if m == nil {
		p.t.Fatalf("no ceremony on the page:\n%s", body)
	}
	var o struct {
		PublicKey struct {
			Challenge protocol.URLEncodedBase64 `json:"challenge"`
		} `json:"publicKey"`
	}
	if err := json.Unmarshal([]byte(html.UnescapeString(m[1])), &o); err != nil {
		p.t.Fatal(err)
	}
	return o.PublicKey.Challenge
}

// register adds a passkey for user through the registration page.
func (p pages) register(user string) *webauthntest.Key {
	p.t.Helper()
	link, _, err := p.e.app.stepup.RegistrationLink(p.t.Context(), testTeam, user)
	if err != nil {
		p.t.Fatal(err)
	}
	path := strings.TrimPrefix(link, "https://"+stepUpHost)
	code, body := p.do(http.MethodGet, path, nil, stepUpHost)
	if code != http.StatusOK {
		p.t.Fatalf("registration page: %d %s", code, body)
	}
	key := webauthntest.New(p.t, stepUpHost, nil)
	if code, body := p.post(path, map[string]any{"credential": key.Create(p.t, p.challenge(body), "https://"+stepUpHost), "name": "laptop"}); code != http.StatusOK {
		p.t.Fatalf("register: %d %s", code, body)
	}
	return key
}

// stepUpLink asks for a delete_customer call and returns its token, call
// id and the step-up link Alice's Approve on its card gets.
func (p pages) stepUpLink() (string, string, *approval.StepUpLink) {
	p.t.Helper()
	ctx := p.t.Context()
	p.e.mention(carol, general, "delete the customer")
	card := p.e.waitCards(1)[0]
	token, callID := p.e.requestOfCard(p.t, card)
	r, err := p.e.app.svc.Get(ctx, token)
	if err != nil {
		p.t.Fatal(err)
	}
	l, err := p.e.app.svc.BeginStepUp(ctx, r, approval.Decider{User: alice, Team: testTeam, Message: r.Call(callID).Message},
		approval.Decision{CallID: callID, By: alice, Action: approval.ActionApprove}, callID)
	if err != nil {
		p.t.Fatalf("BeginStepUp: %v", err)
	}
	return token, callID, l
}

// TestStepUpWithPasskey: the binary serves the pages on PUBLIC_URL's host
// over the real store and Service: Alice registers a passkey (kept in
// Redis, audited), a step-up link for her click shows the call, and her
// assertion over its challenge approves it with the proof recorded; the
// tool runs once, the link works once, and another host gets nothing.
func TestStepUpWithPasskey(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{routes: stepUpRoutes, publicURL: "https://" + stepUpHost})
	p := pages{t, e}
	ctx := t.Context()

	link, _, err := e.app.stepup.RegistrationLink(ctx, testTeam, alice)
	if err != nil {
		t.Fatal(err)
	}
	if code, _ := p.do(http.MethodGet, strings.TrimPrefix(link, "https://"+stepUpHost), nil, strings.TrimPrefix(e.srv.URL, "http://")); code != http.StatusMisdirectedRequest {
		t.Errorf("the registration page on the server's own address: %d; want 421", code)
	}
	key := p.register(alice)
	if keys, err := e.app.store.Passkeys(ctx, testTeam, alice); err != nil || len(keys) != 1 || keys[0].ID != webauthntest.B64(key.ID) {
		t.Fatalf("Alice's passkeys in Redis: %+v, %v", keys, err)
	}
	if n := e.audited(string(store.AuditPasskeyAdded)); n != 1 {
		t.Errorf("%d passkey registrations audited; want 1", n)
	}

	token, callID, l := p.stepUpLink()
	code, body := p.do(http.MethodGet, "/step-up/"+l.ID, nil, stepUpHost)
	if code != http.StatusOK || !strings.Contains(body, "Approve delete_customer?") {
		t.Fatalf("step-up page: %d %s", code, body)
	}
	assertion := key.Get(t, p.challenge(body), "https://"+stepUpHost, webauthntest.FlagUP|webauthntest.FlagUV)
	if code, body := p.post("/step-up/"+l.ID, map[string]any{"credential": assertion}); code != http.StatusOK || !strings.Contains(body, "Approved.") {
		t.Fatalf("step-up: %d %s", code, body)
	}
	e.waitFor("the approved deletion to run", func() bool { return len(e.tools.Runs("delete_customer")) == 1 })
	r, err := e.app.svc.Get(ctx, token)
	if err != nil {
		t.Fatal(err)
	}
	c := r.Call(callID)
	if c.Status != approval.CallApproved || c.StepUp == nil || c.StepUp.Method != "webauthn" || c.StepUp.CredentialID != webauthntest.B64(key.ID) {
		t.Errorf("the call after step-up: %s, %+v; want approved with Alice's passkey", c.Status, c.StepUp)
	}
	// The link is spent: the same assertion again changes nothing.
	if code, body := p.post("/step-up/"+l.ID, map[string]any{"credential": assertion}); code != http.StatusNotFound || !strings.Contains(body, "already used") {
		t.Errorf("the link again: %d %s; want 404", code, body)
	}
	if n := len(e.tools.Runs("delete_customer")); n != 1 {
		t.Errorf("the tool ran %d times; want 1", n)
	}
}

// TestStepUpAfterADecisionElsewhere: while Alice's step-up page is open,
// Bob denies the call on its card (Deny needs no step-up). Her assertion
// is then refused with a sentence saying so, and the denial stands.
func TestStepUpAfterADecisionElsewhere(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{routes: stepUpRoutes, publicURL: "https://" + stepUpHost})
	p := pages{t, e}
	key := p.register(alice)
	token, callID, l := p.stepUpLink()
	_, body := p.do(http.MethodGet, "/step-up/"+l.ID, nil, stepUpHost)
	ch := p.challenge(body)

	card := e.waitCards(1)[0]
	if code := e.click(bob, card, "deny"); code != http.StatusOK {
		t.Fatalf("Bob's deny: %d", code)
	}
	e.waitFor("the denial", func() bool {
		r, err := e.app.svc.Get(t.Context(), token)
		return err == nil && r.Call(callID).Status == approval.CallDenied
	})
	code, body := p.post("/step-up/"+l.ID, map[string]any{"credential": key.Get(t, ch, "https://"+stepUpHost, webauthntest.FlagUP|webauthntest.FlagUV)})
	if code != http.StatusConflict || !strings.Contains(body, "already denied") || !strings.Contains(body, "Nothing changed") {
		t.Errorf("step-up after the denial: %d %s; want 409 saying it was denied", code, body)
	}
	if code, body := p.do(http.MethodGet, "/step-up/"+l.ID, nil, stepUpHost); code != http.StatusConflict || strings.Contains(body, "data-options") {
		t.Errorf("the page after the denial: %d; want 409 and no ceremony", code)
	}
	r, err := e.app.svc.Get(t.Context(), token)
	if err != nil {
		t.Fatal(err)
	}
	if c := r.Call(callID); c.Status != approval.CallDenied || c.StepUp != nil || len(e.tools.Runs("delete_customer")) != 0 {
		t.Errorf("after the refused step-up: %s, %+v, %d runs; want denied, no proof, no run", c.Status, c.StepUp, len(e.tools.Runs("delete_customer")))
	}
}

// TestStepUpPagesNeedADomain: a PUBLIC_URL that is an IP address cannot
// be a WebAuthn RP ID: slackbot starts without the pages rather than
// refusing to start; dev's loopback address becomes localhost.
func TestStepUpPagesNeedADomain(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{publicURL: "https://10.0.0.5"})
	if e.app.stepup != nil {
		t.Error("step-up pages built on an IP address")
	}
	for raw, want := range map[string]string{
		"http://127.0.0.1:8080": "http://localhost:8080", "http://[::1]:9": "http://localhost:9",
		"http://localhost:8080": "http://localhost:8080", "http://192.0.2.1:80": "http://192.0.2.1:80",
	} {
		if got := localhostURL(raw); got != want {
			t.Errorf("localhostURL(%s) = %s; want %s", raw, got, want)
		}
	}
}
