package bot

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/slackapprove/slackbot/approval"
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
	stop := startSocketMode(t, fake, &SocketMode{Bot: b, Events: w.events, Log: logs.logger()}, smAppToken)
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
	startSocketMode(t, fake, &SocketMode{Bot: b, Events: w.events, Log: logs.logger()}, smAppToken)

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
		WithoutCardJob  int
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
		return outcome{Ack: ack, Decisions: approvals.decisions, WithoutDeadline: approvals.withoutDeadline, WithoutCardJob: approvals.withoutCardJob,
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
			if got.WithoutCardJob != 0 {
				t.Errorf("%d decisions reached the store without a card job; every click's card update is scheduled durably with it", got.WithoutCardJob)
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
