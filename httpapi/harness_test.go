package httpapi_test

import (
	"bytes"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/slackapprove/slackbot/agentrunner"
	"github.com/slackapprove/slackbot/approval"
	"github.com/slackapprove/slackbot/httpapi"
	"github.com/slackapprove/slackbot/internal/apitest"
	"github.com/slackapprove/slackbot/internal/approvaltest"
	"github.com/slackapprove/slackbot/internal/clocktest"
	"github.com/slackapprove/slackbot/internal/systest"
	"github.com/slackapprove/slackbot/receipt"
	"github.com/slackapprove/slackbot/store"
)

// The test clients and routes (internal/apitest). opsbot may only use
// the ops route.
const (
	keyBilling = apitest.KeyBilling
	keySupport = apitest.KeySupport
	keyOps     = apitest.KeyOps
	testKeys   = apitest.Keys
	routesYAML = apitest.Routes
	alice      = "U0ALICE"
	bob        = "U0BOB"
	approvals_ = "C0APPROVALS"
)

// env is the HTTP API over the core of the system (internal/systest: a
// real approval.Service on a real store over the embedded Redis, with the
// store's background loops) plus the callback deliverer, and a recording
// Poster in place of Slack: the handlers' level. The whole app (Slack
// cards, clicks, the clients' tests) is cmd/slackbot's harness.
type env struct {
	t      *testing.T
	sys    *systest.System
	srv    *httptest.Server
	poster *approvaltest.Poster
	store  *store.Store
	// rdb is the store's Redis client (tests add hooks to it).
	rdb redis.UniversalClient
	// prefix starts the test's Redis keys.
	prefix string
	api    *httpapi.API
	svc    *approval.Service
	clock  *clocktest.Clock
	doc    *apitest.Doc
	// receipts verifies the receipts the API hands out; signer signs
	// them.
	receipts *receipt.KeySet
	signer   *receipt.Signer
}

type envOptions struct {
	// backoff between callback attempts; default 10ms.
	backoff time.Duration
	// waiter, when set, stands between the API and the store's Tokens.
	waiter *spyWaiter
	// publicCallbacksOnly runs the API as in production: callback URLs to
	// internal addresses are refused.
	publicCallbacksOnly bool
	// maxOpen and rate are the keys' quotas; zero: the defaults.
	maxOpen int
	rate    float64
}

func newEnv(t *testing.T, opts envOptions) *env {
	t.Helper()
	clock := &clocktest.Clock{}
	sys := systest.New(t, systest.Options{
		Routes: systest.ParseRoutes(t, routesYAML), Now: clock.Now,
		Log: systest.NewLog(t, slog.LevelDebug, keyBilling, keySupport),
	})
	keys, err := httpapi.ParseKeys(testKeys)
	if err != nil {
		t.Fatal(err)
	}
	var waiter httpapi.Waiter = sys.Tokens
	if opts.waiter != nil {
		opts.waiter.Waiter = sys.Tokens
		waiter = opts.waiter
	}
	api, err := httpapi.New(httpapi.Config{Keys: keys, Approvals: sys.Service, Store: sys.Store, Waiter: waiter, Routes: sys.Routes, Log: sys.Log, AllowPrivateCallbacks: !opts.publicCallbacksOnly,
		Resolver: fakeDNS, MaxOpen: opts.maxOpen, Rate: opts.rate, Receipts: sys.Signer})
	if err != nil {
		t.Fatal(err)
	}
	if opts.backoff == 0 {
		opts.backoff = 10 * time.Millisecond
	}
	cbs := httpapi.NewCallbacks(httpapi.CallbacksConfig{
		Keys: keys, Store: sys.Store, Queue: sys.Store.CallbackQueue(0), Consumer: "test-replica", AllowPrivate: true,
		Backoff: func(int) time.Duration { return opts.backoff }, Poll: 20 * time.Millisecond,
		Now: clock.Now, Log: sys.Log, Receipts: sys.Signer,
	})
	sys.Go("callbacks", cbs.Run)
	srv := httptest.NewServer(api)
	// Before the system stops (systest.New's cleanup, registered first).
	t.Cleanup(func() {
		api.Close()
		srv.Close()
	})
	return &env{t: t, sys: sys, srv: srv, poster: sys.Cards, store: sys.Store, rdb: sys.Redis, prefix: sys.Prefix, api: api, svc: sys.Service, clock: clock, doc: apitest.Load(t), receipts: sys.Receipts, signer: sys.Signer}
}

// card is a call's card, as the store recorded where it was posted.
type card struct {
	token, callID string
	ref           approval.MessageRef
}

// card waits for the card of a call and returns it.
func (e *env) card(token, callID string) card {
	e.t.Helper()
	var found card
	e.waitFor("the card of "+callID, func() bool {
		rec, err := e.store.Get(e.t.Context(), token)
		if err != nil {
			return false
		}
		c := rec.Call(callID)
		if c == nil || c.Message.ID == "" {
			return false
		}
		found = card{token: token, callID: callID, ref: c.Message}
		return true
	})
	return found
}

// shown returns the call as its card was last updated to show it, and
// whether it was updated at all.
func (e *env) shown(c card) (approval.Call, bool) { return e.poster.Shown(c.token, c.callID) }

// waitShown waits until the card of c shows the call in status.
func (e *env) waitShown(c card, status approval.CallStatus) approval.Call {
	e.t.Helper()
	var got approval.Call
	e.waitFor("the card of "+c.callID+" to show "+string(status), func() bool {
		var ok bool
		got, ok = e.shown(c)
		return ok && got.Status == status
	})
	return got
}

// click decides the call of a card as user clicking it in Slack does:
// the Service's Decide, from the card, as a person.
func (e *env) click(user string, c card, action approval.Action) {
	e.t.Helper()
	e.decide(user, c, approval.Decision{CallID: c.callID, By: user, Action: action})
}

// deny denies the call of a card with a reason, as the deny-reason form.
func (e *env) deny(user string, c card, reason string) {
	e.t.Helper()
	e.decide(user, c, approval.Decision{CallID: c.callID, By: user, Action: approval.ActionDeny, Reason: reason})
}

func (e *env) decide(user string, c card, d approval.Decision) {
	e.t.Helper()
	_, err := e.svc.Decide(e.t.Context(), c.token, approval.Decider{User: user, Message: c.ref}, d)
	if err != nil && approval.ErrorCode(err) != approval.ERESOLVED && approval.ErrorCode(err) != approval.EDECIDED {
		e.t.Fatalf("%s decides %s: %v", user, c.callID, err)
	}
}

// response is an API response; body is checked against the OpenAPI
// document before the test sees it.
type response struct {
	status int
	header http.Header
	body   []byte
}

// approvalJSON is the JSON of an approval request.
type approvalJSON struct {
	Token     string     `json:"token"`
	Status    string     `json:"status"`
	CreatedAt time.Time  `json:"created_at"`
	ExpiresAt time.Time  `json:"expires_at"`
	EndedAt   *time.Time `json:"ended_at"`
	Requester string     `json:"requester"`
	Context   string     `json:"context"`
	Calls     []struct {
		ToolCallID string  `json:"tool_call_id"`
		ToolName   string  `json:"tool_name"`
		Kind       string  `json:"kind"`
		State      string  `json:"state"`
		Route      string  `json:"route"`
		DecidedBy  *string `json:"decided_by"`
		ByClient   bool    `json:"by_client"`
		Votes      int     `json:"votes"`
		Required   int     `json:"required"`
	} `json:"calls"`
	Results json.RawMessage `json:"results"`
}

type apiError struct {
	Error struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

func (r response) approval(t *testing.T) approvalJSON {
	t.Helper()
	var a approvalJSON
	if err := json.Unmarshal(r.body, &a); err != nil {
		t.Fatalf("decode approval: %v in %s", err, r.body)
	}
	return a
}

func (r response) apiError(t *testing.T) apiError {
	t.Helper()
	var e apiError
	if err := json.Unmarshal(r.body, &e); err != nil {
		t.Fatalf("decode error: %v in %s", err, r.body)
	}
	return e
}

// request is an API request: a key ("" sends none), a method and path,
// and a body (a string or []byte is sent as is, anything else as JSON).
type request struct {
	key         string
	method      string
	path        string
	body        any
	contentType string
}

// do sends req and checks the response against the OpenAPI document.
func (e *env) do(req request) response {
	e.t.Helper()
	var body io.Reader
	switch b := req.body.(type) {
	case nil:
	case string:
		body = strings.NewReader(b)
	case []byte:
		body = bytes.NewReader(b)
	default:
		j, err := json.Marshal(b)
		if err != nil {
			e.t.Fatal(err)
		}
		body = bytes.NewReader(j)
	}
	r, err := http.NewRequestWithContext(e.t.Context(), req.method, e.srv.URL+req.path, body)
	if err != nil {
		e.t.Fatal(err)
	}
	if req.key != "" {
		r.Header.Set("Authorization", "Bearer "+req.key)
	}
	if req.body != nil {
		ct := req.contentType
		if ct == "" {
			ct = "application/json"
		}
		r.Header.Set("Content-Type", ct)
	}
	resp, err := http.DefaultClient.Do(r)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		e.t.Fatal(err)
	}
	out := response{status: resp.StatusCode, header: resp.Header, body: b}
	e.doc.Check(e.t, req.method, r.URL.Path, out.status, out.header, out.body)
	return out
}

// create posts a create request for key and returns the approval, failing
// the test unless the status is 201.
func (e *env) create(key string, body any) approvalJSON {
	e.t.Helper()
	resp := e.do(request{key: key, method: http.MethodPost, path: "/v1/approvals", body: body})
	if resp.status != http.StatusCreated {
		e.t.Fatalf("create: got status %d, want 201: %s", resp.status, resp.body)
	}
	return resp.approval(e.t)
}

// waitFor polls cond until it holds, failing after 10 seconds. It bounds
// a wait; it asserts nothing about speed.
func (e *env) waitFor(what string, cond func() bool) {
	e.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			e.t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// auditOf returns the audit events of a token.
func (e *env) auditOf(token string) []store.AuditEvent {
	e.t.Helper()
	evs, err := e.store.ReadAudit(e.t.Context(), "", 0)
	if err != nil {
		e.t.Fatal(err)
	}
	var out []store.AuditEvent
	for _, ev := range evs {
		if ev.Token == token {
			out = append(out, ev)
		}
	}
	return out
}

// receiptless verifies the receipt of every call results (of token)
// approve — for the call's tool and the arguments that run — fails t for
// an approved call without one or a receipt on another call, and returns
// results without the receipts, for comparing the rest.
func (e *env) receiptless(t *testing.T, token string, results json.RawMessage) json.RawMessage {
	t.Helper()
	rec, err := e.store.Get(t.Context(), token)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Metadata map[string]map[string]any `json:"metadata"`
	}
	if err := json.Unmarshal(results, &doc); err != nil {
		t.Fatal(err)
	}
	res := agentrunner.NewDeferredToolResults()
	if err := json.Unmarshal(results, res); err != nil {
		t.Fatal(err)
	}
	for id, md := range res.Metadata {
		a, approved := res.Approvals[id]
		jws := receipt.FromMetadata(md)
		if jws == "" {
			continue
		}
		if !approved || !a.Approved {
			t.Errorf("call %s has a receipt but is not approved", id)
			continue
		}
		if c := rec.Call(id); c != nil && c.ByClient {
			t.Errorf("call %s, approved by the request's own client, has a receipt", id)
		}
		call, _ := rec.Requests.Call(id)
		if len(a.OverrideArgs) > 0 {
			call.Args = a.OverrideArgs
		}
		args, err := call.ArgsObject()
		if err != nil {
			t.Fatal(err)
		}
		if _, err := e.receipts.Verify(jws, receipt.Expect{CallID: id, Tool: call.ToolName, Args: args, Token: token, Now: e.clock.Now()}); err != nil {
			t.Errorf("receipt of %s: %v", id, err)
		}
		delete(md, receipt.MetadataKey)
		if len(md) == 0 {
			delete(res.Metadata, id)
		}
	}
	for id, a := range res.Approvals {
		if !a.Approved || receipt.FromMetadata(doc.Metadata[id]) != "" {
			continue
		}
		// Only a call the request's own client approved has none, saying why.
		if c := rec.Call(id); c == nil || !c.ByClient || doc.Metadata[id][receipt.ErrorMetadataKey] == nil {
			t.Errorf("approved call %s has no receipt: %s", id, results)
		}
		delete(res.Metadata[id], receipt.ErrorMetadataKey)
		if len(res.Metadata[id]) == 0 {
			delete(res.Metadata, id)
		}
	}
	out, err := json.Marshal(res)
	if err != nil {
		t.Fatal(err)
	}
	return out
}
