package httpapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/slackapprove/slackbot/agentrunner"
	"github.com/slackapprove/slackbot/approval"
	"github.com/slackapprove/slackbot/httpapi"
	"github.com/slackapprove/slackbot/internal/apitest"
	"github.com/slackapprove/slackbot/internal/clocktest"
	"github.com/slackapprove/slackbot/receipt"
	"github.com/slackapprove/slackbot/routing"
	"github.com/slackapprove/slackbot/store"
	"github.com/slackapprove/slackbot/store/redistest"
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

// env is the HTTP API over a real approval.Service on a real store
// (Redis), with the store's background loops and the callback deliverer,
// and a fake Poster in place of Slack: the handlers' level. The whole app
// (Slack cards, clicks, the clients' tests) is cmd/slackbot's harness.
type env struct {
	t      *testing.T
	srv    *httptest.Server
	poster *poster
	store  *store.Store
	// rdb is the store's Redis client (tests add hooks to it).
	rdb redis.UniversalClient
	// prefix starts the test's Redis keys.
	prefix string
	api    *httpapi.API
	svc    *approval.Service
	clock  *clocktest.Clock
	log    *bytes.Buffer
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
	rdb, prefix := redistest.Embedded(t)
	clock := &clocktest.Clock{}
	var logBuf bytes.Buffer
	log := slog.New(slog.NewTextHandler(&lockedWriter{w: &logBuf}, &slog.HandlerOptions{Level: slog.LevelDebug}))
	rk, err := receipt.NewKey([]byte("httpapi-test-receipt-key-32bytes"))
	if err != nil {
		t.Fatal(err)
	}
	signer, err := receipt.NewSigner(rk, "", 0)
	if err != nil {
		t.Fatal(err)
	}
	st := store.New(rdb, store.Options{Prefix: prefix, Now: clock.Now})
	routes, err := routing.ParseRoutes([]byte(routesYAML), "routes.yaml")
	if err != nil {
		t.Fatal(err)
	}
	p := newPoster(routes)
	svc := approval.New(approval.Config{Store: st, Poster: p, Routes: routes, Log: log, Now: clock.Now})
	ev := store.NewTokens(st, store.TokensOptions{
		SweepEvery: 20 * time.Millisecond, Logger: log,
		// No job consumer runs here: the expired requests' cards are
		// updated at once, as the job the sweep queued would.
		Sweep: func(ctx context.Context) error {
			expired, err := svc.Sweep(ctx)
			for _, a := range expired {
				if err := svc.Expire(ctx, a.Token); err != nil {
					log.ErrorContext(ctx, "update expired cards", "err", err)
				}
			}
			return err
		},
	})
	keys, err := httpapi.ParseKeys(testKeys)
	if err != nil {
		t.Fatal(err)
	}
	var waiter httpapi.Waiter = ev
	if opts.waiter != nil {
		opts.waiter.Waiter = ev
		waiter = opts.waiter
	}
	api, err := httpapi.New(httpapi.Config{Keys: keys, Approvals: svc, Store: st, Waiter: waiter, Routes: routes, Log: log, AllowPrivateCallbacks: !opts.publicCallbacksOnly,
		Resolver: fakeDNS, MaxOpen: opts.maxOpen, Rate: opts.rate, Receipts: signer})
	if err != nil {
		t.Fatal(err)
	}
	if opts.backoff == 0 {
		opts.backoff = 10 * time.Millisecond
	}
	cbs := httpapi.NewCallbacks(httpapi.CallbacksConfig{
		Keys: keys, Store: st, Queue: st.CallbackQueue(0), Consumer: "test-replica", AllowPrivate: true,
		Backoff: func(int) time.Duration { return opts.backoff }, Poll: 20 * time.Millisecond,
		Now: clock.Now, Log: log, Receipts: signer,
	})

	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() {
		if err := ev.Run(ctx); err != nil {
			t.Errorf("events: %v", err)
		}
	})
	wg.Go(func() {
		if err := cbs.Run(ctx); err != nil {
			t.Errorf("callbacks: %v", err)
		}
	})
	select {
	case <-ev.Ready():
	case <-time.After(10 * time.Second):
		t.Fatal("events subscriber not ready")
	}
	srv := httptest.NewServer(api)
	t.Cleanup(func() {
		api.Close()
		srv.Close()
		svc.Close()
		cancel()
		wg.Wait()
		if strings.Contains(logBuf.String(), keyBilling) || strings.Contains(logBuf.String(), keySupport) {
			t.Errorf("a bearer key is in the log")
		}
	})
	return &env{t: t, srv: srv, poster: p, store: st, rdb: rdb, prefix: prefix, api: api, svc: svc, clock: clock, log: &logBuf, doc: apitest.Load(t), receipts: receipt.NewKeySet(rk), signer: signer}
}

// poster is the Slack side as the Service sees it: it records the cards
// posted, per channel, and the state each card was last updated to.
type poster struct {
	routes *routing.Routes

	mu      sync.Mutex
	n       int
	posted  map[string][]string            // channel -> token/call of each card
	updated map[string]approval.Call       // token/call -> the call as last shown
	refs    map[string]approval.MessageRef // token/call -> its card
}

func newPoster(routes *routing.Routes) *poster {
	return &poster{routes: routes, posted: map[string][]string{}, updated: map[string]approval.Call{}, refs: map[string]approval.MessageRef{}}
}

func (p *poster) Post(_ context.Context, r *approval.Request, c *approval.Call) (approval.MessageRef, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	channel := ""
	for _, rt := range p.routes.Routes {
		if rt.Name == c.Route {
			channel = rt.Channel
		}
	}
	p.n++
	ref := approval.MessageRef{Channel: channel, ID: fmt.Sprintf("1700000000.%06d", p.n)}
	p.posted[channel] = append(p.posted[channel], r.Token+"/"+c.ID)
	p.refs[r.Token+"/"+c.ID] = ref
	return ref, nil
}

func (p *poster) Update(_ context.Context, r *approval.Request, c *approval.Call) (approval.MessageRef, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.updated[r.Token+"/"+c.ID] = *c
	return c.Message, nil
}

// cards returns how many cards were posted to channel.
func (p *poster) cards(channel string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.posted[channel])
}

// cardsOf returns how many cards were posted for token, in any channel.
func (p *poster) cardsOf(token string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
	for _, keys := range p.posted {
		for _, k := range keys {
			if strings.HasPrefix(k, token+"/") {
				n++
			}
		}
	}
	return n
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
func (e *env) shown(c card) (approval.Call, bool) {
	e.poster.mu.Lock()
	defer e.poster.mu.Unlock()
	got, ok := e.poster.updated[c.token+"/"+c.callID]
	return got, ok
}

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

type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
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
