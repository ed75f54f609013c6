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
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/gorilla/websocket"
	"github.com/slack-go/slack"

	"github.com/slackapprove/slackbot/agentrunner"
	"github.com/slackapprove/slackbot/approval"
	"github.com/slackapprove/slackbot/routing"
)

// Secrets the Socket Mode tests hand out; no log line may contain them.
const (
	smAppToken = "xapp-1-A0APP-1234567890-socketmodeappsecret"
	smBotToken = "xoxb-1234567890-socketmodebotsecret"
	smTicket   = "socketmode-ticket-d3adb33f"
)

// smWait bounds every wait of these tests; nothing is expected to take
// more than a fraction of it.
const smWait = 10 * time.Second

// The approval every interactivity test acts on.
const (
	smTeam      = "T0TEAM"
	smRoute     = "refunds"
	smCardChan  = "C0APPROVALS"
	smCardTS    = "1700000000.000100"
	smCallID    = "call_refund"
	smApprover  = "U0ALICE"
	smRequester = "U0BOB"
	smStranger  = "U0MALLORY"
	smBotUser   = "U0BOT"
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
	metadata := encodeModalMetadata(Card{Token: token, ToolCallID: smCallID}, approval.MessageRef{Channel: smCardChan, TS: smCardTS})
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
			Message: approval.MessageRef{Channel: smCardChan, TS: smCardTS},
		}},
	}}
}

func (r *recordingApprovals) snapshot() *approval.Request {
	a := *r.a
	a.Calls = append([]approval.Call(nil), r.a.Calls...)
	return &a
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
	recorded := d
	recorded.NotAfter = time.Time{}
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
func newSocketTestRunner(t testing.TB, runs *startedRuns) *agentrunner.Runner {
	t.Helper()
	whoami := agentrunner.NewTool("whoami", "Says who started the run.",
		func(_ context.Context, tc *agentrunner.ToolContext, _ struct{}) (any, error) {
			var o approval.Origin
			if d, ok := tc.Deps.(*RunDeps); ok {
				o = d.Origin
			}
			runs.mu.Lock()
			runs.origins = append(runs.origins, o)
			runs.mu.Unlock()
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
				runs.mu.Lock()
				runs.prompts = append(runs.prompts, p.Content)
				runs.mu.Unlock()
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

// eventsWorld is a Bot and its Runs over recording doubles: what the
// events tests deliver events to.
type eventsWorld struct {
	logs    *logSink
	slack   *recordingSlack
	started *startedRuns
	dedupe  *memDedupe
	bot     *Bot
	runs    *Runs
}

func newEventsWorld(t *testing.T) *eventsWorld {
	t.Helper()
	w := &eventsWorld{logs: newLogSink(), slack: &recordingSlack{}, started: &startedRuns{}, dedupe: &memDedupe{}}
	runner := newSocketTestRunner(t, w.started)
	w.bot = newSocketTestBot(t, w.slack, newRecordingApprovals(), runner, w.logs.logger())
	w.runs = &Runs{Bot: w.bot, Runner: runner, Dedupe: w.dedupe, BotUserID: smBotUser, Log: w.logs.logger()}
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

func TestSocketModeEvents(t *testing.T) {
	mention := func(user, text, ts, thread string) map[string]any {
		e := map[string]any{"type": "app_mention", "user": user, "text": text, "ts": ts, "channel": "C0SUPPORT", "event_ts": ts}
		if thread != "" {
			e["thread_ts"] = thread
		}
		return e
	}
	tests := []struct {
		name       string
		event      map[string]any
		wantPrompt string // "" when no run should start
		wantOrigin approval.Origin
		wantPost   string
	}{
		{
			name:       "mention in a channel",
			event:      mention(smRequester, "<@U0BOT> refund order 42", "1700000001.000200", ""),
			wantPrompt: "refund order 42",
			wantOrigin: approval.Origin{Team: smTeam, Channel: "C0SUPPORT", ThreadTS: "1700000001.000200", User: smRequester},
			wantPost:   "chat.postMessage C0SUPPORT thread=1700000001.000200 done",
		},
		{
			name:       "mention in a thread",
			event:      mention(smRequester, "and order 43 <@U0BOT|slackbot>", "1700000002.000300", "1700000001.000200"),
			wantPrompt: "and order 43",
			wantOrigin: approval.Origin{Team: smTeam, Channel: "C0SUPPORT", ThreadTS: "1700000001.000200", User: smRequester},
			wantPost:   "chat.postMessage C0SUPPORT thread=1700000001.000200 done",
		},
		{
			name:       "mention without words",
			event:      mention(smRequester, "<@U0BOT>", "1700000003.000100", ""),
			wantPrompt: "Hello",
			wantOrigin: approval.Origin{Team: smTeam, Channel: "C0SUPPORT", ThreadTS: "1700000003.000100", User: smRequester},
			wantPost:   "chat.postMessage C0SUPPORT thread=1700000003.000100 done",
		},
		{
			name: "direct message",
			event: map[string]any{"type": "message", "channel_type": "im", "channel": "D0BOB", "user": smRequester,
				"text": "what is pending?", "ts": "1700000004.000100"},
			wantPrompt: "what is pending?",
			wantOrigin: approval.Origin{Team: smTeam, Channel: "D0BOB", ThreadTS: "1700000004.000100", User: smRequester},
			wantPost:   "chat.postMessage D0BOB thread=1700000004.000100 done",
		},
		{
			name:  "the bot's own mention",
			event: mention(smBotUser, "<@U0BOT> loop", "1700000005.000100", ""),
		},
		{
			name: "a bot's direct message",
			event: map[string]any{"type": "message", "channel_type": "im", "channel": "D0BOB", "user": "U0OTHER",
				"bot_id": "B0OTHER", "text": "hi", "ts": "1700000006.000100"},
		},
		{
			name: "a channel message that is no mention",
			event: map[string]any{"type": "message", "channel_type": "channel", "channel": "C0SUPPORT", "user": smRequester,
				"text": "hello all", "ts": "1700000007.000100"},
		},
	}

	w := newEventsWorld(t)
	logs, slackAPI, started, b, runs := w.logs, w.slack, w.started, w.bot, w.runs
	fake := newFakeSocketSlack(t, smAppToken)
	stop := startSocketMode(t, fake, &SocketMode{Bot: b, Runs: runs, Log: logs.logger()}, smAppToken)
	conn := fake.next(t)

	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			envelope := fmt.Sprintf("env-%d", i)
			conn.send(t, eventsEnvelope(envelope, fmt.Sprintf("Ev%d", i), 0, tt.event))
			if got := conn.ack(t, envelope); got != "" {
				t.Errorf("acknowledgement payload: got %s, want none", got)
			}
			// The event was handed over before the acknowledgement, so the
			// run, if any, has started.
			runs.Wait()
			b.Close()
			prompts, origins := started.take()
			var wantPrompts []string
			var wantOrigins []approval.Origin
			if tt.wantPrompt != "" {
				wantPrompts, wantOrigins = []string{tt.wantPrompt}, []approval.Origin{tt.wantOrigin}
			}
			if diff := cmp.Diff(wantPrompts, prompts); diff != "" {
				t.Errorf("prompts of the runs started (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(wantOrigins, origins); diff != "" {
				t.Errorf("origins of the runs started (-want +got):\n%s", diff)
			}
			if tt.wantPost != "" && !slices.Contains(slackAPI.Calls(), tt.wantPost) {
				t.Errorf("Slack calls: got %q, want the answer %q", slackAPI.Calls(), tt.wantPost)
			}
		})
	}

	if err := stop(); err != nil {
		t.Errorf("Run after its context ended: got %v, want nil", err)
	}
	logs.waitFor(t, "socket mode stopped")
	for _, want := range []string{"socket mode connecting", "socket mode connected", "socket mode ready"} {
		if !strings.Contains(logs.String(), want) {
			t.Errorf("logs have no %q line:\n%s", want, logs.String())
		}
	}
	logs.checkNoSecrets(t)
}

// TestSocketModeEventRetries: Slack redelivers an event it saw no
// acknowledgement for, on the same or a new connection; it starts one run.
// An event whose dedupe could not be recorded is not acknowledged, and its
// redelivery starts the run.
func TestSocketModeEventRetries(t *testing.T) {
	w := newEventsWorld(t)
	logs, started, b, runs, dedupe := w.logs, w.started, w.bot, w.runs, w.dedupe
	fake := newFakeSocketSlack(t, smAppToken)
	startSocketMode(t, fake, &SocketMode{Bot: b, Runs: runs, Log: logs.logger()}, smAppToken)

	event := map[string]any{"type": "app_mention", "user": smRequester, "text": "<@U0BOT> refund order 42",
		"ts": "1700000001.000200", "channel": "C0SUPPORT", "event_ts": "1700000001.000200"}

	conn := fake.next(t)
	conn.send(t, eventsEnvelope("env-a", "Ev1", 0, event))
	conn.ack(t, "env-a")
	conn.send(t, eventsEnvelope("env-b", "Ev1", 1, event))
	conn.ack(t, "env-b")

	// Slack asks for a new connection and redelivers there.
	conn.send(t, map[string]any{"type": "disconnect", "reason": "refresh_requested", "debug_info": map[string]any{"host": "applink-fake"}})
	conn = fake.next(t)
	conn.send(t, eventsEnvelope("env-c", "Ev1", 2, event))
	conn.ack(t, "env-c")
	if got := fake.opens.Load(); got != 2 {
		t.Errorf("apps.connections.open calls: got %d, want 2 (one per connection)", got)
	}

	// Redis is down for the first delivery of Ev2.
	dedupe.mu.Lock()
	dedupe.fail = 1
	dedupe.mu.Unlock()
	conn.send(t, eventsEnvelope("env-d", "Ev2", 0, event))
	logs.waitFor(t, "event not acknowledged")
	conn.send(t, eventsEnvelope("env-e", "Ev2", 1, event))
	conn.ack(t, "env-e")
	if _, ok := conn.acked("env-d"); ok {
		t.Errorf("envelope env-d was acknowledged although its dedupe failed")
	}

	runs.Wait()
	b.Close()
	prompts, _ := started.take()
	if diff := cmp.Diff([]string{"refund order 42", "refund order 42"}, prompts); diff != "" {
		t.Errorf("runs started for Ev1 (three deliveries) and Ev2 (two) (-want +got):\n%s", diff)
	}
	logs.checkNoSecrets(t)
}

// TestSocketModeInteractivityMatchesHTTP delivers each payload through the
// HTTP handler and over Socket Mode, each time to a fresh Bot holding the
// same pending approval: both must record the same decisions and
// refusals, make the same Slack calls, and answer with the same body.
func TestSocketModeInteractivityMatchesHTTP(t *testing.T) {
	token := newRecordingApprovals().a.Token // NewToken is random: share one
	value := EncodeAction(token, smCallID)
	submit := func(user, callbackID, blockID, actionID, input string) json.RawMessage {
		return submitPayload(token, user, callbackID, blockID, actionID, input)
	}

	tests := []struct {
		name          string
		payload       json.RawMessage
		wantDecisions []approval.Decision
		wantRefusals  []clickRefusal
		wantErrorsOn  string   // block id of inline modal errors; "" for an empty ack
		wantSlack     []string // prefixes of the Slack calls made, sorted
	}{
		{
			name:          "approve",
			payload:       clickPayload(smApprover, ActionIDApprove, value),
			wantDecisions: []approval.Decision{{CallID: smCallID, By: smApprover, Action: approval.ActionApprove}},
			wantSlack:     []string{"chat.update C0APPROVALS " + smCardTS},
		},
		{
			name:          "deny",
			payload:       clickPayload(smApprover, ActionIDDeny, value),
			wantDecisions: []approval.Decision{{CallID: smCallID, By: smApprover, Action: approval.ActionDeny}},
			wantSlack:     []string{"chat.update C0APPROVALS " + smCardTS},
		},
		{
			name:         "approve by someone who is no approver",
			payload:      clickPayload(smStranger, ActionIDApprove, value),
			wantRefusals: []clickRefusal{{Token: token, CallID: smCallID, User: smStranger, Code: approval.ENOTAPPROVER}},
			wantSlack:    []string{"chat.postEphemeral C0APPROVALS U0MALLORY :no_entry: You are not an approver"},
		},
		{
			name:      "a button slackbot did not make",
			payload:   clickPayload(smApprover, ActionIDApprove, "garbage"),
			wantSlack: []string{"chat.postEphemeral C0APPROVALS U0ALICE This button is not one slackbot made."},
		},
		{
			name:      "edit opens the modal",
			payload:   clickPayload(smApprover, ActionIDEdit, value),
			wantSlack: []string{"views.open trigger-1 " + CallbackEditArgs},
		},
		{
			name:         "edited arguments that do not fit the schema",
			payload:      submit(smApprover, CallbackEditArgs, BlockIDEditArgs, ActionIDEditArgsInput, `{"order_id":"42","amount":"lots"}`),
			wantErrorsOn: BlockIDEditArgs,
		},
		{
			name:         "edited arguments that are not JSON",
			payload:      submit(smApprover, CallbackEditArgs, BlockIDEditArgs, ActionIDEditArgsInput, `{"amount":`),
			wantErrorsOn: BlockIDEditArgs,
		},
		{
			name:    "edited arguments that fit",
			payload: submit(smApprover, CallbackEditArgs, BlockIDEditArgs, ActionIDEditArgsInput, `{"order_id":"42","amount":20}`),
			wantDecisions: []approval.Decision{{CallID: smCallID, By: smApprover, Action: approval.ActionApprove,
				OverrideArgs: json.RawMessage(`{"order_id":"42","amount":20}`)}},
			wantSlack: []string{"chat.update C0APPROVALS " + smCardTS},
		},
		{
			name:          "deny with a reason",
			payload:       submit(smApprover, CallbackDenyReason, BlockIDDenyReason, ActionIDDenyReasonInput, " duplicate refund "),
			wantDecisions: []approval.Decision{{CallID: smCallID, By: smApprover, Action: approval.ActionDeny, Reason: "duplicate refund"}},
			wantSlack:     []string{"chat.update C0APPROVALS " + smCardTS},
		},
		{
			name:         "the requester approves their own edit",
			payload:      submit(smRequester, CallbackEditArgs, BlockIDEditArgs, ActionIDEditArgsInput, `{"order_id":"42","amount":20}`),
			wantRefusals: []clickRefusal{{Token: token, CallID: smCallID, User: smRequester, Code: approval.ENOTAPPROVER}},
			wantErrorsOn: BlockIDEditArgs,
		},
	}

	// outcome is what one delivery did.
	type outcome struct {
		Ack             string
		Decisions       []approval.Decision
		WithoutDeadline int
		Refusals        []clickRefusal
		Slack           []string
	}
	// world is a fresh Bot over fresh doubles holding the pending approval.
	world := func(t *testing.T) (*Bot, *recordingApprovals, *recordingSlack) {
		approvals, slackAPI := newRecordingApprovals(), &recordingSlack{}
		approvals.a.Token = token
		b := newSocketTestBot(t, slackAPI, approvals, newSocketTestRunner(t, &startedRuns{}), nil)
		return b, approvals, slackAPI
	}
	observe := func(b *Bot, approvals *recordingApprovals, slackAPI *recordingSlack, ack string) outcome {
		b.Close()
		approvals.mu.Lock()
		defer approvals.mu.Unlock()
		return outcome{Ack: ack, Decisions: approvals.decisions, WithoutDeadline: approvals.withoutDeadline,
			Refusals: approvals.refusals, Slack: slackAPI.Calls()}
	}
	fake := newFakeSocketSlack(t, smAppToken)

	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// Over HTTP.
			b, approvals, slackAPI := world(t)
			form := url.Values{"payload": {string(tt.payload)}}
			req := httptest.NewRequestWithContext(t.Context(), http.MethodPost, "/slack/interactivity", strings.NewReader(form.Encode()))
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			rec := httptest.NewRecorder()
			b.HandleInteraction().ServeHTTP(rec, req)
			if rec.Code != http.StatusOK {
				t.Fatalf("HTTP status: got %d, want 200; body %s", rec.Code, rec.Body)
			}
			overHTTP := observe(b, approvals, slackAPI, compactJSON(t, rec.Body.Bytes()))

			// Over Socket Mode.
			logs := newLogSink()
			b, approvals, slackAPI = world(t)
			stop := startSocketMode(t, fake, &SocketMode{Bot: b, Log: logs.logger()}, smAppToken)
			conn := fake.next(t)
			envelope := fmt.Sprintf("env-%d", i)
			conn.send(t, interactiveEnvelope(envelope, tt.payload))
			ack := conn.ack(t, envelope)
			if err := stop(); err != nil {
				t.Errorf("Run: %v", err)
			}
			overSocket := observe(b, approvals, slackAPI, ack)

			if diff := cmp.Diff(overHTTP, overSocket); diff != "" {
				t.Errorf("Socket Mode did not do what HTTP did (-http +socket):\n%s", diff)
			}

			got := overSocket
			if diff := cmp.Diff(tt.wantDecisions, got.Decisions); diff != "" {
				t.Errorf("decisions recorded (-want +got):\n%s", diff)
			}
			if got.WithoutDeadline != 0 {
				t.Errorf("%d decisions reached the store without a NotAfter; every click's has its acknowledgement deadline", got.WithoutDeadline)
			}
			for i := range got.Refusals {
				got.Refusals[i].Reason = "" // worded by the Service
			}
			if diff := cmp.Diff(tt.wantRefusals, got.Refusals); diff != "" {
				t.Errorf("refusals recorded (-want +got):\n%s", diff)
			}
			checkModalAck(t, got.Ack, tt.wantErrorsOn)
			if len(got.Slack) != len(tt.wantSlack) {
				t.Fatalf("Slack calls: got %q, want calls starting %q", got.Slack, tt.wantSlack)
			}
			for i, want := range tt.wantSlack {
				if !strings.HasPrefix(got.Slack[i], want) {
					t.Errorf("Slack call %d: got %q, want it to start with %q", i, got.Slack[i], want)
				}
			}
			logs.checkNoSecrets(t)
		})
	}
}

// checkModalAck checks an acknowledgement: empty when wantErrorsOn is "",
// else a response_action errors naming that block.
func checkModalAck(t *testing.T, ack, wantErrorsOn string) {
	t.Helper()
	if wantErrorsOn == "" {
		if ack != "" {
			t.Errorf("acknowledgement payload: got %s, want none", ack)
		}
		return
	}
	var resp struct {
		ResponseAction string            `json:"response_action"`
		Errors         map[string]string `json:"errors"`
	}
	if err := json.Unmarshal([]byte(ack), &resp); err != nil {
		t.Fatalf("acknowledgement payload %q: %v", ack, err)
	}
	if resp.ResponseAction != "errors" || resp.Errors[wantErrorsOn] == "" {
		t.Errorf("acknowledgement payload: got %s, want response_action errors on %s", ack, wantErrorsOn)
	}
}

// TestSocketModeRefusesMalformedInteraction: a payload the HTTP handler
// answers 400 is left unacknowledged (Slack shows the person an error),
// and the connection goes on serving.
func TestSocketModeRefusesMalformedInteraction(t *testing.T) {
	logs := newLogSink()
	approvals := newRecordingApprovals()
	b := newSocketTestBot(t, &recordingSlack{}, approvals, nil, logs.logger())
	fake := newFakeSocketSlack(t, smAppToken)
	startSocketMode(t, fake, &SocketMode{Bot: b, Log: logs.logger()}, smAppToken)
	conn := fake.next(t)

	conn.send(t, interactiveEnvelope("env-bad", json.RawMessage(`{"type":"block_actions","actions":[{"action_id":"approve"}]}`)))
	logs.waitFor(t, "interaction refused")
	conn.send(t, interactiveEnvelope("env-closed", json.RawMessage(`{"type":"view_closed","user":{"id":"U0ALICE"},"view":{"callback_id":"edit_args"}}`)))
	if got := conn.ack(t, "env-closed"); got != "" {
		t.Errorf("view_closed acknowledgement payload: got %s, want none", got)
	}
	if _, ok := conn.acked("env-bad"); ok {
		t.Errorf("a payload without a user was acknowledged")
	}
	b.Close()
	if len(approvals.decisions) != 0 {
		t.Errorf("decisions: got %v, want none", approvals.decisions)
	}
}

// TestSocketModeRefusedToken: Run gives up, with an error, when Slack
// refuses the app-level token, and never logs it.
func TestSocketModeRefusedToken(t *testing.T) {
	logs := newLogSink()
	fake := newFakeSocketSlack(t, "xapp-1-A0APP-0-the-right-one")
	b := newSocketTestBot(t, &recordingSlack{}, newRecordingApprovals(), nil, logs.logger())
	stop := startSocketMode(t, fake, &SocketMode{Bot: b, Log: logs.logger()}, smAppToken)
	logs.waitFor(t, "socket mode connection failed for good")
	err := stop()
	if err == nil || !strings.Contains(err.Error(), "invalid_auth") {
		t.Errorf("Run with a refused token: got %v, want an invalid_auth error", err)
	}
	if got := fake.opens.Load(); got != 0 {
		t.Errorf("connections opened: got %d, want 0", got)
	}
	logs.checkNoSecrets(t)
}

func TestRedactSecrets(t *testing.T) {
	tests := []struct{ in, want string }{
		{"dial wss://wss-primary.slack.com/link/?ticket=abc-123&app_id=A0APP: refused",
			"dial wss://wss-primary.slack.com/link/?ticket=REDACTED&app_id=A0APP: refused"},
		{"token xapp-1-A0APP-123-abcdef refused", "token xapp-REDACTED refused"},
		{`{"token":"xoxb-123-456-abc"}`, `{"token":"xoxb-REDACTED"}`},
		{"xoxp-1-2 and xoxe-3", "xoxp-REDACTED and xoxe-REDACTED"},
		{"invalid_auth", "invalid_auth"},
		{"an xapp without a dash stays", "an xapp without a dash stays"},
	}
	for _, tt := range tests {
		if got := redactSecrets(tt.in); got != tt.want {
			t.Errorf("redactSecrets(%q): got %q, want %q", tt.in, got, tt.want)
		}
	}
}

// BenchmarkSocketModeInteraction measures one interaction's round trip
// over Socket Mode on loopback: the envelope is written, slack-go's client
// reads it, ParseInteraction and Interact run against in-memory doubles,
// and the acknowledgement comes back. Slack allows three seconds.
func BenchmarkSocketModeInteraction(b *testing.B) {
	benchmarks := []struct {
		name    string
		payload func(token string) json.RawMessage
	}{
		{"click", func(token string) json.RawMessage {
			return clickPayload(smApprover, ActionIDApprove, EncodeAction(token, smCallID))
		}},
		{"invalid_edit", func(token string) json.RawMessage {
			return submitPayload(token, smApprover, CallbackEditArgs, BlockIDEditArgs, ActionIDEditArgsInput, `{"order_id":"42","amount":"lots"}`)
		}},
	}
	for _, bm := range benchmarks {
		b.Run(bm.name, func(b *testing.B) {
			approvals := newRecordingApprovals()
			bot := newSocketTestBot(b, &recordingSlack{}, approvals, newSocketTestRunner(b, &startedRuns{}), nil)
			fake := newFakeSocketSlack(b, smAppToken)
			startSocketMode(b, fake, &SocketMode{Bot: bot}, smAppToken)
			conn := fake.next(b)
			envelope := interactiveEnvelope("", bm.payload(approvals.a.Token))
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				id := strconv.Itoa(i)
				envelope["envelope_id"] = id
				conn.send(b, envelope)
				conn.ack(b, id)
			}
			b.StopTimer()
			bot.Close()
		})
	}
}
