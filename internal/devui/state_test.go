package devui_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/slack-go/slack"
	"github.com/slackapprove/slackbot/approval"
	"github.com/slackapprove/slackbot/bot"
)

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

func TestChangesStream(t *testing.T) {
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
	if name, _ := readSSE(t, r); name != "ready" {
		t.Fatalf("first event %q, want ready", name)
	}
	m, err := e.fake.PostAsUser("C0GENERAL", "U0CAROL", "hello", "")
	if err != nil {
		t.Fatal(err)
	}
	name, data := readSSE(t, r)
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
func readSSE(t *testing.T, r *bufio.Reader) (name, data string) {
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
