package main

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/slackapprove/slackbot/bot"
	"github.com/slackapprove/slackbot/store"
)

// crashCardKey is the API key of the crash tests' API client "billing".
const crashCardKey = "c0ffee0123456789abcdef0123456789"

// createOn creates an approval request for one delete_file call through
// the HTTP API of p and returns its token.
func (c *cluster) createOn(p *proc) string {
	c.t.Helper()
	body := `{"approvals":[{"tool_name":"delete_file","args":{"path":"/tmp/export.csv"},"tool_call_id":"call_1","part_kind":"tool-call"}]}`
	req, err := http.NewRequestWithContext(c.t.Context(), http.MethodPost, p.base+"/v1/approvals", bytes.NewBufferString(body))
	if err != nil {
		c.t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+crashCardKey)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		c.t.Fatal(err)
	}
	defer resp.Body.Close()
	var a struct {
		Token string `json:"token"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&a); err != nil || resp.StatusCode != http.StatusCreated || a.Token == "" {
		c.t.Fatalf("create: %d, %v", resp.StatusCode, err)
	}
	return a.Token
}

// Killed after acknowledging a click, before its card update reached
// Slack (the chat.update is held on its way): the card of an HTTP API
// request, which no run's end repairs, is updated by replica B's job
// consumer within the bound (store.CardJobDelay, then a job consumer's
// poll) and ends without buttons, showing the decision.
func TestCrashBeforeClickCardUpdate(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("starts processes")
	}
	c := newCluster(t, durableRoutes)
	c.env = append(c.env, "API_KEYS=billing="+crashCardKey)
	hold := c.holdSlack()
	a, _ := c.start("A"), c.start("B")
	c.createOn(a)
	e := &env{t: t, slack: c.slack}
	card := e.waitCards(1)[0]

	hold.arm("chat.update")
	clicked := time.Now()
	postSigned(t, a.base+"/slack/interactivity", "application/x-www-form-urlencoded", e.clickPayload(alice, "T0FAKE", card, bot.ActionIDApprove))
	select {
	case <-hold.arrived:
	case <-time.After(takeoverWait):
		t.Fatal("A never sent the card's update")
	}
	a.kill(t)
	// The proxy may still forward the held update once lifted (its client
	// is gone, but it has not read the body to notice): Slack refuses
	// that one, as if it never arrived.
	c.slack.FailNext("chat.update", http.StatusServiceUnavailable, 1)
	hold.lift()
	time.Sleep(200 * time.Millisecond)
	if text := cardText(e.latest(card)); !strings.Contains(text, `"type":"actions"`) {
		t.Fatalf("the card changed before B's job: %s", text)
	}

	bound := store.CardJobDelay + 15*time.Second
	deadline := clicked.Add(bound)
	for {
		text := cardText(e.latest(card))
		if !strings.Contains(text, `"type":"actions"`) && strings.Contains(text, "Approved") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the card %s after the click: %s; want no buttons and Approved", bound, text)
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Logf("B updated the card %s after the click", time.Since(clicked).Round(time.Millisecond))
	if took := time.Since(clicked); took < store.CardJobDelay-time.Second {
		t.Errorf("the card was updated %s after the click, before its job was due: by whom?", took)
		for _, call := range c.slack.Calls("chat.update") {
			t.Logf("chat.update at +%s: %d %s", call.At.Sub(clicked), call.Status, call.Error)
		}
	}
}
