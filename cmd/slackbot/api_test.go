package main

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/slackapprove/slackbot/bot"
	"github.com/slackapprove/slackbot/internal/slackfake"
	"github.com/slackapprove/slackbot/internal/slackfaketest"
	"github.com/slackapprove/slackbot/store/redistest"
)

// TestServeHTTPAPI: with API_KEYS set, `serve` serves /v1: an agent in any
// language creates an approval from Pydantic AI's DeferredToolRequests, an
// approver clicks in Slack, and the long poll returns the
// DeferredToolResults. Without the key: 401.
func TestServeHTTPAPI(t *testing.T) {
	t.Parallel()
	fake, fakeSrv := slackfaketest.NewTestServer(t, slackfake.WithDemoWorkspace())
	rs := redistest.StartServer(t)
	routes := filepath.Join(t.TempDir(), "routes.yaml")
	if err := os.WriteFile(routes, []byte(testRoutes), 0o600); err != nil {
		t.Fatal(err)
	}
	const key = "agent-key-0123456789abcdef"
	vars := map[string]string{
		"SLACK_BOT_TOKEN": fake.Token(), "SLACK_SIGNING_SECRET": testSecret, "SLACK_API_URL": slackfaketest.APIURL(fakeSrv),
		"REDIS_URL": rs.URL(), "ROUTES_FILE": routes, "ADDR": "127.0.0.1:0", "API_KEYS": "ticketbot=" + key,
	}
	base, _ := startRun(t, vars, "serve")

	call := func(method, path, auth string, body []byte) (int, map[string]any) {
		t.Helper()
		req, err := http.NewRequest(method, base+path, bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		if auth != "" {
			req.Header.Set("Authorization", "Bearer "+auth)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		var out map[string]any
		_ = json.Unmarshal(b, &out)
		return resp.StatusCode, out
	}
	create := []byte(`{"approvals":[{"tool_name":"delete_customer","args":{"customer_id":"C-42"},"tool_call_id":"call_1","part_kind":"tool-call"}],
		"calls":[],"metadata":{},"requester":"ticket triage","context":"Ticket #812 asks to close this account"}`)
	if status, _ := call(http.MethodPost, "/v1/approvals", "wrong-key-0123456789abcdef", create); status != http.StatusUnauthorized {
		t.Fatalf("wrong key: got %d, want 401", status)
	}
	status, created := call(http.MethodPost, "/v1/approvals", key, create)
	if status != http.StatusCreated {
		t.Fatalf("create: got %d %v, want 201", status, created)
	}
	token, _ := created["token"].(string)
	e := &env{t: t, slack: fake}
	card := e.waitCards(1)[0]
	if !strings.Contains(cardText(card), "Ticket #812") {
		t.Errorf("card does not show the context: %s", card.BlocksJSON)
	}
	postSigned(t, base+"/slack/interactivity", "application/x-www-form-urlencoded", e.clickPayload(alice, "T0FAKE", card, bot.ActionIDApprove))
	status, got := call(http.MethodGet, "/v1/approvals/"+token+"?wait=20s", key, nil)
	if status != http.StatusOK || got["status"] != "resolved" {
		t.Fatalf("long poll: got %d %v, want resolved", status, got)
	}
	results, _ := json.Marshal(got["results"])
	if want := `"approvals":{"call_1":true}`; !strings.Contains(string(results), want) {
		t.Errorf("results %s lack %s", results, want)
	}
	if status, _ := call(http.MethodGet, "/v1/openapi.json", key, nil); status != http.StatusOK {
		t.Errorf("/v1/openapi.json: got %d", status)
	}
}
