package main

import (
	"bufio"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/slackapprove/slackbot/bot"
	"github.com/slackapprove/slackbot/internal/apitest"
	"github.com/slackapprove/slackbot/store/redistest"
)

// scrapeMetric returns the value of the sample line name (with its labels)
// on the app's /metrics, or "" when there is none.
func (e *env) scrapeMetric(sample string) string {
	e.t.Helper()
	rec := httptest.NewRecorder()
	e.app.metrics.handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	sc := bufio.NewScanner(rec.Body)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), sample+" "); ok {
			return v
		}
	}
	return ""
}

// With REDIS_WAIT_REPLICAS=1 and the replica not answering, a click is
// acknowledged with an ephemeral "not in effect yet" and the API answers
// 503 with Retry-After, each counted by operation; once the replica is
// back the same click is confirmed and the request resolves.
func TestWaitReplicasUnconfirmed(t *testing.T) {
	t.Parallel()
	primary := redistest.StartServer(t)
	replica := redistest.StartReplica(t, primary)
	x := apiE2E{env: newEnv(t, envOptions{redis: primary.Client(t), waitReplicas: 1,
		routes: apitest.Routes, apiKeys: apitest.Keys, wallClock: true}), doc: apitest.Load(t)}
	clicked := x.create(t, deletion("call_1", "/tmp/a.csv", ""))
	answered := x.create(t, sandboxDeletion("call_2", "/tmp/b.csv", ""))
	cancelled := x.create(t, deletion("call_3", "/tmp/c.csv", ""))
	card := x.apiCard(clicked.Token, "call_1")

	replica.Pause(t)
	defer replica.Resume(t)
	if status := x.click(alice, card, bot.ActionIDApprove); status != http.StatusOK {
		t.Fatalf("click: got %d, want 200 (acknowledged)", status)
	}
	x.waitFor("alice's ephemeral", func() bool { return len(x.ephemeralsFor(alice)) > 0 })
	if got := x.ephemeralsFor(alice); len(got) != 1 || !strings.Contains(got[0], "Your decision is not in effect yet: Redis's replicas have not confirmed it") {
		t.Errorf("ephemerals after an unconfirmed click: %q", got)
	}
	status, b := x.apiCall(x.doc, keyBilling, http.MethodPost, "/v1/approvals/"+answered.Token+"/results", `{"approvals":{"call_2":true}}`)
	if status != http.StatusServiceUnavailable || !strings.Contains(string(b), `"unconfirmed"`) {
		t.Errorf("answer with the replica paused: %d %s, want 503 unconfirmed", status, b)
	}
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodDelete, x.srv.URL+"/v1/approvals/"+cancelled.Token, nil)
	req.Header.Set("Authorization", "Bearer "+keyBilling)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" {
		t.Errorf("cancel with the replica paused: %d, Retry-After %q; want 503 with Retry-After", resp.StatusCode, resp.Header.Get("Retry-After"))
	}
	withKey := deletion("call_4", "/tmp/d.csv", `,"idempotency_key":"unconfirmed-create"`)
	if status, b := x.apiCall(x.doc, keyBilling, http.MethodPost, "/v1/approvals", withKey); status != http.StatusServiceUnavailable {
		t.Errorf("create with the replica paused: %d %s, want 503", status, b)
	}
	for op, want := range map[string]string{"decide": "1", "answer": "1", "cancel": "1", "create": "1"} {
		if got := x.scrapeMetric(`slackbot_redis_unconfirmed_writes_total{op="` + op + `"}`); got != want {
			t.Errorf("slackbot_redis_unconfirmed_writes_total{op=%q} = %q, want %s", op, got, want)
		}
	}

	replica.Resume(t)
	if status := x.click(alice, card, bot.ActionIDApprove); status != http.StatusOK {
		t.Fatalf("the same click again: got %d", status)
	}
	status, b = x.get(t, clicked.Token, "10s")
	if done := decodeRequest(t, b); status != http.StatusOK || done.Status != "resolved" || done.Calls[0].State != "approved" {
		t.Errorf("after the confirmed click: %d %s", status, b)
	}
	// The create is repeated with its idempotency key: a request is made.
	if status, b := x.apiCall(x.doc, keyBilling, http.MethodPost, "/v1/approvals", withKey); status != http.StatusCreated {
		t.Errorf("the same create, replica back: %d %s, want 201", status, b)
	}
	if got := x.ephemeralsFor(alice); len(got) != 1 {
		t.Errorf("ephemerals after the confirmed click: %q, want only the first", got)
	}
	if got := x.scrapeMetric(`slackbot_redis_unconfirmed_writes_total{op="decide"}`); got != "1" {
		t.Errorf("unconfirmed decisions after the confirmed click: %s, want still 1", got)
	}
}
