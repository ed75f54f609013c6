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

// TestStepUpWithPasskey: the binary serves the pages on PUBLIC_URL's host
// over the real store and Service: Alice registers a passkey (kept in
// Redis, audited), a step-up link for her click shows the call, and her
// assertion over its challenge approves it with the proof recorded; the
// tool runs once, the link works once, and another host gets nothing.
func TestStepUpWithPasskey(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{routes: stepUpRoutes, publicURL: "https://" + stepUpHost})
	ctx := t.Context()
	page := func(method, path string, body []byte, host string) (int, string) {
		t.Helper()
		req, err := http.NewRequestWithContext(ctx, method, e.srv.URL+path, bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Host = host
		if method == http.MethodPost {
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Origin", "https://"+host)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	challenge := func(body string) []byte {
		t.Helper()
		m := regexp.MustCompile(`data-options="([^"]*)"`).FindStringSubmatch(body)
		if m == nil {
			t.Fatalf("no ceremony on the page:\n%s", body)
		}
		var o struct {
			PublicKey struct {
				Challenge protocol.URLEncodedBase64 `json:"challenge"`
			} `json:"publicKey"`
		}
		if err := json.Unmarshal([]byte(html.UnescapeString(m[1])), &o); err != nil {
			t.Fatal(err)
		}
		return o.PublicKey.Challenge
	}
	post := func(path string, v any) (int, string) {
		b, _ := json.Marshal(v)
		return page(http.MethodPost, path, b, stepUpHost)
	}

	// Alice registers a passkey from her link.
	link, _, err := e.app.stepup.RegistrationLink(ctx, testTeam, alice)
	if err != nil {
		t.Fatal(err)
	}
	regPath := strings.TrimPrefix(link, "https://"+stepUpHost)
	if code, _ := page(http.MethodGet, regPath, nil, strings.TrimPrefix(e.srv.URL, "http://")); code != http.StatusMisdirectedRequest {
		t.Errorf("the registration page on the server's own address: %d; want 421", code)
	}
	code, body := page(http.MethodGet, regPath, nil, stepUpHost)
	if code != http.StatusOK {
		t.Fatalf("registration page: %d %s", code, body)
	}
	key := webauthntest.New(t, stepUpHost, nil)
	if code, body := post(regPath, map[string]any{"credential": key.Create(t, challenge(body), "https://"+stepUpHost), "name": "laptop"}); code != http.StatusOK {
		t.Fatalf("register: %d %s", code, body)
	}
	if keys, err := e.app.store.Passkeys(ctx, testTeam, alice); err != nil || len(keys) != 1 || keys[0].ID != webauthntest.B64(key.ID) {
		t.Fatalf("Alice's passkeys in Redis: %+v, %v", keys, err)
	}
	if n := e.audited(string(store.AuditPasskeyAdded)); n != 1 {
		t.Errorf("%d passkey registrations audited; want 1", n)
	}

	// A call on the step-up route, and the link Alice's click gets.
	e.mention(carol, general, "delete the customer")
	card := e.waitCards(1)[0]
	token, callID := e.requestOfCard(t, card)
	r, err := e.app.svc.Get(ctx, token)
	if err != nil {
		t.Fatal(err)
	}
	l, err := e.app.svc.BeginStepUp(ctx, r, approval.Decider{User: alice, Team: testTeam, Message: r.Call(callID).Message},
		approval.Decision{CallID: callID, By: alice, Action: approval.ActionApprove}, callID)
	if err != nil {
		t.Fatalf("BeginStepUp: %v", err)
	}
	code, body = page(http.MethodGet, "/step-up/"+l.ID, nil, stepUpHost)
	if code != http.StatusOK || !strings.Contains(body, "Approve delete_customer?") {
		t.Fatalf("step-up page: %d %s", code, body)
	}
	assertion := key.Get(t, challenge(body), "https://"+stepUpHost, webauthntest.FlagUP|webauthntest.FlagUV)
	if code, body := post("/step-up/"+l.ID, map[string]any{"credential": assertion}); code != http.StatusOK || !strings.Contains(body, "Approved.") {
		t.Fatalf("step-up: %d %s", code, body)
	}
	e.waitFor("the approved deletion to run", func() bool { return len(e.tools.Runs("delete_customer")) == 1 })
	r, err = e.app.svc.Get(ctx, token)
	if err != nil {
		t.Fatal(err)
	}
	c := r.Call(callID)
	if c.Status != approval.CallApproved || c.StepUp == nil || c.StepUp.Method != "webauthn" || c.StepUp.CredentialID != webauthntest.B64(key.ID) {
		t.Errorf("the call after step-up: %s, %+v; want approved with Alice's passkey", c.Status, c.StepUp)
	}
	// The link is spent: the same assertion again changes nothing.
	if code, body := post("/step-up/"+l.ID, map[string]any{"credential": assertion}); code != http.StatusNotFound || !strings.Contains(body, "already used") {
		t.Errorf("the link again: %d %s; want 404", code, body)
	}
	if n := len(e.tools.Runs("delete_customer")); n != 1 {
		t.Errorf("the tool ran %d times; want 1", n)
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
