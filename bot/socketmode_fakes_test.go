package bot

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/slack-go/slack"

	"github.com/slackapprove/slackbot/agentrunner"
	"github.com/slackapprove/slackbot/approval"
	"github.com/slackapprove/slackbot/routing"
	"github.com/slackapprove/slackbot/runs"
)

// fakeSocketSlack is Slack's side of Socket Mode on a loopback port: it
// answers apps.connections.open for the app-level token it knows and
// accepts WebSocket connections on the URL it hands out. The test sends
// envelopes on a connection and reads the acknowledgements back.
type fakeSocketSlack struct {
	appToken string
	srv      *httptest.Server
	conns    chan *fakeSocketConn
	opens    atomic.Int32

	mu   sync.Mutex
	open []*websocket.Conn
}

// fakeSocketConn is one WebSocket connection, after Slack's hello.
type fakeSocketConn struct {
	ws   *websocket.Conn
	acks chan socketAck
	seen map[string]socketAck // acknowledgements read so far, by envelope
}

// socketAck is an acknowledgement as the client writes it.
type socketAck struct {
	EnvelopeID string          `json:"envelope_id"`
	Payload    json.RawMessage `json:"payload"`
}

func newFakeSocketSlack(t testing.TB, appToken string) *fakeSocketSlack {
	t.Helper()
	f := &fakeSocketSlack{appToken: appToken, conns: make(chan *fakeSocketConn, 8)}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /api/apps.connections.open", f.connectionsOpen)
	mux.HandleFunc("GET /link/", f.link)
	f.srv = httptest.NewServer(mux)
	t.Cleanup(func() {
		f.mu.Lock()
		for _, ws := range f.open {
			_ = ws.Close()
		}
		f.mu.Unlock()
		f.srv.Close()
	})
	return f
}

func (f *fakeSocketSlack) apiURL() string { return f.srv.URL + "/api/" }

func (f *fakeSocketSlack) connectionsOpen(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	if r.Header.Get("Authorization") != "Bearer "+f.appToken {
		_, _ = w.Write([]byte(`{"ok":false,"error":"invalid_auth"}`))
		return
	}
	f.opens.Add(1)
	_ = json.NewEncoder(w).Encode(map[string]any{
		"ok":  true,
		"url": "ws://" + r.Host + "/link/?ticket=" + smTicket + "&app_id=A0APP",
	})
}

func (f *fakeSocketSlack) link(w http.ResponseWriter, r *http.Request) {
	if r.URL.Query().Get("ticket") != smTicket {
		http.Error(w, "bad ticket", http.StatusUnauthorized)
		return
	}
	up := websocket.Upgrader{CheckOrigin: func(*http.Request) bool { return true }}
	ws, err := up.Upgrade(w, r, nil)
	if err != nil {
		return
	}
	f.mu.Lock()
	f.open = append(f.open, ws)
	f.mu.Unlock()
	hello := map[string]any{
		"type": "hello", "num_connections": 1,
		"debug_info":      map[string]any{"host": "applink-fake", "approximate_connection_time": 18060},
		"connection_info": map[string]any{"app_id": "A0APP"},
	}
	if err := ws.WriteJSON(hello); err != nil {
		return
	}
	c := &fakeSocketConn{ws: ws, acks: make(chan socketAck, 100), seen: map[string]socketAck{}}
	f.conns <- c
	defer close(c.acks)
	for {
		_, msg, err := ws.ReadMessage()
		if err != nil {
			return
		}
		var a socketAck
		if err := json.Unmarshal(msg, &a); err != nil {
			continue
		}
		c.acks <- a
	}
}

// next returns the next connection the client opened.
func (f *fakeSocketSlack) next(t testing.TB) *fakeSocketConn {
	t.Helper()
	select {
	case c := <-f.conns:
		return c
	case <-time.After(smWait):
		t.Fatalf("no Socket Mode connection within %s", smWait)
		return nil
	}
}

func (c *fakeSocketConn) send(t testing.TB, v any) {
	t.Helper()
	if err := c.ws.WriteJSON(v); err != nil {
		t.Fatalf("send envelope: %v", err)
	}
}

// ack waits for the acknowledgement of envelopeID and returns its payload
// as compact JSON ("" for an empty acknowledgement).
func (c *fakeSocketConn) ack(t testing.TB, envelopeID string) string {
	t.Helper()
	if a, ok := c.acked(envelopeID); ok {
		return compactJSON(t, a.Payload)
	}
	deadline := time.After(smWait)
	for {
		select {
		case a, ok := <-c.acks:
			if !ok {
				t.Fatalf("connection closed before envelope %s was acknowledged", envelopeID)
			}
			c.seen[a.EnvelopeID] = a
			if a.EnvelopeID == envelopeID {
				return compactJSON(t, a.Payload)
			}
		case <-deadline:
			t.Fatalf("envelope %s not acknowledged within %s", envelopeID, smWait)
		}
	}
}

// acked reports whether envelopeID's acknowledgement was read already.
func (c *fakeSocketConn) acked(envelopeID string) (socketAck, bool) {
	a, ok := c.seen[envelopeID]
	return a, ok
}

func compactJSON(t testing.TB, b []byte) string {
	t.Helper()
	b = bytes.TrimSpace(b)
	if len(b) == 0 || string(b) == "null" {
		return ""
	}
	var out bytes.Buffer
	if err := json.Compact(&out, b); err != nil {
		t.Fatalf("acknowledgement is not JSON: %v: %s", err, b)
	}
	return out.String()
}

// clickPayload is a block_actions payload: user clicked the button
// actionID, with value, on the approval card.
func clickPayload(user, actionID, value string) json.RawMessage {
	return mustJSON(map[string]any{
		"type": "block_actions", "user": map[string]any{"id": user}, "team": map[string]any{"id": smTeam},
		"trigger_id": "trigger-1", "api_app_id": "A0APP",
		"container": map[string]any{"type": "message", "channel_id": smCardChan, "message_ts": smCardTS},
		"channel":   map[string]any{"id": smCardChan}, "message": map[string]any{"ts": smCardTS},
		"actions": []any{map[string]any{"type": "button", "action_id": actionID, "block_id": "decide", "value": value}},
	})
}

// submitPayload is a view_submission payload: user submitted the modal
// callbackID, opened from the approval card of token, with input typed
// into its blockID/actionID.
func submitPayload(token, user, callbackID, blockID, actionID, input string) json.RawMessage {
	metadata := encodeModalMetadata(Card{Token: token, ToolCallID: smCallID}, approval.MessageRef{Channel: smCardChan, ID: smCardTS})
	return mustJSON(map[string]any{
		"type": "view_submission", "user": map[string]any{"id": user}, "team": map[string]any{"id": smTeam},
		"view": map[string]any{
			"id": "V0EDIT", "callback_id": callbackID, "private_metadata": metadata,
			"state": map[string]any{"values": map[string]any{
				blockID: map[string]any{actionID: map[string]any{"type": "plain_text_input", "value": input}},
			}},
		},
	})
}

// eventsEnvelope is an events_api request carrying event, as Slack sends
// it (retry > 0 for a redelivery).
func eventsEnvelope(envelopeID, eventID string, retry int, event map[string]any) map[string]any {
	reason := ""
	if retry > 0 {
		reason = "timeout"
	}
	return map[string]any{
		"envelope_id": envelopeID, "type": "events_api", "accepts_response_payload": false,
		"retry_attempt": retry, "retry_reason": reason,
		"payload": map[string]any{
			"token": "unused-verification-token", "team_id": smTeam, "api_app_id": "A0APP",
			"type": "event_callback", "event_id": eventID, "event_time": 1700000001, "event": event,
		},
	}
}

// interactiveEnvelope is an interactive request carrying payload.
func interactiveEnvelope(envelopeID string, payload json.RawMessage) map[string]any {
	return map[string]any{
		"envelope_id": envelopeID, "type": "interactive", "accepts_response_payload": true,
		"payload": payload,
	}
}

// logSink collects JSON log lines and lets a test wait for one.
type logSink struct {
	mu      sync.Mutex
	buf     bytes.Buffer
	changed chan struct{} // closed on every write
}

func newLogSink() *logSink { return &logSink{changed: make(chan struct{})} }

func (l *logSink) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	close(l.changed)
	l.changed = make(chan struct{})
	return l.buf.Write(p)
}

func (l *logSink) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

func (l *logSink) logger() *slog.Logger {
	return slog.New(slog.NewJSONHandler(l, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// waitFor waits until a log line contains s.
func (l *logSink) waitFor(t *testing.T, s string) {
	t.Helper()
	deadline := time.After(smWait)
	for {
		l.mu.Lock()
		found, changed := strings.Contains(l.buf.String(), s), l.changed
		l.mu.Unlock()
		if found {
			return
		}
		select {
		case <-changed:
		case <-deadline:
			t.Fatalf("no log line with %q within %s; logs:\n%s", s, smWait, l.String())
		}
	}
}

// checkNoSecrets fails t if the logs quote a token or the ticket.
func (l *logSink) checkNoSecrets(t *testing.T) {
	t.Helper()
	logs := l.String()
	for _, secret := range []string{smAppToken, smBotToken, smTicket} {
		if strings.Contains(logs, secret) {
			t.Errorf("logs contain the secret %q:\n%s", secret, logs)
		}
	}
}

// startSocketMode points sm at f with appToken and runs it until the
// returned stop is called (or the test ends). stop returns Run's result;
// when the test never calls it, Run must return nil.
func startSocketMode(t testing.TB, f *fakeSocketSlack, sm *SocketMode, appToken string) (stop func() error) {
	t.Helper()
	sm.Client = NewSocketModeClient(smBotToken, appToken, f.apiURL(), sm.Log)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- sm.Run(ctx) }()
	result := sync.OnceValue(func() error {
		cancel()
		select {
		case err := <-done:
			return err
		case <-time.After(smWait):
			return fmt.Errorf("Run did not return within %s of its context ending", smWait)
		}
	})
	var checked atomic.Bool
	t.Cleanup(func() {
		// A test that did not look at Run's result wants nil.
		if err := result(); err != nil && !checked.Load() {
			t.Errorf("Run: %v", err)
		}
	})
	return func() error {
		checked.Store(true)
		return result()
	}
}

// recordingSlack is a Slack Web API that succeeds and records each call
// in one line, e.g. "chat.update C0APPROVALS 1700000000.000100".
type recordingSlack struct {
	mu    sync.Mutex
	calls []string
}

func (s *recordingSlack) record(format string, args ...any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls = append(s.calls, fmt.Sprintf(format, args...))
}

func (s *recordingSlack) Calls() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Sorted(slices.Values(s.calls))
}

func msgValues(channel string, opts []slack.MsgOption) url.Values {
	_, v, _ := slack.UnsafeApplyMsgOptions("", channel, "", opts...)
	return v
}

func (s *recordingSlack) PostMessageContext(_ context.Context, channel string, opts ...slack.MsgOption) (string, string, error) {
	v := msgValues(channel, opts)
	s.record("chat.postMessage %s thread=%s %s", channel, v.Get("thread_ts"), v.Get("text"))
	return channel, "1700000099.000100", nil
}

func (s *recordingSlack) UpdateMessageContext(_ context.Context, channel, ts string, _ ...slack.MsgOption) (string, string, string, error) {
	s.record("chat.update %s %s", channel, ts)
	return channel, ts, "", nil
}

func (s *recordingSlack) PostEphemeralContext(_ context.Context, channel, user string, opts ...slack.MsgOption) (string, error) {
	s.record("chat.postEphemeral %s %s %s", channel, user, msgValues(channel, opts).Get("text"))
	return "1700000099.000200", nil
}

func (s *recordingSlack) OpenViewContext(_ context.Context, triggerID string, view slack.ModalViewRequest) (*slack.ViewResponse, error) {
	s.record("views.open %s %s", triggerID, view.CallbackID)
	return &slack.ViewResponse{}, nil
}

func (s *recordingSlack) GetUserGroupMembersContext(context.Context, string, ...slack.GetUserGroupMembersOption) ([]string, error) {
	return nil, nil
}

func (s *recordingSlack) AuthTestContext(context.Context) (*slack.AuthTestResponse, error) {
	return &slack.AuthTestResponse{TeamID: smTeam, UserID: smBotUser}, nil
}

func (s *recordingSlack) GetPermalinkContext(context.Context, *slack.PermalinkParameters) (string, error) {
	return "", nil
}

func (s *recordingSlack) GetConversationRepliesContext(context.Context, *slack.GetConversationRepliesParameters) ([]slack.Message, bool, string, error) {
	s.record("conversations.replies")
	return nil, false, "", nil
}

func (s *recordingSlack) GetConversationHistoryContext(context.Context, *slack.GetConversationHistoryParameters) (*slack.GetConversationHistoryResponse, error) {
	s.record("conversations.history")
	return &slack.GetConversationHistoryResponse{}, nil
}

// recordingApprovals holds one pending approval; it records decisions
// and refusals and applies decisions as the store would (first wins).
type recordingApprovals struct {
	stubStore
	mu        sync.Mutex
	a         *approval.Request
	decisions []approval.Decision // as decided, NotAfter left out (it is a clock reading)
	refusals  []clickRefusal
	// withoutDeadline counts the decisions that had no NotAfter.
	withoutDeadline int
	// withoutCardJob counts the decisions that named no durable card
	// update (Decision.CardJob).
	withoutCardJob int
}

func newRecordingApprovals() *recordingApprovals {
	return &recordingApprovals{a: &approval.Request{
		Token: agentrunner.NewToken(),
		RunID: "run_1",
		Requests: agentrunner.DeferredToolRequests{Approvals: []agentrunner.ToolCallPart{
			{ToolName: "issue_refund", Args: json.RawMessage(`{"order_id":"42","amount":50}`), ToolCallID: smCallID},
		}},
		Origin:    approval.Origin{Team: smTeam, Channel: "C0SUPPORT", ThreadTS: "1699999999.000100", User: smRequester},
		CreatedAt: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC),
		ExpiresAt: time.Date(2026, 1, 2, 4, 4, 5, 0, time.UTC),
		State:     approval.StatePending,
		Calls: []approval.Call{{
			ID: smCallID, Kind: agentrunner.KindApproval, Route: smRoute, Required: 1, Status: approval.CallPending,
			Message: approval.MessageRef{Channel: smCardChan, ID: smCardTS},
		}},
	}}
}

func (r *recordingApprovals) snapshot() *approval.Request {
	a := *r.a
	a.Calls = append([]approval.Call(nil), r.a.Calls...)
	return &a
}

// LockCard reads the request as Get does: the fake holds no leases.
func (r *recordingApprovals) LockCard(ctx context.Context, token, _, _ string) (*approval.Request, error) {
	return r.Get(ctx, token)
}

func (r *recordingApprovals) Get(_ context.Context, token string) (*approval.Request, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if token != r.a.Token {
		return nil, approval.ErrNotFound
	}
	return r.snapshot(), nil
}

func (r *recordingApprovals) Decide(_ context.Context, token string, d approval.Decision) (*approval.Decided, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if d.NotAfter.IsZero() {
		r.withoutDeadline++
	}
	if d.CardJob == "" {
		r.withoutCardJob++
	}
	recorded := d
	recorded.NotAfter = time.Time{}
	recorded.CardJob = "" // random per decision (its presence is counted above)
	r.decisions = append(r.decisions, recorded)
	c := r.a.Call(d.CallID)
	if token != r.a.Token || c == nil {
		return nil, approval.ErrNotFound
	}
	if c.Status != approval.CallPending {
		a := r.snapshot()
		return &approval.Decided{Request: a, Call: a.Call(d.CallID)}, approval.ErrDecided
	}
	applyDecision(c, d)
	r.a.State = approval.StateResolved
	a := r.snapshot()
	return &approval.Decided{Request: a, Call: a.Call(d.CallID), Changed: true, Resolved: true}, nil
}

// clickRefusal is a refused click as recordingApprovals recorded it.
type clickRefusal struct {
	Token, CallID, User, Code, Reason string
}

func (r *recordingApprovals) Refused(_ context.Context, token, callID, by, code, reason string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.refusals = append(r.refusals, clickRefusal{Token: token, CallID: callID, User: by, Code: code, Reason: reason})
	return nil
}

// memDedupe is a Deduper backed by a map; fail makes the next calls fail
// as an unreachable Redis would.
type memDedupe struct {
	mu   sync.Mutex
	seen map[string]bool
	fail int
}

var errDedupeDown = errors.New("dedupe store unreachable")

func (d *memDedupe) Dedupe(_ context.Context, key string, _ time.Duration) (bool, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.fail > 0 {
		d.fail--
		return false, errDedupeDown
	}
	if d.seen[key] {
		return false, nil
	}
	if d.seen == nil {
		d.seen = map[string]bool{}
	}
	d.seen[key] = true
	return true, nil
}

// startedRuns records what each agent run was started with: the model
// records the prompt, the whoami tool the run's origin.
type startedRuns struct {
	mu      sync.Mutex
	prompts []string
	origins []approval.Origin
}

func (s *startedRuns) take() (prompts []string, origins []approval.Origin) {
	s.mu.Lock()
	defer s.mu.Unlock()
	prompts, origins = s.prompts, s.origins
	s.prompts, s.origins = nil, nil
	return prompts, origins
}

type refundArgs struct {
	OrderID string `json:"order_id"`
	Amount  int    `json:"amount" jsonschema:"minimum=1"`
}

// newSocketTestRunner returns a runner whose model calls whoami once and
// then answers "done", and that knows issue_refund (for edited arguments).
func newSocketTestRunner(t testing.TB, started *startedRuns) *agentrunner.Runner {
	t.Helper()
	whoami := agentrunner.NewTool("whoami", "Says who started the run.",
		func(_ context.Context, tc *agentrunner.ToolContext, _ struct{}) (any, error) {
			var o approval.Origin
			if d, ok := tc.Deps.(*runs.Deps); ok {
				o = d.Origin
			}
			started.mu.Lock()
			started.origins = append(started.origins, o)
			started.mu.Unlock()
			return "ok", nil
		})
	refund := agentrunner.NewTool("issue_refund", "Refunds an order.",
		func(context.Context, *agentrunner.ToolContext, refundArgs) (any, error) { return "refunded", nil },
		agentrunner.RequiresApproval())
	model := agentrunner.FunctionModel(func(_ context.Context, msgs []agentrunner.Message, _ agentrunner.RequestParams) (agentrunner.Message, error) {
		for _, p := range msgs[len(msgs)-1].Parts {
			if p.PartKind == agentrunner.PartToolReturn {
				return agentrunner.Message{Parts: []agentrunner.Part{agentrunner.Text("done")}}, nil
			}
		}
		for _, p := range msgs[0].Parts {
			if p.PartKind == agentrunner.PartUserPrompt {
				started.mu.Lock()
				started.prompts = append(started.prompts, p.Content)
				started.mu.Unlock()
			}
		}
		return agentrunner.Message{Parts: []agentrunner.Part{
			agentrunner.ToolCall("whoami", json.RawMessage(`{}`), "call_whoami"),
		}}, nil
	})
	r, err := agentrunner.NewRunner(model, []*agentrunner.Tool{whoami, refund})
	if err != nil {
		t.Fatalf("NewRunner: %v", err)
	}
	return r
}

// eventsWorld is a Bot, its Events and the Runs they start over recording doubles: what the
// events tests deliver events to.
type eventsWorld struct {
	logs    *logSink
	slack   *recordingSlack
	started *startedRuns
	dedupe  *memDedupe
	bot     *Bot
	runs    *runs.Runs
	events  *Events
}

func newEventsWorld(t *testing.T) *eventsWorld {
	t.Helper()
	w := &eventsWorld{logs: newLogSink(), slack: &recordingSlack{}, started: &startedRuns{}, dedupe: &memDedupe{}}
	runner := newSocketTestRunner(t, w.started)
	w.bot = newSocketTestBot(t, w.slack, newRecordingApprovals(), runner, w.logs.logger())
	w.runs = &runs.Runs{Chat: w.bot, Approvals: w.bot.svc, Runner: runner, BotUserID: smBotUser, Log: w.logs.logger()}
	w.events = &Events{Bot: w.bot, Runs: w.runs, Dedupe: w.dedupe, BotUserID: smBotUser, Log: w.logs.logger()}
	t.Cleanup(w.runs.Stop)
	return w
}

// newSocketTestBot returns a Bot over the given doubles, with one route
// whose only approver is smApprover.
func newSocketTestBot(t testing.TB, s SlackAPI, a approval.Store, r *agentrunner.Runner, log *slog.Logger) *Bot {
	t.Helper()
	return newTestBot(testConfig{
		Slack: s, Approvals: a, Runner: r, TeamID: smTeam, Log: log,
		Routes: &routing.Routes{Routes: []*routing.Route{{Name: smRoute, Channel: smCardChan, Users: []string{smApprover}, RequiredApprovals: 1}}},
		Retry:  Retry{Sleep: func(context.Context, time.Duration) error { return nil }},
	})
}
