package main

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/slackapprove/slackbot/bot"
	"github.com/slackapprove/slackbot/internal/apitest"
	"github.com/slackapprove/slackbot/internal/slackfake"
	"github.com/slackapprove/slackbot/internal/slacktest"
)

// apiCall makes one request of the HTTP API with key and checks the
// response against the OpenAPI document; it returns the status and body.
func (e *env) apiCall(doc *apitest.Doc, key, method, path, body string) (int, []byte) {
	e.t.Helper()
	var r io.Reader
	if body != "" {
		r = strings.NewReader(body)
	}
	req, err := http.NewRequestWithContext(e.t.Context(), method, e.srv.URL+path, r)
	if err != nil {
		e.t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+key)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		e.t.Fatal(err)
	}
	doc.Check(e.t, method, req.URL.Path, resp.StatusCode, resp.Header, b)
	return resp.StatusCode, b
}

// apiRequest is the part of an approval request's JSON these tests read.
type apiRequest struct {
	Token   string          `json:"token"`
	Status  string          `json:"status"`
	Results json.RawMessage `json:"results"`
	Calls   []struct {
		State     string  `json:"state"`
		DecidedBy *string `json:"decided_by"`
	} `json:"calls"`
}

func decodeRequest(t *testing.T, b []byte) apiRequest {
	t.Helper()
	var a apiRequest
	if err := json.Unmarshal(b, &a); err != nil {
		t.Fatalf("decode approval: %v in %s", err, b)
	}
	return a
}

// jsonEqual fails t unless got and want are the same JSON value.
var jsonEqual = apitest.JSONEqual

// apiCard waits for the card of an API request's call in Slack.
func (e *env) apiCard(token, callID string) slackfake.Message {
	e.t.Helper()
	m, err := e.waitCard(e.t.Context(), token, callID)
	if err != nil {
		e.t.Fatalf("the card of %s: %v", callID, err)
	}
	return m
}

// apiE2E is the whole app with the HTTP API on, and the OpenAPI document
// every response is checked against.
type apiE2E struct {
	*env
	doc *apitest.Doc
}

// create creates an approval request for billing, failing t unless 201.
func (x apiE2E) create(t *testing.T, body string) apiRequest {
	t.Helper()
	status, b := x.apiCall(x.doc, keyBilling, http.MethodPost, "/v1/approvals", body)
	if status != http.StatusCreated {
		t.Fatalf("create: got %d %s", status, b)
	}
	return decodeRequest(t, b)
}

// get reads an approval request as billing, long-polling for wait.
func (x apiE2E) get(t *testing.T, token, wait string) (int, []byte) {
	t.Helper()
	path := "/v1/approvals/" + token
	if wait != "" {
		path += "?wait=" + wait
	}
	return x.apiCall(x.doc, keyBilling, http.MethodGet, path, "")
}

// deletion is a create request body for one approval of delete_file.
func deletion(id, path, extra string) string {
	return `{"approvals":[{"tool_name":"delete_file","args":{"path":"` + path + `"},"tool_call_id":"` + id + `","part_kind":"tool-call"}]` + extra + `}`
}

// sandboxDeletion is deletion on the sandbox route, where the key that
// asks may approve its own call (allow_self_approval).
func sandboxDeletion(id, path, extra string) string {
	return strings.Replace(deletion(id, path, extra), `"delete_file"`, `"sandbox_delete_file"`, 1)
}

// TestAPIEndToEnd follows API requests through the whole app: the cards
// slackbot posts to Slack show what the agent sent, a click or a form in
// Slack answers the agent's long poll, and every end (an API answer,
// expiry, cancellation) shows on the cards.
func TestAPIEndToEnd(t *testing.T) {
	t.Parallel()
	x := apiE2E{env: newAPIEnv(t), doc: apitest.Load(t)}
	t.Run("approve by click, answered by long poll", x.approveByClick)
	t.Run("deny with reason", x.denyWithReason)
	t.Run("an API answer shows on the card", x.answerShows)
	t.Run("expiry shows on the card", x.expiryShows)
	t.Run("cancel shows on every card", x.cancelShows)
}

func (x apiE2E) approveByClick(t *testing.T) {
	a := x.create(t, deletion("call_1", "/tmp/report.csv", `,"requester":"Ticket bot","context":"Customer asked to delete their export in ticket #42."`))
	card := x.apiCard(a.Token, "call_1")
	text := strings.ReplaceAll(string(card.BlocksJSON), `\u0026`, "&")
	for _, want := range []string{"Customer asked to delete their export in ticket #42.", "Ticket bot", "delete_file", "/tmp/report.csv"} {
		if !strings.Contains(text, want) {
			t.Errorf("the card does not show %q: %s", want, text)
		}
	}
	if status := x.click(alice, card, bot.ActionIDApprove); status != http.StatusOK {
		t.Fatalf("click: got %d", status)
	}
	status, b := x.get(t, a.Token, "10s")
	done := decodeRequest(t, b)
	if status != http.StatusOK || done.Status != "resolved" || done.Calls[0].State != "approved" || *done.Calls[0].DecidedBy != alice {
		t.Errorf("after the click: got %d %s", status, b)
	}
	rest := takeReceipt(t, x.srv.URL, done.Results, "call_1", "delete_file", `{"path":"/tmp/report.csv"}`, a.Token)
	jsonEqual(t, "results", rest, `{"calls":{},"approvals":{"call_1":true},"metadata":{},"answered_by":{"call_1":"U0ALICE"}}`)
	x.waitFor("the card to say approved", func() bool {
		return strings.Contains(string(x.latest(card).BlocksJSON), "Approved")
	})
}

func (x apiE2E) denyWithReason(t *testing.T) {
	a := x.create(t, deletion("call_2", "/srv/data", ""))
	card := x.apiCard(a.Token, "call_2")
	trigger := x.slack.IssueTrigger(bob, "")
	click := slacktest.Click{Team: testTeam, User: bob, Message: card, Button: button(t, card, bot.ActionIDDenyReason), TriggerID: trigger}.Payload()
	if status, err := x.slackPost(t.Context(), click); err != nil || status != http.StatusOK {
		t.Fatalf("click deny_reason: got %d, %v", status, err)
	}
	var view slackfake.View
	x.waitFor("the deny_reason modal", func() bool {
		for _, v := range x.slack.Views() {
			if v.TriggerID == trigger && v.CallbackID == bot.CallbackDenyReason {
				view = v
				return true
			}
		}
		return false
	})
	x.submit(bob, view, map[string]map[string]string{bot.BlockIDDenyReason: {bot.ActionIDDenyReasonInput: "Not on a Friday."}})
	_, b := x.get(t, a.Token, "10s")
	done := decodeRequest(t, b)
	if done.Status != "resolved" || done.Calls[0].State != "denied" {
		t.Errorf("after the denial: got %s", b)
	}
	jsonEqual(t, "results", done.Results,
		`{"calls":{},"approvals":{"call_2":{"message":"Not on a Friday.","kind":"tool-denied"}},"metadata":{},"answered_by":{"call_2":"U0BOB"}}`)
}

func (x apiE2E) answerShows(t *testing.T) {
	a := x.create(t, sandboxDeletion("call_3", "/srv/all", ""))
	card := x.apiCard(a.Token, "call_3")
	status, b := x.apiCall(x.doc, keyBilling, http.MethodPost, "/v1/approvals/"+a.Token+"/results",
		`{"approvals":{"call_3":{"kind":"tool-approved","override_args":{"path":"/srv/all/tmp"}}}}`)
	if status != http.StatusOK {
		t.Fatalf("results: got %d %s", status, b)
	}
	done := decodeRequest(t, b)
	x.waitFor("the card to show the API's approval", func() bool {
		s := string(x.latest(card).BlocksJSON)
		return strings.Contains(s, "Approved") && strings.Contains(s, "billing")
	})
	// A click on the card as it was changes nothing.
	x.click(alice, card, bot.ActionIDApprove)
	_, again := x.get(t, a.Token, "")
	jsonEqual(t, "results after a late click", decodeRequest(t, again).Results, string(done.Results))
}

func (x apiE2E) expiryShows(t *testing.T) {
	a := x.create(t, deletion("call_4", "/tmp/old", `,"timeout":"1m"`))
	card := x.apiCard(a.Token, "call_4")
	x.clock.Add(2 * time.Minute)
	x.waitFor("the card to say expired", func() bool { return strings.Contains(string(x.latest(card).BlocksJSON), "Expired") })
	if _, b := x.get(t, a.Token, ""); decodeRequest(t, b).Status != "expired" {
		t.Errorf("after the deadline: got %s", b)
	}
}

func (x apiE2E) cancelShows(t *testing.T) {
	a := x.create(t, `{"approvals":[{"tool_name":"delete_file","args":{"path":"/a"},"tool_call_id":"c1"}],"calls":[{"tool_name":"fetch_report","args":{},"tool_call_id":"c2"}]}`)
	cards := []slackfake.Message{x.apiCard(a.Token, "c1"), x.apiCard(a.Token, "c2")}
	if status, b := x.apiCall(x.doc, keyBilling, http.MethodDelete, "/v1/approvals/"+a.Token, ""); status != http.StatusOK {
		t.Fatalf("cancel: got %d %s", status, b)
	}
	for _, card := range cards {
		x.waitFor("the card of "+card.TS+" to say cancelled", func() bool {
			return strings.Contains(string(x.latest(card).BlocksJSON), "Cancelled")
		})
	}
}
