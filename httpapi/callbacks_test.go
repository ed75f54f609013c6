package httpapi_test

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/slackapprove/slackbot/approval"
	"github.com/slackapprove/slackbot/httpapi"
	"github.com/slackapprove/slackbot/receipt"
	"github.com/slackapprove/slackbot/store"
)

// receiver is an agent's callback endpoint on loopback. It verifies each
// callback the way the package documentation tells clients to, without
// using the package's code, and answers from a script.
type receiver struct {
	t      *testing.T
	srv    *httptest.Server
	secret string

	// intercept, when set, may answer a request itself (returning true).
	intercept func(w http.ResponseWriter, r *http.Request) bool
	reply     func(n int, r *http.Request) int // status for the n-th attempt (from 1) of a token

	mu  sync.Mutex
	got []delivery
}

type delivery struct {
	token   string
	status  string
	attempt string
	body    []byte
	valid   bool
}

func newReceiver(t *testing.T, apiKey string, intercept func(w http.ResponseWriter, r *http.Request) bool, reply func(n int, r *http.Request) int) *receiver {
	t.Helper()
	mac := hmac.New(sha256.New, []byte(apiKey))
	mac.Write([]byte("slackbot-callback-v1"))
	rc := &receiver{t: t, secret: hex.EncodeToString(mac.Sum(nil)), intercept: intercept, reply: reply}
	rc.srv = httptest.NewServer(http.HandlerFunc(rc.serve))
	t.Cleanup(rc.srv.Close)
	return rc
}

func (rc *receiver) serve(w http.ResponseWriter, r *http.Request) {
	if rc.intercept != nil && rc.intercept(w, r) {
		return
	}
	body, _ := io.ReadAll(r.Body)
	ts := r.Header.Get("X-Slackbot-Timestamp")
	mac := hmac.New(sha256.New, []byte(rc.secret))
	mac.Write([]byte(ts + "." + string(body)))
	want := "v1=" + hex.EncodeToString(mac.Sum(nil))
	sec, err := strconv.ParseInt(ts, 10, 64)
	valid := err == nil && hmac.Equal([]byte(want), []byte(r.Header.Get("X-Slackbot-Signature"))) &&
		time.Since(time.Unix(sec, 0)).Abs() < 5*time.Minute
	var v struct{ Token, Status string }
	_ = json.Unmarshal(body, &v)
	rc.mu.Lock()
	rc.got = append(rc.got, delivery{token: v.Token, status: v.Status, attempt: r.Header.Get("X-Slackbot-Attempt"), body: body, valid: valid})
	n := 0
	for _, d := range rc.got {
		if d.token == v.Token {
			n++
		}
	}
	rc.mu.Unlock()
	w.WriteHeader(rc.reply(n, r))
	_, _ = w.Write([]byte("a body slackbot ignores"))
}

func (rc *receiver) deliveries(token string) []delivery {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	var out []delivery
	for _, d := range rc.got {
		if d.token == token {
			out = append(out, d)
		}
	}
	return out
}

// callbackAudit returns the callback attempts of a token in the audit
// stream, as "outcome detail".
func (e *env) callbackAudit(token string) []string {
	var out []string
	for _, ev := range e.auditOf(token) {
		if ev.Type == store.AuditCallback {
			out = append(out, ev.Decision+" "+ev.Detail)
		}
	}
	return out
}

func testCallbacks(t *testing.T) {
	e := newEnv(t, envOptions{})
	// A second replica delivers from the same queue: each end is still
	// delivered in one sequence.
	e.startCallbacks(t, "replica-2")
	// The first attempt of every token fails; the retry succeeds.
	rc := newReceiver(t, keyBilling, nil, func(n int, _ *http.Request) int {
		if n == 1 {
			return http.StatusServiceUnavailable
		}
		return http.StatusOK
	})
	hook := rc.srv.URL + "/hooks/slackbot?tenant=7"

	resolved := e.create(keyBilling, deletion("cb1", "/tmp/a", map[string]any{"callback_url": hook}))
	cancelled := e.create(keyBilling, deletion("cb2", "/tmp/b", map[string]any{"callback_url": hook}))
	expired := e.create(keyBilling, deletion("cb3", "/tmp/c", map[string]any{"callback_url": hook, "timeout": "1m"}))
	silent := e.create(keyBilling, deletion("cb4", "/tmp/d", nil))

	e.click(alice, e.card(resolved.Token, "cb1"), approval.ActionApprove)
	if resp := e.do(request{key: keyBilling, method: http.MethodDelete, path: "/v1/approvals/" + cancelled.Token}); resp.status != http.StatusOK {
		t.Fatalf("cancel: %d %s", resp.status, resp.body)
	}
	e.clock.Add(2 * time.Minute) // cb3 expires
	if resp := e.do(request{key: keyBilling, method: http.MethodDelete, path: "/v1/approvals/" + silent.Token}); resp.status != http.StatusOK {
		t.Errorf("cancel cb4: %d %s", resp.status, resp.body)
	}

	for _, tc := range []struct {
		token, status string
	}{{resolved.Token, "resolved"}, {cancelled.Token, "cancelled"}, {expired.Token, "expired"}} {
		e.waitFor(tc.status+" callback delivered", func() bool {
			return len(e.callbackAudit(tc.token)) == 2
		})
		got := rc.deliveries(tc.token)
		if len(got) != 2 {
			t.Fatalf("%s: got %d deliveries, want 2 (one failed, one retried)", tc.status, len(got))
		}
		for i, d := range got {
			if !d.valid {
				t.Errorf("%s attempt %d: the signature does not verify", tc.status, i+1)
			}
			if d.status != tc.status || d.attempt != strconv.Itoa(i+1) {
				t.Errorf("%s attempt %d: got status %q, attempt header %q", tc.status, i+1, d.status, d.attempt)
			}
			e.doc.Validate(t, "POST", "callback", "/components/schemas/Approval", d.body)
			if err := httpapi.VerifyCallback(rc.secret, http.Header{
				"X-Slackbot-Timestamp": {strconv.FormatInt(time.Now().Unix(), 10)},
			}, d.body, time.Now(), time.Minute); err == nil {
				t.Errorf("VerifyCallback accepted a callback without a signature")
			}
		}
		want := []string{"retrying attempt 1, HTTP 503", "delivered attempt 2, HTTP 200"}
		if diff := cmp.Diff(want, e.callbackAudit(tc.token)); diff != "" {
			t.Errorf("%s: audited attempts (-want +got):\n%s", tc.status, diff)
		}
	}
	// The callback body is what GET answers, receipt included.
	last := rc.deliveries(resolved.Token)[1]
	var body struct {
		Results struct {
			Metadata map[string]map[string]any `json:"metadata"`
		} `json:"results"`
	}
	if err := json.Unmarshal(last.body, &body); err != nil {
		t.Fatal(err)
	}
	if _, err := e.receipts.Verify(receipt.FromMetadata(body.Results.Metadata["cb1"]), receipt.Expect{
		CallID: "cb1", Tool: "delete_file", Args: json.RawMessage(`{"path":"/tmp/a"}`), Token: resolved.Token, Now: e.clock.Now(),
	}); err != nil {
		t.Errorf("the callback's receipt: %v", err)
	}
	get := e.do(request{key: keyBilling, method: http.MethodGet, path: "/v1/approvals/" + resolved.Token})
	jsonEqual(t, "callback body", last.body, string(get.body))
	if got := rc.deliveries(silent.Token); len(got) != 0 {
		t.Errorf("a token without callback_url was delivered %d times", len(got))
	}
	rdb := e.store.Client()
	if n := rdb.XLen(t.Context(), e.prefix+"callbacks").Val() + rdb.ZCard(t.Context(), e.prefix+"callbacks:retry").Val(); n != 0 {
		t.Errorf("%d callback jobs left after every delivery succeeded", n)
	}
}

func testCallbackRedirect(t *testing.T) {
	e := newEnv(t, envOptions{})
	elsewhere := newReceiver(t, keyBilling, nil, func(int, *http.Request) int { return http.StatusOK })
	// Same host: followed. Another host (another port): not followed.
	rc := newReceiver(t, keyBilling, func(w http.ResponseWriter, r *http.Request) bool {
		switch r.URL.Path {
		case "/same":
			http.Redirect(w, r, "/final", http.StatusTemporaryRedirect)
		case "/away":
			http.Redirect(w, r, elsewhere.srv.URL+"/stolen", http.StatusTemporaryRedirect)
		default:
			return false
		}
		return true
	}, func(int, *http.Request) int { return http.StatusOK })
	down := httptest.NewServer(http.NotFoundHandler())
	downURL := down.URL
	down.Close() // connections are refused

	same := e.create(keyBilling, deletion("r1", "/tmp/a", map[string]any{"callback_url": rc.srv.URL + "/same"}))
	away := e.create(keyBilling, deletion("r2", "/tmp/b", map[string]any{"callback_url": rc.srv.URL + "/away"}))
	refused := e.create(keyBilling, deletion("r3", "/tmp/c", map[string]any{"callback_url": downURL + "/cb?secret=s3cr3t"}))
	for _, a := range []approvalJSON{same, away, refused} {
		if resp := e.do(request{key: keyBilling, method: http.MethodDelete, path: "/v1/approvals/" + a.Token}); resp.status != http.StatusOK {
			t.Fatalf("cancel: %d %s", resp.status, resp.body)
		}
	}
	e.waitFor("the same-host redirect delivered", func() bool { return len(e.callbackAudit(same.Token)) == 1 })
	if got := rc.deliveries(same.Token); len(got) != 1 || !got[0].valid {
		t.Errorf("same-host redirect: got %+v, want one verified delivery", got)
	}
	attempts := httpapi.DefaultCallbackAttempts
	e.waitFor("the cross-host redirect given up", func() bool { return len(e.callbackAudit(away.Token)) == attempts })
	e.waitFor("the refused callback given up", func() bool { return len(e.callbackAudit(refused.Token)) == attempts })
	var want []string
	for i := 1; i < attempts; i++ {
		want = append(want, fmt.Sprintf("retrying attempt %d, HTTP 307", i))
	}
	want = append(want, fmt.Sprintf("abandoned attempt %d, HTTP 307", attempts))
	if diff := cmp.Diff(want, e.callbackAudit(away.Token)); diff != "" {
		t.Errorf("cross-host redirect attempts (-want +got):\n%s", diff)
	}
	if got := elsewhere.deliveries(away.Token); len(got) != 0 {
		t.Errorf("a redirect to another host was followed %d times", len(got))
	}
	for _, ev := range e.auditOf(refused.Token) {
		if strings.Contains(ev.Reason, "s3cr3t") {
			t.Errorf("the audit stream holds the callback URL's query: %q", ev.Reason)
		}
		if ev.Type == store.AuditCallback && !strings.Contains(ev.Reason, "refused") {
			t.Errorf("refused connection: audit reason %q, want it to say so", ev.Reason)
		}
	}
}

// startCallbacks runs another replica's deliverer on the env's store.
func (e *env) startCallbacks(t *testing.T, consumer string) {
	t.Helper()
	keys, err := httpapi.ParseKeys(testKeys)
	if err != nil {
		t.Fatal(err)
	}
	cbs := httpapi.NewCallbacks(httpapi.CallbacksConfig{
		Keys: keys, Store: e.store, Queue: e.store.CallbackQueue(0), Consumer: consumer, AllowPrivate: true,
		Backoff: func(int) time.Duration { return 10 * time.Millisecond }, Poll: 20 * time.Millisecond,
		Now: e.clock.Now, Receipts: e.signer,
	})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = cbs.Run(ctx)
	}()
	t.Cleanup(func() {
		cancel()
		<-done
	})
}

func TestSignAndVerify(t *testing.T) {
	k := httpapi.Key{Name: "billing", Secret: keyBilling}
	secret := k.CallbackSecret()
	mac := hmac.New(sha256.New, []byte(keyBilling))
	mac.Write([]byte("slackbot-callback-v1"))
	if want := hex.EncodeToString(mac.Sum(nil)); secret != want {
		t.Fatalf("CallbackSecret: got %s, want %s", secret, want)
	}
	body := []byte(`{"token":"t","status":"resolved"}`)
	now := time.Unix(1_800_000_000, 0)
	ts := strconv.FormatInt(now.Unix(), 10)
	sig := httpapi.Sign(secret, ts, body)
	header := func(ts, sig string) http.Header {
		return http.Header{httpapi.HeaderTimestamp: {ts}, httpapi.HeaderSignature: {sig}}
	}
	tests := []struct {
		name   string
		h      http.Header
		body   []byte
		now    time.Time
		secret string
		ok     bool
	}{
		{"valid", header(ts, sig), body, now, secret, true},
		{"a little late", header(ts, sig), body, now.Add(4 * time.Minute), secret, true},
		{"replayed later", header(ts, sig), body, now.Add(6 * time.Minute), secret, false},
		{"body changed", header(ts, sig), []byte(`{"token":"t","status":"cancelled"}`), now, secret, false},
		{"timestamp changed", header(strconv.FormatInt(now.Unix()+1, 10), sig), body, now, secret, false},
		{"other secret", header(ts, sig), body, now, strings.Repeat("0", 64), false},
		{"no signature", header(ts, ""), body, now, secret, false},
		{"no timestamp", header("", sig), body, now, secret, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := httpapi.VerifyCallback(tt.secret, tt.h, tt.body, tt.now, 5*time.Minute)
			if (err == nil) != tt.ok {
				t.Errorf("got %v, want ok=%v", err, tt.ok)
			}
		})
	}
}
