package devui_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/slack-go/slack"
	"github.com/slack-go/slack/slackevents"

	"github.com/slackapprove/slackbot/agentrunner"
	"github.com/slackapprove/slackbot/approval"
	"github.com/slackapprove/slackbot/bot"
	"github.com/slackapprove/slackbot/internal/devui"
	"github.com/slackapprove/slackbot/internal/slackfake"
)

const secret = "test-signing-secret"

// delivery is a request the stand-in slackbot received.
type delivery struct {
	Path string
	Body []byte
}

// receiver stands in for slackbot's webhooks: it verifies each request's
// signature exactly as slackbot does and records it.
type receiver struct {
	mu         sync.Mutex
	deliveries []delivery
	// reply answers a verified request; nil answers 200 with no body.
	reply func(w http.ResponseWriter, d delivery)
}

func (rc *receiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	sv, err := slack.NewSecretsVerifier(r.Header, secret)
	if err == nil {
		_, _ = sv.Write(body)
		err = sv.Ensure()
	}
	if err != nil {
		http.Error(w, "signature: "+err.Error(), http.StatusUnauthorized)
		return
	}
	d := delivery{Path: r.URL.Path, Body: body}
	rc.mu.Lock()
	rc.deliveries = append(rc.deliveries, d)
	reply := rc.reply
	rc.mu.Unlock()
	if reply != nil {
		reply(w, d)
	}
}

func (rc *receiver) setReply(f func(w http.ResponseWriter, d delivery)) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	rc.reply = f
}

func (rc *receiver) all() []delivery {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return append([]delivery(nil), rc.deliveries...)
}

// only returns the one delivery the test expects.
func (rc *receiver) only(t *testing.T) delivery {
	t.Helper()
	all := rc.all()
	if len(all) != 1 {
		t.Fatalf("slackbot received %d requests, want 1", len(all))
	}
	return all[0]
}

// env is a fake workspace, a stand-in slackbot and the emulator, mounted
// at /dev/ as `slackbot dev` mounts it.
type env struct {
	fake *slackfake.Server
	api  *slack.Client // slackbot's client, pointed at the fake
	hook *receiver
	url  string // the emulator's base URL, ending in /dev/
}

func newEnv(t *testing.T) *env {
	t.Helper()
	fake := slackfake.New(slackfake.WithDemoWorkspace())
	hook := &receiver{}
	hookSrv := httptest.NewServer(hook)
	t.Cleanup(hookSrv.Close)

	h := devui.New(devui.Config{Slack: fake, SigningSecret: secret, Webhook: hookSrv.URL})
	mux := http.NewServeMux()
	mux.Handle("/api/", fake)
	mux.Handle("/dev/", http.StripPrefix("/dev", h))
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	t.Cleanup(h.Close)
	return &env{
		fake: fake,
		api:  slack.New(fake.Token(), slack.OptionAPIURL(srv.URL+"/api/")),
		hook: hook,
		url:  srv.URL + "/dev/",
	}
}

// call POSTs a JSON body to the emulator and decodes its answer.
func (e *env) call(t *testing.T, path string, body any) (int, map[string]any) {
	t.Helper()
	b, err := json.Marshal(body)
	if err != nil {
		t.Fatal(err)
	}
	return e.callRaw(t, path, b)
}

func (e *env) callRaw(t *testing.T, path string, body []byte) (int, map[string]any) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, e.url+path, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if len(body) > 0 {
		req.Header.Set("Content-Type", "application/json")
	} else {
		req.Header.Set("Content-Type", "text/plain") // as a cross-site form could
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("POST %s: %v", path, err)
	}
	defer resp.Body.Close()
	var out map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		t.Fatalf("POST %s: answer is not JSON: %v", path, err)
	}
	return resp.StatusCode, out
}

// postCard posts an approval card as slackbot does and returns its ts.
func (e *env) postCard(t *testing.T, c bot.Card) string {
	t.Helper()
	_, ts, err := e.api.PostMessageContext(t.Context(), "C0APPROVALS",
		slack.MsgOptionText(bot.ApprovalText(c), false), slack.MsgOptionBlocks(bot.ApprovalBlocks(c)...))
	if err != nil {
		t.Fatalf("post card: %v", err)
	}
	return ts
}

func demoCard() bot.Card {
	return bot.Card{
		Token:           "tok_0123456789abcdef",
		ToolCallID:      "call_1",
		Kind:            agentrunner.KindApproval,
		ToolName:        "delete_customer",
		Args:            json.RawMessage(`{"customer_id":"a"}`),
		Requester:       "U0CAROL",
		RequesterIsUser: true,
		SourceChannel:   "C0GENERAL",
		Route:           "deletions",
		CreatedAt:       time.Date(2026, 3, 2, 15, 4, 0, 0, time.UTC),
		ExpiresAt:       time.Date(2026, 3, 2, 16, 4, 0, 0, time.UTC),
		AllowDenyReason: true,
	}
}

func TestPostDeliversEvents(t *testing.T) {
	tests := []struct {
		name      string
		req       map[string]string
		delivered bool
		check     func(t *testing.T, ev slackevents.EventsAPIEvent, m slackfake.Message)
	}{
		{
			name:      "mention in a channel is an app_mention",
			req:       map[string]string{"user": "U0CAROL", "channel": "C0GENERAL", "text": "<@U0BOT> delete customer 42"},
			delivered: true,
			check: func(t *testing.T, ev slackevents.EventsAPIEvent, m slackfake.Message) {
				e, ok := ev.InnerEvent.Data.(*slackevents.AppMentionEvent)
				if !ok {
					t.Fatalf("inner event is %T, want *slackevents.AppMentionEvent", ev.InnerEvent.Data)
				}
				got := []string{e.User, e.Channel, e.Text, e.TimeStamp, e.ThreadTimeStamp}
				want := []string{"U0CAROL", "C0GENERAL", "<@U0BOT> delete customer 42", m.TS, ""}
				if diff := cmp.Diff(want, got); diff != "" {
					t.Errorf("app_mention user, channel, text, ts, thread_ts (-want +got):\n%s", diff)
				}
			},
		},
		{
			name:      "direct message is a message with channel_type im",
			req:       map[string]string{"user": "U0CAROL", "channel": "D0CAROL", "text": "look up order A-1001"},
			delivered: true,
			check: func(t *testing.T, ev slackevents.EventsAPIEvent, m slackfake.Message) {
				e, ok := ev.InnerEvent.Data.(*slackevents.MessageEvent)
				if !ok {
					t.Fatalf("inner event is %T, want *slackevents.MessageEvent", ev.InnerEvent.Data)
				}
				got := []string{e.User, e.Channel, e.ChannelType, e.Text, e.TimeStamp}
				want := []string{"U0CAROL", "D0CAROL", "im", "look up order A-1001", m.TS}
				if diff := cmp.Diff(want, got); diff != "" {
					t.Errorf("message user, channel, channel_type, text, ts (-want +got):\n%s", diff)
				}
			},
		},
		{
			name:      "channel message without a mention reaches no one",
			req:       map[string]string{"user": "U0BOB", "channel": "C0GENERAL", "text": "lunch?"},
			delivered: false,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t)
			status, res := e.call(t, "post", tt.req)
			if status != http.StatusOK || res["ok"] != true {
				t.Fatalf("POST /post = %d %v, want 200 ok", status, res)
			}
			m, ok := e.fake.Message(res["channel"].(string), res["ts"].(string))
			if !ok || m.User != tt.req["user"] || m.Text != tt.req["text"] {
				t.Fatalf("stored message = %+v (found %v), want %s's %q", m, ok, tt.req["user"], tt.req["text"])
			}
			if res["delivered"] != tt.delivered {
				t.Fatalf("delivered = %v, want %v (answer %v)", res["delivered"], tt.delivered, res)
			}
			if !tt.delivered {
				if got := e.hook.all(); len(got) != 0 {
					t.Fatalf("slackbot received %d requests, want none", len(got))
				}
				if res["note"] == nil {
					t.Errorf("answer %v has no note saying why nothing was sent", res)
				}
				return
			}
			if res["status"] != float64(http.StatusOK) {
				t.Errorf("status = %v, want slackbot's 200", res["status"])
			}
			d := e.hook.only(t)
			if d.Path != "/slack/events" {
				t.Errorf("path = %s, want /slack/events", d.Path)
			}
			ev, err := slackevents.ParseEvent(json.RawMessage(d.Body), slackevents.OptionNoVerifyToken())
			if err != nil {
				t.Fatalf("ParseEvent: %v\n%s", err, d.Body)
			}
			if ev.Type != slackevents.CallbackEvent || ev.TeamID != "T0FAKE" || ev.APIAppID == "" {
				t.Errorf("event type %q team %q app %q, want event_callback from T0FAKE with an app id", ev.Type, ev.TeamID, ev.APIAppID)
			}
			var outer struct {
				EventID   string `json:"event_id"`
				EventTime int64  `json:"event_time"`
			}
			if err := json.Unmarshal(d.Body, &outer); err != nil || !strings.HasPrefix(outer.EventID, "Ev") || outer.EventTime == 0 {
				t.Errorf("event_id %q event_time %d (%v), want Ev… and a time", outer.EventID, outer.EventTime, err)
			}
			tt.check(t, ev, m)
		})
	}
}

func TestPostInThreadAndFreshEventIDs(t *testing.T) {
	e := newEnv(t)
	_, first := e.call(t, "post", map[string]string{"user": "U0CAROL", "channel": "C0GENERAL", "text": "<@U0BOT> hello"})
	parent := first["ts"].(string)
	status, res := e.call(t, "post", map[string]string{"user": "U0CAROL", "channel": "C0GENERAL", "text": "<@U0BOT> and more", "thread_ts": parent})
	if status != http.StatusOK {
		t.Fatalf("POST /post in thread = %d %v", status, res)
	}
	all := e.hook.all()
	if len(all) != 2 {
		t.Fatalf("slackbot received %d events, want 2", len(all))
	}
	ev, err := slackevents.ParseEvent(json.RawMessage(all[1].Body), slackevents.OptionNoVerifyToken())
	if err != nil {
		t.Fatal(err)
	}
	mention := ev.InnerEvent.Data.(*slackevents.AppMentionEvent)
	if mention.ThreadTimeStamp != parent {
		t.Errorf("thread_ts = %q, want the parent's %q", mention.ThreadTimeStamp, parent)
	}
	ids := map[string]bool{}
	for _, d := range all {
		var outer struct {
			EventID string `json:"event_id"`
		}
		_ = json.Unmarshal(d.Body, &outer)
		ids[outer.EventID] = true
	}
	if len(ids) != 2 {
		t.Errorf("event ids %v, want two different ones", ids)
	}
}

func TestClickDeliversBlockActions(t *testing.T) {
	e := newEnv(t)
	card := demoCard()
	ts := e.postCard(t, card)
	value := bot.EncodeAction(card.Token, card.ToolCallID)

	status, res := e.call(t, "click", map[string]string{
		"user": "U0ALICE", "channel": "C0APPROVALS", "ts": ts,
		"action_id": bot.ActionIDApprove, "block_id": bot.CardBlockID(bot.BlockIDActions, card), "value": value,
	})
	if status != http.StatusOK || res["ok"] != true {
		t.Fatalf("POST /click = %d %v, want 200 ok", status, res)
	}
	d := e.hook.only(t)
	if d.Path != "/slack/interactivity" {
		t.Errorf("path = %s, want /slack/interactivity", d.Path)
	}
	form, err := url.ParseQuery(string(d.Body))
	if err != nil {
		t.Fatalf("body is not a form: %v", err)
	}
	cb, err := bot.ParseInteraction(form.Get("payload"))
	if err != nil {
		t.Fatalf("ParseInteraction: %v\n%s", err, form.Get("payload"))
	}
	act := cb.ActionCallback.BlockActions[0]
	got := map[string]string{
		"type":              string(cb.Type),
		"user":              cb.User.ID,
		"user.name":         cb.User.Name,
		"team":              cb.Team.ID,
		"team.domain":       cb.Team.Domain,
		"container.type":    cb.Container.Type,
		"container.ts":      cb.Container.MessageTs,
		"container.channel": cb.Container.ChannelID,
		"channel":           cb.Channel.ID,
		"channel.name":      cb.Channel.Name,
		"message.ts":        cb.Message.Timestamp,
		"message.user":      cb.Message.User,
		"action_id":         act.ActionID,
		"block_id":          act.BlockID,
		"value":             act.Value,
		"text":              act.Text.Text,
		"action.type":       string(act.Type),
	}
	want := map[string]string{
		"type":              "block_actions",
		"user":              "U0ALICE",
		"user.name":         "alice",
		"team":              "T0FAKE",
		"team.domain":       "fake",
		"container.type":    "message",
		"container.ts":      ts,
		"container.channel": "C0APPROVALS",
		"channel":           "C0APPROVALS",
		"channel.name":      "approvals",
		"message.ts":        ts,
		"message.user":      "U0BOT",
		"action_id":         "approve",
		"block_id":          bot.CardBlockID(bot.BlockIDActions, card),
		"value":             value,
		"text":              "Approve",
		"action.type":       "button",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("block_actions payload (-want +got):\n%s", diff)
	}
	if n, want := len(cb.Message.Blocks.BlockSet), len(bot.ApprovalBlocks(card)); n != want {
		t.Errorf("message carries %d blocks, want the card's %d", n, want)
	}
	var raw struct {
		Actions []struct {
			Style    string `json:"style"`
			ActionTS string `json:"action_ts"`
		} `json:"actions"`
		ResponseURL *string `json:"response_url"`
	}
	if err := json.Unmarshal([]byte(form.Get("payload")), &raw); err != nil || len(raw.Actions) != 1 || raw.Actions[0].Style != "primary" || raw.Actions[0].ActionTS == "" {
		t.Errorf("actions = %+v (%v), want one with style primary and an action_ts", raw.Actions, err)
	}
	if cb.Container.IsEphemeral {
		t.Error("container.is_ephemeral = true, want false")
	}
	// The trigger_id is one the workspace issued: a modal opens with it.
	if _, err := e.api.OpenViewContext(t.Context(), cb.TriggerID, bot.DenyReasonModal(card, approval.MessageRef{Channel: "C0APPROVALS", ID: ts})); err != nil {
		t.Errorf("views.open with the payload's trigger_id %q: %v", cb.TriggerID, err)
	}
}

func TestClickRefusals(t *testing.T) {
	e := newEnv(t)
	card := demoCard()
	ts := e.postCard(t, card)
	value := bot.EncodeAction(card.Token, card.ToolCallID)
	tests := []struct {
		name   string
		req    map[string]string
		status int
	}{
		{"unknown message", map[string]string{"user": "U0ALICE", "channel": "C0APPROVALS", "ts": "1.000001", "action_id": "approve", "block_id": bot.CardBlockID(bot.BlockIDActions, card)}, http.StatusNotFound},
		{"button not on the message", map[string]string{"user": "U0ALICE", "channel": "C0APPROVALS", "ts": ts, "action_id": "nope", "block_id": bot.CardBlockID(bot.BlockIDActions, card)}, http.StatusConflict},
		{"stale value", map[string]string{"user": "U0ALICE", "channel": "C0APPROVALS", "ts": ts, "action_id": "approve", "block_id": bot.CardBlockID(bot.BlockIDActions, card), "value": "old"}, http.StatusConflict},
		{"unknown user", map[string]string{"user": "U0MALLORY", "channel": "C0APPROVALS", "ts": ts, "action_id": "approve", "value": value}, http.StatusBadRequest},
		{"the app itself", map[string]string{"user": "U0BOT", "channel": "C0APPROVALS", "ts": ts, "action_id": "approve", "value": value}, http.StatusBadRequest},
		{"no action", map[string]string{"user": "U0ALICE", "channel": "C0APPROVALS", "ts": ts}, http.StatusBadRequest},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			status, res := e.call(t, "click", tt.req)
			if status != tt.status || res["ok"] != false || res["error"] == "" {
				t.Errorf("POST /click = %d %v, want %d with an error", status, res, tt.status)
			}
		})
	}
	if got := e.hook.all(); len(got) != 0 {
		t.Errorf("slackbot received %d requests for refused clicks, want none", len(got))
	}
}

func TestWebhookFailuresAreReported(t *testing.T) {
	e := newEnv(t)
	e.hook.setReply(func(w http.ResponseWriter, d delivery) {
		http.Error(w, "boom: store unavailable", http.StatusInternalServerError)
	})
	status, res := e.call(t, "post", map[string]string{"user": "U0CAROL", "channel": "C0GENERAL", "text": "<@U0BOT> hi"})
	if status != http.StatusBadGateway || res["status"] != float64(500) || !strings.Contains(res["body"].(string), "boom") {
		t.Errorf("POST /post with a failing slackbot = %d %v, want 502 with slackbot's 500 and body", status, res)
	}

	// slackbot not listening at all.
	fake := slackfake.New(slackfake.WithDemoWorkspace())
	dead := httptest.NewServer(http.NotFoundHandler())
	dead.Close()
	h := devui.New(devui.Config{Slack: fake, SigningSecret: secret, Webhook: dead.URL})
	rec := httptest.NewRecorder()
	req := httptest.NewRequestWithContext(t.Context(), http.MethodPost, "/post",
		strings.NewReader(`{"user":"U0CAROL","channel":"C0GENERAL","text":"<@U0BOT> hi"}`))
	req.Header.Set("Content-Type", "application/json")
	h.ServeHTTP(rec, req)
	if rec.Code != http.StatusBadGateway || !strings.Contains(rec.Body.String(), "did not answer") {
		t.Errorf("POST /post with slackbot down = %d %s, want 502 saying slackbot did not answer", rec.Code, rec.Body)
	}
}
