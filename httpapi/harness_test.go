package httpapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/slack-go/slack"

	"github.com/slackapprove/slackbot/approval"
	"github.com/slackapprove/slackbot/bot"
	"github.com/slackapprove/slackbot/httpapi"
	"github.com/slackapprove/slackbot/internal/slackfake"
	"github.com/slackapprove/slackbot/internal/slackfaketest"
	"github.com/slackapprove/slackbot/internal/slacktest"
	"github.com/slackapprove/slackbot/store"
	"github.com/slackapprove/slackbot/store/redistest"
)

func TestMain(m *testing.M) { redistest.Main(m) }

// Keys of the test clients. opsbot may only use the ops route.
const (
	keyBilling = "billing-key-0123456789abcdef"
	keySupport = "support-key-0123456789abcdef"
	keyOps     = "opsbot-key-0123456789abcdef"
	testKeys   = "billing=" + keyBilling + ", support=" + keySupport + ", opsbot=" + keyOps + "@ops"
	testSecret = "test-signing-secret-0123456789"
	testTeam   = "T0FAKE"
	alice      = "U0ALICE"
	bob        = "U0BOB"
	approvals_ = "C0APPROVALS"
)

const routesYAML = `
default_timeout: 1h
routes:
  - name: refunds
    when: {tools: ["issue_refund"]}
    channel: C0APPROVALS
    approvers: {users: [U0ALICE]}
    auto_approve: 'args.amount <= 10'
    auto_deny: 'args.amount > 10000'
  - name: deletions
    when: {tools: ["delete_*"]}
    channel: C0APPROVALS
    approvers: {users: [U0ALICE, U0BOB]}
    timeout: 30m
  - name: ops
    when: {tools: ["deploy_*"]}
    channel: C0GENERAL
    approvers: {users: [U0BOB]}
    timeout: 10m
  - name: reports
    when: {tools: ["fetch_*"]}
    channel: C0APPROVALS
    approvers: {users: [U0ALICE]}
`

// testClock runs with the wall clock, plus whatever a test adds: tokens
// expire when the test moves it, while retries and signatures keep
// working.
type testClock struct {
	mu     sync.Mutex
	offset time.Duration
}

func (c *testClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return time.Now().Add(c.offset)
}

func (c *testClock) Add(d time.Duration) {
	c.mu.Lock()
	c.offset += d
	c.mu.Unlock()
}

// env is slackbot's Slack side and HTTP API, running on a real Redis and
// a fake Slack, with the store's background loops and the callback
// deliverer.
type env struct {
	t     *testing.T
	srv   *httptest.Server
	slack *slackfake.Server
	store *store.Store
	// rdb is the store's Redis client (tests add hooks to it).
	rdb redis.UniversalClient
	// prefix starts the test's Redis keys.
	prefix string
	api    *httpapi.API
	svc    *approval.Service
	clock  *testClock
	log    *bytes.Buffer
	doc    *openAPIDoc
}

type envOptions struct {
	// backoff between callback attempts; default 10ms.
	backoff time.Duration
	// waiter, when set, stands between the API and the store's Events.
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
	rdb, prefix := redistest.Client(t)
	clock := &testClock{}
	var logBuf bytes.Buffer
	log := slog.New(slog.NewTextHandler(&lockedWriter{w: &logBuf}, &slog.HandlerOptions{Level: slog.LevelDebug}))
	st := store.New(rdb, store.Options{Prefix: prefix, Now: clock.Now})
	fake, fakeSrv := slackfaketest.NewTestServer(t, slackfake.WithDemoWorkspace())
	routes, err := bot.ParseRoutes([]byte(routesYAML), "routes.yaml")
	if err != nil {
		t.Fatal(err)
	}
	b := bot.New(bot.Config{
		Slack:     slack.New(fake.Token(), slack.OptionAPIURL(slackfaketest.APIURL(fakeSrv))),
		Approvals: st, Runs: st, Routes: routes, TeamID: testTeam, Log: log, Now: clock.Now,
	})
	ev := store.NewEvents(st, store.EventsOptions{
		SweepEvery: 20 * time.Millisecond, Logger: log,
		OnExpired: func(ctx context.Context, a *approval.Request) {
			if err := b.UpdateCards(ctx, a.Token); err != nil {
				log.ErrorContext(ctx, "update expired cards", "err", err)
			}
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
	svc := approval.New(approval.Config{Store: st, Poster: b, Routes: routes, Log: log, Now: clock.Now})
	t.Cleanup(svc.Close)
	api, err := httpapi.New(httpapi.Config{Keys: keys, Approvals: svc, Store: st, Events: waiter, Routes: routes, Log: log, AllowPrivateCallbacks: !opts.publicCallbacksOnly,
		Resolver: fakeDNS, MaxOpen: opts.maxOpen, Rate: opts.rate})
	if err != nil {
		t.Fatal(err)
	}
	if opts.backoff == 0 {
		opts.backoff = 10 * time.Millisecond
	}
	cbs := httpapi.NewCallbacks(httpapi.CallbacksConfig{
		Keys: keys, Store: st, Queue: st.CallbackQueue(0), Consumer: "test-replica", AllowPrivate: true,
		Backoff: func(int) time.Duration { return opts.backoff }, Poll: 20 * time.Millisecond,
		Now: clock.Now, Log: log,
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
	mux := http.NewServeMux()
	mux.Handle("POST /slack/interactivity", bot.VerifySlack(testSecret, log, b.HandleInteraction()))
	mux.Handle("/v1/", api)
	srv := httptest.NewServer(mux)
	t.Cleanup(func() {
		api.Close()
		srv.Close()
		b.Close()
		cancel()
		wg.Wait()
		if strings.Contains(logBuf.String(), keyBilling) || strings.Contains(logBuf.String(), keySupport) {
			t.Errorf("a bearer key is in the log")
		}
	})
	return &env{t: t, srv: srv, slack: fake, store: st, rdb: rdb, prefix: prefix, api: api, svc: svc, clock: clock, log: &logBuf, doc: loadOpenAPI(t)}
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
	e.doc.check(e.t, req.method, r.URL.Path, out)
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

// card waits for the card of a call (where the store says it was
// posted) and returns its current version.
func (e *env) card(token, callID string) slackfake.Message {
	e.t.Helper()
	var found slackfake.Message
	e.waitFor("the card of "+callID, func() bool {
		rec, err := e.store.Get(e.t.Context(), token)
		if err != nil {
			return false
		}
		c := rec.Call(callID)
		if c == nil || c.Message.TS == "" {
			return false
		}
		var ok bool
		found, ok = e.slack.Message(c.Message.Channel, c.Message.TS)
		return ok
	})
	return found
}

// latest returns the current version of a message.
func (e *env) latest(m slackfake.Message) slackfake.Message {
	e.t.Helper()
	cur, ok := e.slack.Message(m.Channel, m.TS)
	if !ok {
		e.t.Fatalf("message %s vanished", m.TS)
	}
	return cur
}

// button finds the button with actionID on a card.
func button(m slackfake.Message, actionID string) (*slack.ButtonBlockElement, bool) {
	return slacktest.Button(m, actionID)
}

// slackPost sends an interactivity payload signed as Slack signs them and
// returns the status.
func (e *env) slackPost(ctx context.Context, payload []byte) (int, error) {
	resp, err := slacktest.Post(ctx, e.srv.URL+"/slack/interactivity", slacktest.FormContentType,
		slacktest.Form(payload), testSecret, time.Now())
	if err != nil {
		return 0, err
	}
	return resp.StatusCode, nil
}

// clickPayload is the block_actions payload of user clicking a card's
// button, with a trigger the fake Slack accepts for opening a modal.
func (e *env) clickPayload(user string, m slackfake.Message, btn *slack.ButtonBlockElement) []byte {
	return slacktest.Click{Team: testTeam, User: user, Message: m, Button: btn, TriggerID: e.slack.IssueTrigger(user, "")}.Payload()
}

// click sends the payload of user clicking a card's button.
func (e *env) click(user string, m slackfake.Message, actionID string) {
	e.t.Helper()
	btn, ok := button(m, actionID)
	if !ok {
		e.t.Fatalf("card %s has no %q button", m.TS, actionID)
	}
	status, err := e.slackPost(e.t.Context(), e.clickPayload(user, m, btn))
	if err != nil || status != http.StatusOK {
		e.t.Fatalf("click %s: got %d, %v", actionID, status, err)
	}
}

// submit sends the view_submission of the open view with the given inputs.
func (e *env) submit(user string, view slackfake.View, values map[string]map[string]string) {
	e.t.Helper()
	payload := slacktest.Submission{Team: testTeam, User: user, View: view, Values: values}.Payload()
	if status, err := e.slackPost(e.t.Context(), payload); err != nil || status != http.StatusOK {
		e.t.Fatalf("view_submission: got %d, %v", status, err)
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

// waitView waits for a modal with the given callback_id to open.
func (e *env) waitView(callbackID string) slackfake.View {
	e.t.Helper()
	var found slackfake.View
	e.waitFor("a "+callbackID+" modal", func() bool {
		for _, v := range e.slack.Views() {
			if v.CallbackID == callbackID {
				found = v
				return true
			}
		}
		return false
	})
	return found
}
