package main

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/webauthn"
	"github.com/chromedp/chromedp"

	"github.com/slackapprove/slackbot/bot"
	"github.com/slackapprove/slackbot/internal/browsertest"
	"github.com/slackapprove/slackbot/receipt"
)

// payoutRoutes ask Alice for every payout, with her passkey.
const payoutRoutes = `
default_timeout: 1h
routes:
  - name: payouts
    when: {tools: ["payout"]}
    channel: C0APPROVALS
    approvers: {users: [U0ALICE]}
    step_up: true
`

// TestDevBrowserStepUp follows step-up in `slackbot dev` as a person
// would, in headless chromium with Chrome's WebAuthn virtual authenticator
// (the DevTools Protocol's WebAuthn domain) as Alice's device: she adds a
// passkey from App Home; an API client asks for a payout on a step_up
// route; her Approve on the card decides nothing and answers her alone with
// "Verify with your passkey"; the page the link opens shows the call, and
// her passkey approves it: the card says "verified with a passkey" and the
// call's receipt carries amr ["hwk"] and her credential, verified with
// RequireStepUp. The used link says so when opened again; another
// authenticator's key under her credential's id is refused on the page and
// the second payout stays pending. They are the README's step-up
// screenshots.
func TestDevBrowserStepUp(t *testing.T) {
	t.Parallel()
	routes := filepath.Join(t.TempDir(), "routes.yaml")
	if err := os.WriteFile(routes, []byte(payoutRoutes), 0o600); err != nil {
		t.Fatal(err)
	}
	p, base := devBrowserEnv(t, map[string]string{"ROUTES_FILE": routes, "API_KEYS": "payouts=" + keyBilling})
	api := devAPI{t: t, base: base}
	laptop := addAuthenticator(p)

	// Alice adds a passkey from her App Home: a modal holds the link to
	// the registration page, where the authenticator makes it.
	p.Do("act as Alice", chromedp.Click(chromedp.CSS(`.acting-user[data-user="U0ALICE"]`)))
	p.Do("open slackbot's Home", chromedp.Click(chromedp.CSS(`#apps [data-channel="home"]`)))
	p.WaitFor("Your passkeys, with none yet", `(() => {
		const home = document.querySelector('#messages .home[data-home="U0ALICE"]');
		return !!home && home.textContent.includes('Your passkeys') && home.textContent.includes('You have no passkey yet') &&
			!!home.querySelector('button[data-action-id="`+bot.ActionIDPasskeyAdd+`"]');
	})()`)
	p.Do("click Add a passkey", chromedp.Click(chromedp.CSS(`#messages .home button[data-action-id="`+bot.ActionIDPasskeyAdd+`"]`)))
	register := linkOf(p, "the registration link in the modal", `.modal a[data-action-id="`+bot.ActionIDPasskeyRegister+`"]`)
	if !strings.HasPrefix(register, localhostOf(base)+"/passkeys/") {
		t.Fatalf("registration link %q, want one on %s/passkeys/", register, localhostOf(base))
	}
	p.Do("close the modal", chromedp.Click(chromedp.CSS(`.modal .modal-header .icon-button`)))
	p.Do("open the registration page", chromedp.Navigate(register))
	p.WaitFor("the registration page with the dev note", `(() => {
		const note = document.querySelector('.dev-note');
		return !!document.getElementById('go') && !!note && note.textContent.includes('virtual authenticator');
	})()`)
	p.Do("name the passkey", chromedp.SendKeys(chromedp.ID("name"), " (Chrome)"))
	p.Do("create the passkey", chromedp.Click(chromedp.ID("go")))
	p.WaitFor("the passkey added", `(() => {
		const m = document.getElementById('message');
		return !!m && !m.hidden && m.classList.contains('ok');
	})()`)
	creds := credentials(p, laptop)
	if len(creds) != 1 {
		t.Fatalf("the authenticator holds %d credentials, want 1", len(creds))
	}
	p.Do("back to the emulator", chromedp.Navigate(base+"/dev/"), chromedp.WaitVisible(chromedp.CSS(`.acting-user[data-user="U0ALICE"]`)))
	p.Do("open slackbot's Home", chromedp.Click(chromedp.CSS(`#apps [data-channel="home"]`)))
	p.WaitFor("the passkey listed on Alice's Home, with Remove", `(() => {
		const home = document.querySelector('#messages .home[data-home="U0ALICE"]');
		return !!home && home.textContent.includes('(Chrome)') && home.textContent.includes('never used') &&
			!!home.querySelector('button[data-action-id="`+bot.ActionIDPasskeyRemove+`"]');
	})()`)

	// A payout of $50,000 on the step_up route; Alice's Approve asks for
	// her passkey, ephemerally, and decides nothing.
	first := api.create(`{"approvals":[{"tool_name":"payout","args":{"amount":50000,"to":"ACME Ltd"},"tool_call_id":"call_big","part_kind":"tool-call"}]}`)
	p.Do("open #approvals", chromedp.Click(chromedp.CSS(`#channels [data-channel="C0APPROVALS"]`)))
	p.WaitFor("the payout's card", cardIs("payout", `card.textContent.includes('ACME Ltd') && !!card.querySelector('button[data-action-id="approve"]')`))
	p.Do("click Approve", chromedp.Click(chromedp.CSS(`#messages button[data-action-id="approve"]`)))
	p.WaitFor("Verify with your passkey, only visible to Alice", `(() => {
		const e = document.querySelector('#messages .msg.ephemeral');
		const a = e && e.querySelector('a[data-action-id="`+bot.ActionIDStepUpVerify+`"]');
		return !!a && a.textContent === 'Verify with your passkey' && a.target === '_blank' && a.rel.includes('noopener') &&
			e.textContent.includes('This approval needs your passkey') &&
			!e.textContent.includes(':closed_lock_with_key:') &&
			e.querySelector('.only-you').textContent === 'Only visible to you';
	})()`)
	p.WaitFor("the card still pending", cardIs("payout", `card.querySelector('.bk-header').textContent.includes('Approval needed: payout') && !card.textContent.includes('Approved by')`))
	p.Screenshot("dev-step-up-link.png")
	link := linkOf(p, "the step-up link", `#messages .msg.ephemeral a[data-action-id="`+bot.ActionIDStepUpVerify+`"]`)
	if !strings.HasPrefix(link, localhostOf(base)+"/step-up/") {
		t.Fatalf("step-up link %q, want one on %s/step-up/", link, localhostOf(base))
	}

	// The page shows the call as the card does; the passkey approves it.
	p.Do("open the step-up page", chromedp.Navigate(link))
	p.WaitFor("the page showing the payout", `(() => {
		const call = document.querySelector('section.call');
		return !!call && call.querySelector('h2').textContent.includes('payout') && call.textContent.includes('ACME Ltd') &&
			call.textContent.includes('50000') && !!document.getElementById('go') && !!document.querySelector('.dev-note');
	})()`)
	p.Screenshot("dev-step-up-page.png")
	p.Do("verify with the passkey", chromedp.Click(chromedp.ID("go")))
	p.WaitFor("the approval confirmed on the page", `(() => {
		const m = document.getElementById('message');
		return !!m && !m.hidden && m.classList.contains('ok') && m.textContent.includes('Approved');
	})()`)

	p.Do("back to the emulator", chromedp.Navigate(base+"/dev/"), chromedp.WaitVisible(chromedp.CSS(`.acting-user[data-user="U0ALICE"]`)))
	p.Do("open #approvals", chromedp.Click(chromedp.CSS(`#channels [data-channel="C0APPROVALS"]`)))
	p.WaitFor("the card approved by Alice, verified with a passkey", cardIs("payout", `
		card.querySelector('.bk-header').textContent.includes('Approved: payout') &&
		card.textContent.includes('Approved by @Alice') && card.textContent.includes('verified with a passkey') &&
		!card.querySelector('button[data-action-id]')`))
	// As Bob, who sees the card but not Alice's step-up message.
	p.Do("act as Bob", chromedp.Click(chromedp.CSS(`.acting-user[data-user="U0BOB"]`)))
	p.WaitFor("the card without Alice's message", `!document.querySelector('#messages .msg.ephemeral') && `+
		cardIs("payout", `card.textContent.includes('verified with a passkey')`))
	p.Screenshot("dev-step-up-approved.png")
	p.Do("act as Alice", chromedp.Click(chromedp.CSS(`.acting-user[data-user="U0ALICE"]`)))

	// The receipt says how Alice approved: amr ["hwk"] and her credential.
	claims := api.receipt(first, "call_big", `{"amount":50000,"to":"ACME Ltd"}`)
	if strings.Join(claims.AMR, ",") != "hwk" || len(claims.Cred) != 1 || claims.Cred[0] != b64url(creds[0].CredentialID) ||
		strings.Join(claims.By, ",") != "U0ALICE" {
		t.Errorf("receipt: amr %q, cred %q, by %q; want [hwk], [%s], [U0ALICE]", claims.AMR, claims.Cred, claims.By, b64url(creds[0].CredentialID))
	}

	// The link was used: opened again, it says so.
	p.Do("open the used link", chromedp.Navigate(link))
	p.WaitFor("the page saying the link was used", `(() => {
		const m = document.getElementById('message');
		return !!m && m.classList.contains('refused') && m.textContent.includes('already used') && !document.getElementById('go');
	})()`)

	// Another authenticator, holding a key Alice never registered under
	// her credential's id, is refused; the second payout stays pending.
	second := api.create(`{"approvals":[{"tool_name":"payout","args":{"amount":70000,"to":"Mallory LLC"},"tool_call_id":"call_other","part_kind":"tool-call"}]}`)
	p.Do("back to the emulator", chromedp.Navigate(base+"/dev/"), chromedp.WaitVisible(chromedp.CSS(`.acting-user[data-user="U0ALICE"]`)))
	p.Do("open #approvals", chromedp.Click(chromedp.CSS(`#channels [data-channel="C0APPROVALS"]`)))
	p.WaitFor("the second payout's card", cardIs("payout", `card.textContent.includes('Mallory LLC') && !!card.querySelector('button[data-action-id="approve"]')`))
	p.Do("click Approve", chromedp.Click(chromedp.CSS(`#messages button[data-action-id="approve"]`)))
	p.WaitFor("a second step-up link", `[...document.querySelectorAll('#messages .msg.ephemeral a[data-action-id="`+bot.ActionIDStepUpVerify+`"]')].some(a => a.href !== '`+link+`')`)
	other := evalString(p, "read the second link", `[...document.querySelectorAll('#messages .msg.ephemeral a[data-action-id="`+bot.ActionIDStepUpVerify+`"]')].map(a => a.href).find(h => h !== '`+link+`')`)
	removeAuthenticator(p, laptop)
	forged := addAuthenticator(p)
	addForgedCredential(t, p, forged, creds[0])
	p.Do("open the second step-up page", chromedp.Navigate(other))
	p.WaitFor("the page showing the second payout", `!!document.getElementById('go') && document.querySelector('section.call').textContent.includes('Mallory LLC')`)
	p.Do("verify with the other authenticator", chromedp.Click(chromedp.ID("go")))
	p.WaitFor("the refusal on the page", `(() => {
		const m = document.getElementById('message');
		return !!m && !m.hidden && m.classList.contains('refused') && m.textContent.includes('could not be verified') &&
			m.textContent.includes('Nothing changed');
	})()`)
	if a := api.get(second, ""); a.Status != "pending" || len(a.Calls) != 1 || a.Calls[0].DecidedBy != nil {
		t.Errorf("after the refused assertion the second payout is %s %+v, want pending and undecided", a.Status, a.Calls)
	}
	p.Do("back to the emulator", chromedp.Navigate(base+"/dev/"), chromedp.WaitVisible(chromedp.CSS(`.acting-user[data-user="U0ALICE"]`)))
	p.Do("open #approvals", chromedp.Click(chromedp.CSS(`#channels [data-channel="C0APPROVALS"]`)))
	p.WaitFor("the second card still pending", cardIs("payout", `card.textContent.includes('Mallory LLC') &&
		!card.textContent.includes('Approved by') && !!card.querySelector('button[data-action-id="approve"]')`))
}

// addAuthenticator enables the WebAuthn domain in p's tab and adds a
// virtual authenticator as a platform passkey would be: CTAP2, internal,
// resident keys, user verification that succeeds, presence without a
// touch.
func addAuthenticator(p *browsertest.Page) webauthn.AuthenticatorID {
	var id webauthn.AuthenticatorID
	p.Do("add a virtual authenticator", chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
		if _, err := cdp.Call(ctx, t, webauthn.Enable, webauthn.EnableParams{}); err != nil {
			return err
		}
		res, err := cdp.Call(ctx, t, webauthn.AddVirtualAuthenticator, webauthn.AddVirtualAuthenticatorParams{Options: &webauthn.VirtualAuthenticatorOptions{
			Protocol: webauthn.AuthenticatorProtocolCtap2, Ctap2version: webauthn.Ctap2versionCtap21,
			Transport:      webauthn.AuthenticatorTransportInternal,
			HasResidentKey: true, HasUserVerification: true, IsUserVerified: true,
			AutomaticPresenceSimulation: true,
		}})
		id = res.AuthenticatorID
		return err
	}))
	return id
}

func removeAuthenticator(p *browsertest.Page, id webauthn.AuthenticatorID) {
	p.Do("remove the virtual authenticator", chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
		_, err := cdp.Call(ctx, t, webauthn.RemoveVirtualAuthenticator, webauthn.RemoveVirtualAuthenticatorParams{AuthenticatorID: id})
		return err
	}))
}

// credentials are the credentials the authenticator id holds.
func credentials(p *browsertest.Page, id webauthn.AuthenticatorID) []*webauthn.Credential {
	var creds []*webauthn.Credential
	p.Do("read the authenticator's credentials", chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
		res, err := cdp.Call(ctx, t, webauthn.GetCredentials, webauthn.GetCredentialsParams{AuthenticatorID: id})
		creds = res.Credentials
		return err
	}))
	return creds
}

// addForgedCredential gives the authenticator id a credential with like's
// id and relying party but a key of its own, which nobody registered.
func addForgedCredential(t *testing.T, p *browsertest.Page, id webauthn.AuthenticatorID, like *webauthn.Credential) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	pkcs8, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	p.Do("add a credential nobody registered", chromedp.Func(func(ctx context.Context, tab *chromedp.Target) error {
		// Raw parameters: cdproto's Credential always sends
		// generateCmtgKeyOnNextOperation, which this chromium refuses.
		return tab.Call(ctx, webauthn.CommandAddCredential, map[string]any{"authenticatorId": id, "credential": map[string]any{
			"credentialId": like.CredentialID, "rpId": like.RpID, "privateKey": pkcs8, "userHandle": like.UserHandle,
			"isResidentCredential": like.IsResidentCredential, "signCount": like.SignCount + 1,
		}}, nil)
	}))
}

// linkOf waits for a link (a URL button) matching selector and returns
// its href.
func linkOf(p *browsertest.Page, what, selector string) string {
	p.WaitFor(what, `!!document.querySelector('`+selector+`')`)
	return evalString(p, "read "+what, `document.querySelector('`+selector+`').href`)
}

// evalString is the string value of a JavaScript expression in p's page.
func evalString(p *browsertest.Page, what, expr string) string {
	var s string
	p.Do(what, chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
		var err error
		s, err = chromedp.Evaluate[string](expr)(ctx, t)
		return err
	}))
	return s
}

// localhostOf is the dev server's base URL as its step-up pages are
// served: on localhost, a WebAuthn relying party (an IP address is none).
func localhostOf(base string) string { return localhostURL(base) }

func b64url(b []byte) string { return base64.RawURLEncoding.EncodeToString(b) }

// devAPI speaks slackbot's HTTP API (/v1) with keyBilling.
type devAPI struct {
	t    *testing.T
	base string
}

func (a devAPI) do(method, path, body string) (int, []byte) {
	a.t.Helper()
	ctx, cancel := context.WithTimeout(a.t.Context(), 40*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, a.base+path, strings.NewReader(body))
	if err != nil {
		a.t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+keyBilling)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		a.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		a.t.Fatal(err)
	}
	return resp.StatusCode, b
}

// create asks for an approval; it returns the request's token.
func (a devAPI) create(body string) string {
	a.t.Helper()
	status, b := a.do(http.MethodPost, "/v1/approvals", body)
	if status != http.StatusCreated {
		a.t.Fatalf("create: %d %s", status, b)
	}
	return decodeRequest(a.t, b).Token
}

// get reads the request token, long-polling for wait when it is set.
func (a devAPI) get(token, wait string) apiRequest {
	a.t.Helper()
	path := "/v1/approvals/" + token
	if wait != "" {
		path += "?wait=" + wait
	}
	status, b := a.do(http.MethodGet, path, "")
	if status != http.StatusOK {
		a.t.Fatalf("get %s: %d %s", token, status, b)
	}
	return decodeRequest(a.t, b)
}

// receipt waits for the request token to be decided and verifies its
// call's receipt against the server's JWKS, requiring step-up, as a tool
// would.
func (a devAPI) receipt(token, callID, args string) *receipt.Claims {
	a.t.Helper()
	r := a.get(token, "30s")
	if r.Status == "pending" {
		a.t.Fatalf("request %s still pending", token)
	}
	var results struct {
		Metadata map[string]map[string]any `json:"metadata"`
	}
	if err := json.Unmarshal(r.Results, &results); err != nil {
		a.t.Fatalf("results %s: %v", r.Results, err)
	}
	jws := receipt.FromMetadata(results.Metadata[callID])
	keys, err := receipt.Fetch(a.t.Context(), http.DefaultClient, a.base+"/.well-known/jwks.json")
	if err != nil {
		a.t.Fatal(err)
	}
	claims, err := keys.Verify(jws, receipt.Expect{CallID: callID, Tool: "payout", Args: json.RawMessage(args), Token: token, RequireStepUp: true})
	if err != nil {
		a.t.Fatalf("receipt of %s (%q): %v", callID, jws, err)
	}
	return claims
}
