package devui_test

import (
	"bufio"
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
		Token:                "tok_0123456789abcdef",
		ToolCallID:           "call_1",
		Kind:                 agentrunner.KindApproval,
		ToolName:             "delete_customer",
		Args:                 json.RawMessage(`{"customer_id":"a"}`),
		Requester:            "U0CAROL",
		RequesterIsSlackUser: true,
		SourceChannel:        "C0GENERAL",
		Route:                "deletions",
		CreatedAt:            time.Date(2026, 3, 2, 15, 4, 0, 0, time.UTC),
		ExpiresAt:            time.Date(2026, 3, 2, 16, 4, 0, 0, time.UTC),
		AllowDenyReason:      true,
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
	if _, err := e.api.OpenViewContext(t.Context(), cb.TriggerID, bot.DenyReasonModal(card, approval.MessageRef{Channel: "C0APPROVALS", TS: ts})); err != nil {
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

// openModal opens bot's deny-reason modal for U0ALICE as slackbot would.
func openModal(t *testing.T, e *env, v slack.ModalViewRequest) string {
	t.Helper()
	trigger := e.fake.IssueTrigger("U0ALICE", "")
	resp, err := e.api.OpenViewContext(t.Context(), trigger, v)
	if err != nil {
		t.Fatalf("views.open: %v", err)
	}
	return resp.ID
}

func TestSubmitDeliversViewSubmission(t *testing.T) {
	e := newEnv(t)
	card := demoCard()
	ref := approval.MessageRef{Channel: "C0APPROVALS", TS: e.postCard(t, card)}
	id := openModal(t, e, bot.DenyReasonModal(card, ref))

	status, res := e.call(t, "submit", map[string]any{
		"user": "U0ALICE", "view_id": id,
		"values": map[string]map[string]string{bot.BlockIDDenyReason: {bot.ActionIDDenyReasonInput: "customer a is a test account"}},
	})
	if status != http.StatusOK || res["ok"] != true {
		t.Fatalf("POST /submit = %d %v, want 200 ok", status, res)
	}
	d := e.hook.only(t)
	form, _ := url.ParseQuery(string(d.Body))
	cb, err := bot.ParseInteraction(form.Get("payload"))
	if err != nil {
		t.Fatalf("ParseInteraction: %v\n%s", err, form.Get("payload"))
	}
	meta, err := bot.DecodeModalMetadata(cb.View.PrivateMetadata)
	if err != nil {
		t.Fatalf("private_metadata: %v", err)
	}
	got := map[string]string{
		"type":        string(cb.Type),
		"user":        cb.User.ID,
		"team":        cb.Team.ID,
		"view.id":     cb.View.ID,
		"view.type":   string(cb.View.Type),
		"callback_id": cb.View.CallbackID,
		"value":       cb.View.State.Values[bot.BlockIDDenyReason][bot.ActionIDDenyReasonInput].Value,
		"input.type":  string(cb.View.State.Values[bot.BlockIDDenyReason][bot.ActionIDDenyReasonInput].Type),
		"token":       meta.Token,
		"message":     meta.Message.TS,
	}
	want := map[string]string{
		"type":        "view_submission",
		"user":        "U0ALICE",
		"team":        "T0FAKE",
		"view.id":     id,
		"view.type":   "modal",
		"callback_id": bot.CallbackDenyReason,
		"value":       "customer a is a test account",
		"input.type":  "plain_text_input",
		"token":       card.Token,
		"message":     ref.TS,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("view_submission payload (-want +got):\n%s", diff)
	}
	if cb.View.Hash == "" || cb.View.TeamID != "T0FAKE" || cb.TriggerID == "" {
		t.Errorf("view hash %q team %q trigger %q, want all set", cb.View.Hash, cb.View.TeamID, cb.TriggerID)
	}
	if v, _ := e.fake.View(id); !v.Closed {
		t.Error("modal still open after slackbot accepted the submission")
	}
}

func TestSubmitShowsErrors(t *testing.T) {
	e := newEnv(t)
	card := demoCard()
	id := openModal(t, e, bot.DenyReasonModal(card, approval.MessageRef{Channel: "C0APPROVALS", TS: e.postCard(t, card)}))
	e.hook.setReply(func(w http.ResponseWriter, d delivery) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"response_action":"errors","errors":{"deny_reason":"Say more than that."}}`)
	})

	// Slack's client refuses an empty required input without sending.
	status, res := e.call(t, "submit", map[string]any{"user": "U0ALICE", "view_id": id, "values": map[string]any{}})
	wantErrs := map[string]any{bot.BlockIDDenyReason: "Please complete this required field."}
	if status != http.StatusOK || res["ok"] != false || !cmp.Equal(res["errors"], wantErrs) {
		t.Errorf("empty submit = %d %v, want 200 with errors %v", status, res, wantErrs)
	}
	if n := len(e.hook.all()); n != 0 {
		t.Fatalf("slackbot received %d requests for an incomplete modal, want none", n)
	}

	status, res = e.call(t, "submit", map[string]any{
		"user": "U0ALICE", "view_id": id,
		"values": map[string]map[string]string{bot.BlockIDDenyReason: {bot.ActionIDDenyReasonInput: "no"}},
	})
	wantErrs = map[string]any{bot.BlockIDDenyReason: "Say more than that."}
	if status != http.StatusOK || res["ok"] != false || !cmp.Equal(res["errors"], wantErrs) {
		t.Errorf("submit slackbot refuses = %d %v, want 200 with errors %v", status, res, wantErrs)
	}
	if v, _ := e.fake.View(id); v.Closed {
		t.Error("modal closed although slackbot answered with errors")
	}

	for name, req := range map[string]map[string]any{
		"unknown input":  {"user": "U0ALICE", "view_id": id, "values": map[string]map[string]string{"nope": {"x": "y"}}},
		"someone else's": {"user": "U0BOB", "view_id": id, "values": map[string]any{}},
		"unknown view":   {"user": "U0ALICE", "view_id": "V0NOPE", "values": map[string]any{}},
	} {
		if status, res := e.call(t, "submit", req); status < 400 || res["ok"] != false {
			t.Errorf("%s: POST /submit = %d %v, want a refusal", name, status, res)
		}
	}
}

func TestClose(t *testing.T) {
	e := newEnv(t)
	v := bot.ArgsModal(demoCard())
	v.NotifyOnClose = true
	id := openModal(t, e, v)
	status, res := e.call(t, "close", map[string]string{"user": "U0ALICE", "view_id": id})
	if status != http.StatusOK || res["ok"] != true {
		t.Fatalf("POST /close = %d %v, want 200 ok", status, res)
	}
	if got, _ := e.fake.View(id); !got.Closed {
		t.Error("modal still open after /close")
	}
	form, _ := url.ParseQuery(string(e.hook.only(t).Body))
	cb, err := bot.ParseInteraction(form.Get("payload"))
	if err != nil || cb.Type != slack.InteractionTypeViewClosed || cb.View.ID != id {
		t.Errorf("notify_on_close payload = %+v (%v), want view_closed for %s", cb, err, id)
	}
	if status, _ := e.call(t, "close", map[string]string{"user": "U0ALICE", "view_id": id}); status != http.StatusNotFound {
		t.Errorf("closing a closed modal = %d, want 404", status)
	}
}

func TestState(t *testing.T) {
	e := newEnv(t)
	card := demoCard()
	ts := e.postCard(t, card)
	if _, _, err := e.api.PostMessageContext(t.Context(), "C0APPROVALS", slack.MsgOptionText("done", false), slack.MsgOptionTS(ts)); err != nil {
		t.Fatal(err)
	}
	if _, err := e.api.PostEphemeralContext(t.Context(), "C0APPROVALS", "U0BOB", slack.MsgOptionText("You may not", false)); err != nil {
		t.Fatal(err)
	}
	if _, _, _, err := e.api.UpdateMessageContext(t.Context(), "C0APPROVALS", ts, slack.MsgOptionBlocks(bot.ApprovalBlocks(bot.Card{State: approval.CallApproved, ToolName: "x"})...)); err != nil {
		t.Fatal(err)
	}
	id := openModal(t, e, bot.ArgsModal(card))

	resp, err := http.Get(e.url + "state")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var st struct {
		Team       struct{ ID string }
		BotUserID  string `json:"bot_user_id"`
		Users      []struct{ ID string }
		Channels   []struct{ ID string }
		Messages   map[string][]map[string]any
		Ephemerals map[string][]map[string]any
		Views      []struct {
			ID   string
			View map[string]any
		}
	}
	if err := json.NewDecoder(resp.Body).Decode(&st); err != nil {
		t.Fatal(err)
	}
	if st.Team.ID != "T0FAKE" || st.BotUserID != "U0BOT" || len(st.Users) != 4 || len(st.Channels) != 3 {
		t.Errorf("state team %q bot %q users %d channels %d, want T0FAKE, U0BOT, 4, 3", st.Team.ID, st.BotUserID, len(st.Users), len(st.Channels))
	}
	msgs := st.Messages["C0APPROVALS"]
	if len(msgs) != 2 {
		t.Fatalf("#approvals has %d messages, want the card and its reply", len(msgs))
	}
	card0 := msgs[0]
	if card0["reply_count"] != float64(1) || card0["edited"] == nil || card0["edits"] != float64(1) {
		t.Errorf("card = reply_count %v edited %v edits %v, want 1 reply, edited once", card0["reply_count"], card0["edited"], card0["edits"])
	}
	blocks, _ := card0["blocks"].([]any)
	for i, b := range blocks {
		if id, _ := b.(map[string]any)["block_id"].(string); id == "" {
			t.Errorf("block %d has no block_id; the page needs one to click", i)
		}
	}
	if msgs[1]["thread_ts"] != ts {
		t.Errorf("reply thread_ts = %v, want %s", msgs[1]["thread_ts"], ts)
	}
	if eph := st.Ephemerals["U0BOB"]; len(eph) != 1 || eph[0]["text"] != "You may not" {
		t.Errorf("Bob's ephemerals = %v, want the one posted", eph)
	}
	if len(st.Views) != 1 || st.Views[0].ID != id || st.Views[0].View["callback_id"] != bot.CallbackViewArgs {
		t.Errorf("views = %+v, want the args modal %s", st.Views, id)
	}
}

func TestEventsStream(t *testing.T) {
	e := newEnv(t)
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, e.url+"changes", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("Content-Type = %q, want text/event-stream", ct)
	}
	r := bufio.NewReader(resp.Body)
	if name, _ := readEvent(t, r); name != "ready" {
		t.Fatalf("first event %q, want ready", name)
	}
	m, err := e.fake.PostAsUser("C0GENERAL", "U0CAROL", "hello", "")
	if err != nil {
		t.Fatal(err)
	}
	name, data := readEvent(t, r)
	var change map[string]any
	if err := json.Unmarshal([]byte(data), &change); err != nil {
		t.Fatalf("event data %q: %v", data, err)
	}
	want := map[string]any{"seq": float64(1), "kind": "message", "channel": "C0GENERAL", "ts": m.TS, "user": "U0CAROL"}
	if name != "change" || !cmp.Equal(change, want) {
		t.Errorf("event %q %v, want change %v", name, change, want)
	}
}

// readEvent reads one server-sent event, skipping comments.
func readEvent(t *testing.T, r *bufio.Reader) (name, data string) {
	t.Helper()
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			t.Fatalf("read event stream: %v", err)
		}
		line = strings.TrimRight(line, "\n")
		switch {
		case line == "" && (name != "" || data != ""):
			return name, data
		case strings.HasPrefix(line, "event: "):
			name = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			data = strings.TrimPrefix(line, "data: ")
		}
	}
}

func TestRequestLimits(t *testing.T) {
	e := newEnv(t)
	if _, err := e.fake.PostAsUser("U0CAROL", "U0CAROL", "hi", ""); err != nil { // opens D0CAROL
		t.Fatal(err)
	}
	huge := `{"user":"U0CAROL","channel":"C0GENERAL","text":"` + strings.Repeat("a", 70<<10) + `"}`
	tests := []struct {
		name   string
		path   string
		body   string
		status int
	}{
		{"body over 64 KB", "post", huge, http.StatusRequestEntityTooLarge},
		{"not JSON", "post", `{"user":`, http.StatusBadRequest},
		{"unknown field", "click", `{"user":"U0ALICE","acton_id":"approve"}`, http.StatusBadRequest},
		{"trailing data", "close", `{"view_id":"V1"} {}`, http.StatusBadRequest},
		{"not JSON content", "post", "", http.StatusUnsupportedMediaType},
		{"empty message", "post", `{"user":"U0CAROL","channel":"C0GENERAL","text":"  "}`, http.StatusBadRequest},
		{"unknown channel", "post", `{"user":"U0CAROL","channel":"C0NOPE","text":"hi"}`, http.StatusNotFound},
		{"someone else's DM", "post", `{"user":"U0BOB","channel":"D0CAROL","text":"hi"}`, http.StatusBadRequest},
		{"unknown thread", "post", `{"user":"U0CAROL","channel":"C0GENERAL","text":"hi","thread_ts":"1.000001"}`, http.StatusNotFound},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			status, res := e.callRaw(t, tt.path, []byte(tt.body))
			if status != tt.status || res["ok"] != false || res["error"] == "" {
				t.Errorf("POST /%s = %d %v, want %d with an error", tt.path, status, res, tt.status)
			}
		})
	}
}

func TestPageAndAssets(t *testing.T) {
	e := newEnv(t)
	tests := []struct {
		path, contentType, contains string
	}{
		{"", "text/html; charset=utf-8", `src="static/app.js"`},
		{"static/app.js", "text/javascript; charset=utf-8", "textContent"},
		{"static/app.css", "text/css; charset=utf-8", ".btn-primary"},
	}
	for _, tt := range tests {
		resp, err := http.Get(e.url + tt.path)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != tt.contentType || !bytes.Contains(body, []byte(tt.contains)) {
			t.Errorf("GET /dev/%s = %d %q, want 200 %q containing %q", tt.path, resp.StatusCode, resp.Header.Get("Content-Type"), tt.contentType, tt.contains)
		}
		if tt.path == "" && !strings.Contains(resp.Header.Get("Content-Security-Policy"), "script-src 'self'") {
			t.Errorf("page CSP = %q, want scripts from the page's origin only", resp.Header.Get("Content-Security-Policy"))
		}
	}
	// The page's script never parses workspace text as HTML.
	resp, err := http.Get(e.url + "static/app.js")
	if err != nil {
		t.Fatal(err)
	}
	js, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, sink := range []string{"innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval("} {
		if bytes.Contains(js, []byte(sink)) {
			t.Errorf("app.js uses %s", sink)
		}
	}
}

func TestResponseURL(t *testing.T) {
	e := newEnv(t)
	card := demoCard()
	ts := e.postCard(t, card)
	if status, res := e.call(t, "click", map[string]string{"user": "U0ALICE", "channel": "C0APPROVALS", "ts": ts, "action_id": "approve", "block_id": bot.CardBlockID(bot.BlockIDActions, card)}); status != http.StatusOK {
		t.Fatalf("POST /click = %d %v", status, res)
	}
	form, _ := url.ParseQuery(string(e.hook.only(t).Body))
	cb, err := bot.ParseInteraction(form.Get("payload"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(cb.ResponseURL, e.url+"response/") {
		t.Fatalf("response_url = %q, want one on the emulator (%sresponse/…)", cb.ResponseURL, e.url)
	}
	respond := func(body string) int {
		t.Helper()
		resp, err := http.Post(cb.ResponseURL, "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}

	if got := respond(`{"replace_original":true,"text":"Approved by Alice"}`); got != http.StatusOK {
		t.Fatalf("replace_original = %d, want 200", got)
	}
	if m, _ := e.fake.Message("C0APPROVALS", ts); m.Text != "Approved by Alice" || m.Edited.IsZero() {
		t.Errorf("message after replace_original = %q (edited %v), want the new text", m.Text, m.Edited)
	}
	if got := respond(`{"text":"Only you see this"}`); got != http.StatusOK {
		t.Fatalf("ephemeral response = %d, want 200", got)
	}
	if eph := e.fake.Ephemerals("U0ALICE"); len(eph) != 1 || eph[0].Text != "Only you see this" {
		t.Errorf("Alice's ephemerals = %+v, want the response", eph)
	}
	if got := respond(`{"response_type":"in_channel","text":"Everyone sees this","thread_ts":"` + ts + `"}`); got != http.StatusOK {
		t.Fatalf("in_channel response = %d, want 200", got)
	}
	if replies := e.fake.Replies("C0APPROVALS", ts); len(replies) != 2 || replies[1].Text != "Everyone sees this" {
		t.Errorf("thread = %+v, want the in_channel reply", replies)
	}
	if got := respond(`{"delete_original":true}`); got != http.StatusOK {
		t.Fatalf("delete_original = %d, want 200", got)
	}
	if m, _ := e.fake.Message("C0APPROVALS", ts); !m.Deleted {
		t.Error("message not deleted by delete_original")
	}
	if got := respond(`{"text":"fifth"}`); got != http.StatusOK {
		t.Fatalf("fifth use = %d, want 200", got)
	}
	if got := respond(`{"text":"sixth"}`); got != http.StatusConflict {
		t.Errorf("sixth use = %d, want 409 (a response_url works five times)", got)
	}
	if got, want := func() int {
		resp, err := http.Post(e.url+"response/nope", "application/json", strings.NewReader(`{}`))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}(), http.StatusNotFound; got != want {
		t.Errorf("unknown response_url = %d, want %d", got, want)
	}
}
