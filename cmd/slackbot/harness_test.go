package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/slack-go/slack"
	"go.opentelemetry.io/otel/trace"

	"github.com/slackapprove/slackbot/agentrunner"
	"github.com/slackapprove/slackbot/approval"
	"github.com/slackapprove/slackbot/bot"
	"github.com/slackapprove/slackbot/httpapi"
	"github.com/slackapprove/slackbot/internal/clocktest"
	"github.com/slackapprove/slackbot/internal/slackfake"
	"github.com/slackapprove/slackbot/internal/slackfaketest"
	"github.com/slackapprove/slackbot/internal/slacktest"
	"github.com/slackapprove/slackbot/internal/systest"
	"github.com/slackapprove/slackbot/routing"
	"github.com/slackapprove/slackbot/store"
	"github.com/slackapprove/slackbot/store/redistest"
)

// TestMain runs up to minParallel tests at once (or GOMAXPROCS, if more)
// unless -parallel says otherwise: most of these tests wait, on processes
// they started, a takeover, a timeout or a shutdown, rather than compute.
// A whole run (no -run, not -short) builds the program for the tests that
// start it as processes while the first tests run.
func TestMain(m *testing.M) {
	var err error
	if pkgDir, err = os.Getwd(); err != nil {
		fmt.Fprintln(os.Stderr, "working directory:", err)
		os.Exit(2)
	}
	if f := flag.Lookup("test.parallel"); f != nil {
		// The command line, parsed next, still overrides this.
		_ = f.Value.Set(strconv.Itoa(max(minParallel, runtime.GOMAXPROCS(0))))
	}
	flag.Parse()
	if f := flag.Lookup("test.run"); f != nil && f.Value.String() == "" && !testing.Short() {
		go buildSlackbot()
	}
	code := redistest.Run(m)
	removeSlackbot()
	os.Exit(code)
}

// minParallel is how many tests run at once on a small machine.
const minParallel = 4

// cpuTurns lets one test at a time of those that keep every core busy
// (headless Chromium, tsc, the chaos soak's 200 runs on two processes)
// run, so that they do not slow each other past their own bounds; the
// tests that mostly wait run beside them.
var cpuTurns = make(chan struct{}, 1)

// cpuTurn waits for t's turn among the tests that keep every core busy,
// and gives it back when t ends.
func cpuTurn(t *testing.T) {
	t.Helper()
	asked := time.Now()
	cpuTurns <- struct{}{}
	t.Logf("cpuTurn: waited %s for a turn", time.Since(asked).Round(time.Millisecond))
	t.Cleanup(func() { <-cpuTurns })
}

const (
	testSecret  = "test-signing-secret-0123456789"
	approvalsCh = "C0APPROVALS"
	general     = "C0GENERAL"
	alice       = "U0ALICE"
	bob         = "U0BOB"
	carol       = "U0CAROL"
	dave        = "U0DAVE" // in the workspace, approver of nothing
	testTeam    = "T0FAKE"
	otherTeamID = "T0OTHER"
)

// testRoutes: deletions need one of alice and bob; deploys need both;
// refunds may be approved by their requester (alice); the rest goes to a
// route nobody but bob decides.
const testRoutes = `
default_timeout: 1h
routes:
  - name: deploys
    when: {tools: ["deploy_*"]}
    channel: C0APPROVALS
    approvers: {users: [U0ALICE, U0BOB]}
    required_approvals: 2
  - name: refunds
    when: {tools: ["issue_refund"]}
    channel: C0APPROVALS
    approvers: {users: [U0ALICE]}
    allow_self_approval: true
  - name: deletions
    when: {tools: ["delete_*"]}
    channel: C0APPROVALS
    approvers: {users: [U0ALICE, U0BOB]}
    timeout: 30m
`

// testTools are tools that count their runs and remember their arguments.
type testTools struct {
	mu   sync.Mutex
	runs map[string][]json.RawMessage
}

func (tt *testTools) record(name string, args any) {
	b, _ := json.Marshal(args)
	tt.mu.Lock()
	defer tt.mu.Unlock()
	if tt.runs == nil {
		tt.runs = map[string][]json.RawMessage{}
	}
	tt.runs[name] = append(tt.runs[name], b)
}

// Runs returns the arguments of every run of tool.
func (tt *testTools) Runs(tool string) []json.RawMessage {
	tt.mu.Lock()
	defer tt.mu.Unlock()
	return append([]json.RawMessage(nil), tt.runs[tool]...)
}

type customerArgs struct {
	CustomerID string `json:"customer_id"`
}

type deployArgs struct {
	Service string `json:"service"`
	Version string `json:"version"`
}

type refundArgs struct {
	OrderID string  `json:"order_id"`
	Amount  float64 `json:"amount"`
}

func (tt *testTools) tools() []*agentrunner.Tool {
	return []*agentrunner.Tool{
		agentrunner.NewTool("delete_customer", "Delete a customer.",
			func(_ context.Context, _ *agentrunner.ToolContext, a customerArgs) (any, error) {
				tt.record("delete_customer", a)
				return "deleted " + a.CustomerID, nil
			}, agentrunner.RequiresApproval()),
		agentrunner.NewTool("deploy_service", "Deploy a service.",
			func(_ context.Context, _ *agentrunner.ToolContext, a deployArgs) (any, error) {
				tt.record("deploy_service", a)
				return fmt.Sprintf("deployed %s@%s", a.Service, a.Version), nil
			}, agentrunner.RequiresApproval()),
		agentrunner.NewTool("issue_refund", "Refund an order.",
			func(_ context.Context, _ *agentrunner.ToolContext, a refundArgs) (any, error) {
				tt.record("issue_refund", a)
				return fmt.Sprintf("refunded %.2f on %s", a.Amount, a.OrderID), nil
			}, agentrunner.RequiresApproval()),
		agentrunner.NewTool("lookup_order", "Look up an order.",
			func(_ context.Context, _ *agentrunner.ToolContext, a refundArgs) (any, error) {
				tt.record("lookup_order", a)
				return "order " + a.OrderID, nil
			}),
	}
}

// env is a running slackbot (its real handler and background loops) with
// a fake Slack Web API and a real Redis.
type env struct {
	t      *testing.T
	app    *app
	srv    *httptest.Server
	slack  *slackfake.Server
	tools  *testTools
	clock  *clocktest.Clock
	prefix string
}

type envOptions struct {
	model  agentrunner.Model
	routes string
	retry  bot.Retry
	fake   []slackfake.Option
	// sleepOnClock makes Slack retries wait on the test clock.
	sleepOnClock bool
	// extraTools are offered besides the test tools.
	extraTools []*agentrunner.Tool
	// redis, when set, is the Redis the app uses (keys under a fresh
	// prefix) instead of the shared test Redis: fault tests restart it.
	redis redis.UniversalClient
	// slackMiddleware, when set, wraps the fake Slack Web API, so a test can
	// inject faults slackfake has no switch for (a response that comes too
	// late, after Slack acted).
	slackMiddleware func(http.Handler) http.Handler
	// tracer, when set, traces the app, its Slack client and its Redis
	// client as serve does with OTEL_* set.
	tracer trace.TracerProvider
	// apiKeys, when set, enables the HTTP API (/v1) for these API_KEYS,
	// with callbacks to loopback allowed (as in dev).
	apiKeys string
	// wallClock runs the clock with the wall clock (plus what a test
	// adds) instead of standing still: waits that the clock bounds (a
	// request's timeout) pass in real time, as an agent's client expects.
	wallClock bool
	// waitReplicas is REDIS_WAIT_REPLICAS (with redis, a primary that has
	// replicas).
	waitReplicas int
	// passkeys and publicURL are the step-up pages (appDeps.Passkeys,
	// PUBLIC_URL); nil and "": none.
	passkeys  func(*approval.Service, func(ctx context.Context, team, user, text string)) (bot.Passkeys, error)
	publicURL string
}

func newEnv(t *testing.T, opts envOptions) *env {
	t.Helper()
	var rdb redis.UniversalClient
	var prefix string
	var err error
	if opts.redis != nil {
		rdb, prefix = opts.redis, redistest.Prefix(t)
	} else {
		rdb, prefix = redistest.Client(t)
	}
	clock := clocktest.Stopped(time.Now())
	if opts.wallClock {
		clock = &clocktest.Clock{}
	}
	var apiKeys []httpapi.Key
	if opts.apiKeys != "" {
		if apiKeys, err = httpapi.ParseKeys(opts.apiKeys); err != nil {
			t.Fatal(err)
		}
	}
	fakeOpts := append([]slackfake.Option{slackfake.WithDemoWorkspace(), slackfake.WithClock(clock.Now),
		slackfake.WithUsers(slackfake.User{ID: dave, Name: "dave", RealName: "Dave Bystander", DisplayName: "Dave"})}, opts.fake...)
	var fake *slackfake.Server
	var fakeSrv *httptest.Server
	if opts.slackMiddleware != nil {
		fake = slackfake.New(fakeOpts...)
		fakeSrv = httptest.NewServer(opts.slackMiddleware(fake))
		t.Cleanup(fakeSrv.Close)
	} else {
		fake, fakeSrv = slackfaketest.NewTestServer(t, fakeOpts...)
	}
	client := slack.New(fake.Token(), slack.OptionAPIURL(slackfaketest.APIURL(fakeSrv)))
	if opts.tracer != nil {
		client = slack.New(fake.Token(), slack.OptionAPIURL(slackfaketest.APIURL(fakeSrv)), slack.OptionHTTPClient(slackHTTPClient(opts.tracer)))
		if err := traceRedis(rdb, opts.tracer); err != nil {
			t.Fatal(err)
		}
	}
	if opts.routes == "" {
		opts.routes = testRoutes
	}
	routes, err := routing.ParseRoutes([]byte(opts.routes), "test-routes.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if opts.model == nil {
		opts.model = agentrunner.TestModel{CallTools: []string{"delete_customer"}}
	}
	tools := &testTools{}
	if opts.sleepOnClock {
		// Waits (Retry-After, backoff) pass on the test clock at once.
		opts.retry.Sleep = func(_ context.Context, d time.Duration) error { clock.Add(d); return nil }
	}
	// The app's log is kept, shown if the test fails, and must hold no
	// secret (systest.Log, as the doors' harnesses).
	secrets := []string{testSecret, fake.Token()}
	for _, k := range apiKeys {
		secrets = append(secrets, k.Secret)
	}
	a, err := newApp(t.Context(), appDeps{
		Log:   systest.NewLog(t, slog.LevelInfo, secrets...).Logger,
		Redis: rdb, StoreOptions: store.Options{Prefix: prefix, Now: clock.Now, WaitReplicas: opts.waitReplicas},
		Slack: client, SigningSecret: testSecret, TeamID: testTeam, BotUserID: fake.BotUserID(),
		Routes: routes, Model: opts.model, Tools: append(tools.tools(), opts.extraTools...),
		SweepEvery: 20 * time.Millisecond, Retry: opts.retry, ResumeBlock: 100 * time.Millisecond,
		APIKeys: apiKeys, AllowPrivateCallbacks: true, Tracer: opts.tracer,
		Passkeys: opts.passkeys, PublicURL: opts.publicURL,
	})
	if err != nil {
		t.Fatal(err)
	}
	srv := serveApp(t, a, "events subscriber")
	return &env{t: t, app: a, srv: srv, slack: fake, tools: tools, clock: clock, prefix: prefix}
}

// serveApp runs a's background loops (start, without an HTTP server or
// Socket Mode) and serves its handler until the test ends, when a shuts
// down as on SIGTERM (lifecycle.Shutdown). It waits for a's events
// subscriber, which what names in the failure if it never gets ready.
func serveApp(t *testing.T, a *app, what string) *httptest.Server {
	t.Helper()
	l, _ := start(a, nil, nil, nil)
	select {
	case <-a.tokens.Ready():
	case <-time.After(10 * time.Second):
		t.Fatal(what + " not ready")
	}
	srv := httptest.NewServer(a.handler())
	t.Cleanup(func() {
		srv.Close()
		ctx, stop := context.WithTimeout(context.Background(), 10*time.Second)
		defer stop()
		if err := l.Shutdown(ctx); err != nil {
			t.Errorf("shutdown: %v", err)
		}
	})
	return srv
}

// post sends a signed request to path as Slack would, signed at ts.
func (e *env) post(path, contentType string, body []byte, ts time.Time, secret string) *http.Response {
	e.t.Helper()
	resp, err := slacktest.Post(e.t.Context(), e.srv.URL+path, contentType, body, secret, ts)
	if err != nil {
		e.t.Fatal(err)
	}
	return resp
}

var eventSeq atomic.Int64

// mention posts "<@bot> text" as user in channel, and sends Slack's signed
// app_mention event for it. It returns the message's ts (the thread).
func (e *env) mention(user, channel, text string) string {
	e.t.Helper()
	full := "<@" + e.slack.BotUserID() + "> " + text
	msg, err := e.slack.PostAsUser(channel, user, full, "")
	if err != nil {
		e.t.Fatal(err)
	}
	body := slacktest.Mention{
		Team: testTeam, EventID: fmt.Sprintf("Ev%08d", eventSeq.Add(1)),
		User: user, Channel: channel, Text: full, TS: msg.TS,
	}.Body()
	resp := e.post("/slack/events", slacktest.JSONContentType, body, time.Now(), testSecret)
	if resp.StatusCode != http.StatusOK {
		e.t.Fatalf("app_mention: got status %d", resp.StatusCode)
	}
	return msg.TS
}

// waitFor polls cond until it holds, failing the test after waitBound
// (a loaded CI machine running every package under -race is slow; a
// bound, not a measure). It asserts nothing about speed.
func (e *env) waitFor(what string, cond func() bool) {
	e.t.Helper()
	deadline := time.Now().Add(waitBound)
	for !cond() {
		if time.Now().After(deadline) {
			e.t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// waitBound bounds every wait of the harness: only a hang reaches it. 30 s
// was reached by a card update on a clean-clone run beside other builds
// and tests (load average 13 on 2 cores), so it is twice that.
const waitBound = 60 * time.Second

// cards returns the approval cards in #approvals, oldest first.
func (e *env) cards() []slackfake.Message {
	var out []slackfake.Message
	for _, m := range e.slack.Messages(approvalsCh) {
		if m.ThreadTS == "" && len(m.Blocks) > 0 {
			out = append(out, m)
		}
	}
	return out
}

// waitCards waits until n cards are in #approvals. Its bound is on
// progress, not on the whole: it fails when no new card has appeared for
// waitBound, so a burst of hundreds of cards through a rate limit on a
// loaded machine is not cut off while it is still being posted.
func (e *env) waitCards(n int) []slackfake.Message {
	e.t.Helper()
	seen, moved := -1, time.Now()
	for {
		cards := e.cards()
		if len(cards) >= n {
			return cards
		}
		if len(cards) != seen {
			seen, moved = len(cards), time.Now()
		}
		if time.Since(moved) > waitBound {
			e.t.Fatalf("timed out waiting for %d approval cards: %d posted, none new for %v", n, seen, waitBound)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// button finds the button with actionID on a card, failing the test if
// there is none.
func button(t *testing.T, m slackfake.Message, actionID string) *slack.ButtonBlockElement {
	t.Helper()
	btn, ok := slacktest.Button(m, actionID)
	if !ok {
		t.Fatalf("card %s has no %q button", m.TS, actionID)
	}
	return btn
}

// clickPayload is the form body of user in team clicking a card's button,
// as Slack posts it.
func (e *env) clickPayload(user, team string, m slackfake.Message, actionID string) []byte {
	e.t.Helper()
	return slacktest.Form(slacktest.Click{Team: team, User: user, Message: m, Button: button(e.t, m, actionID)}.Payload())
}

// click sends a signed block_actions payload and returns the status.
func (e *env) click(user string, m slackfake.Message, actionID string) int {
	e.t.Helper()
	resp := e.post("/slack/interactivity", slacktest.FormContentType,
		e.clickPayload(user, testTeam, m, actionID), time.Now(), testSecret)
	return resp.StatusCode
}

// submit sends a signed view_submission for the open view with the given
// input values, and returns the response body (empty when the modal closes).
func (e *env) submit(user string, view slackfake.View, values map[string]map[string]string) string {
	e.t.Helper()
	payload := slacktest.Submission{Team: testTeam, User: user, View: view, Values: values}.Payload()
	resp := e.post("/slack/interactivity", slacktest.FormContentType, slacktest.Form(payload), time.Now(), testSecret)
	if resp.StatusCode != http.StatusOK {
		e.t.Fatalf("view_submission: got status %d", resp.StatusCode)
	}
	b, _ := io.ReadAll(resp.Body)
	return strings.TrimSpace(string(b))
}

// replies returns the texts of the bot's replies in a thread.
func (e *env) replies(channel, thread string) []string {
	var out []string
	for _, m := range e.slack.Replies(channel, thread) {
		if m.TS != thread && m.User == e.slack.BotUserID() {
			out = append(out, m.Text)
		}
	}
	return out
}

// waitReply waits for the bot's first reply in a thread.
func (e *env) waitReply(channel, thread string) string {
	e.t.Helper()
	e.waitFor("an answer in the thread", func() bool { return len(e.replies(channel, thread)) > 0 })
	return e.replies(channel, thread)[0]
}

// cardText is everything a card shows, for assertions on what people see.
func cardText(m slackfake.Message) string {
	return string(m.BlocksJSON)
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

// ephemeralsFor returns the texts of the ephemeral messages user got.
func (e *env) ephemeralsFor(user string) []string {
	var out []string
	for _, m := range e.slack.Ephemerals(user) {
		out = append(out, m.Text)
	}
	return out
}
