package main

import (
	"bytes"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/slack-go/slack"

	"github.com/slackapprove/slackbot/agentrunner"
	"github.com/slackapprove/slackbot/bot"
	"github.com/slackapprove/slackbot/internal/slackfake"
	"github.com/slackapprove/slackbot/store"
	"github.com/slackapprove/slackbot/store/redistest"
)

// The minimal click path does the work it stands for: a signed click on a
// pending approval created as the bench creates slackbot's is answered
// 200, records the approval once (a second click changes nothing), and
// updates the card to show the decision.
func TestMinimalClickPath(t *testing.T) {
	rdb := redistest.StartServer(t).Client(t).(*redis.Client)
	st := store.New(rdb, store.Options{})
	fake := slackfake.New(slackfake.WithDemoWorkspace())
	api := httptest.NewServer(fake)
	t.Cleanup(api.Close)
	ctx := t.Context()
	sl, err := postSlots(ctx, slack.New(fake.Token(), slack.OptionAPIURL(api.URL+"/api/")))
	if err != nil {
		t.Fatal(err)
	}
	slot := sl[0]
	before := findMessage(t, fake, slot.Channel, slot.ID).Text
	body, err := prepareClick(ctx, []*store.Store{st}, "t-1", slot)
	if err != nil {
		t.Fatal(err)
	}
	m := &minimal{rdb: rdb, updates: make(chan struct{}, minimalUpdates),
		slack: api.Client(), slackURL: api.URL + "/api/chat.update", slackToken: fake.Token()}
	h := bot.VerifySlack(benchSecret, slog.New(slog.DiscardHandler), m)
	click := func(by string) int {
		b := bytes.Replace(body, []byte(alice), []byte(by), 1)
		req := httptest.NewRequest(http.MethodPost, "/slack/interactivity", bytes.NewReader(b))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		bot.SignSlackRequest(req.Header, benchSecret, time.Now(), b)
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		return w.Code
	}
	if code := click(alice); code != http.StatusOK {
		t.Fatalf("click: status %d", code)
	}
	if code := click("U0BOB"); code != http.StatusOK {
		t.Fatalf("second click: status %d", code)
	}
	// Wait for the card update to finish.
	for range minimalUpdates {
		m.updates <- struct{}{}
	}
	keys, err := rdb.Keys(ctx, store.DefaultPrefix+"a:*").Result()
	if err != nil || len(keys) != 1 {
		t.Fatalf("records: %v, %v", keys, err)
	}
	rec := rdb.HGetAll(ctx, keys[0]).Val()
	if rec["c1.st"] != "approved" || rec["c1.by"] != alice || rec["state"] != "resolved" {
		t.Errorf("record after two clicks: st %q by %q state %q, want approved by %s, resolved", rec["c1.st"], rec["c1.by"], rec["state"], alice)
	}
	a, err := st.Get(ctx, keys[0][len(store.DefaultPrefix+"a:"):])
	if err != nil {
		t.Fatal(err)
	}
	if r, ok := a.Results(nil).Approvals[a.Calls[0].ID]; !ok || !r.Approved || a.Calls[0].Kind != agentrunner.KindApproval {
		t.Errorf("the store reads the record as %+v, results %+v; want the call approved", a.Calls[0], a.Results(nil))
	}
	if after := findMessage(t, fake, slot.Channel, slot.ID).Text; after == before {
		t.Errorf("the card was not updated: still %q", after)
	}
}

func findMessage(t *testing.T, fake *slackfake.Server, channel, ts string) slackfake.Message {
	t.Helper()
	for _, m := range fake.Messages(channel) {
		if m.TS == ts {
			return m
		}
	}
	t.Fatalf("no message %s in %s", ts, channel)
	return slackfake.Message{}
}
