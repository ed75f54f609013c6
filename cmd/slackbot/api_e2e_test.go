package main

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

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
func jsonEqual(t *testing.T, what string, got []byte, want string) {
	t.Helper()
	var g, w any
	if err := json.Unmarshal(got, &g); err != nil {
		t.Fatalf("%s: %v in %s", what, err, got)
	}
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatalf("%s: bad want: %v", what, err)
	}
	if diff := cmp.Diff(w, g); diff != "" {
		t.Errorf("%s (-want +got):\n%s\ngot %s", what, diff, got)
	}
}

// apiCard waits for the card of an API request's call in Slack.
func (e *env) apiCard(token, callID string) slackfake.Message {
	e.t.Helper()
	m, err := e.waitCard(e.t.Context(), token, callID)
	if err != nil {
		e.t.Fatalf("the card of %s: %v", callID, err)
	}
	return m
}

// TestAPIEndToEnd follows API requests through the whole app: the cards
// slackbot posts to Slack show what the agent sent, a click or a form in
// Slack answers the agent's long poll, and every end (an API answer,
// expiry, cancellation) shows on the cards.
func TestAPIEndToEnd(t *testing.T) {
	doc := apitest.Load(t)
	e := newAPIEnv(t)
	create := func(body string) apiRequest {
		t.Helper()
		status, b := e.apiCall(doc, keyBilling, http.MethodPost, "/v1/approvals", body)
		if status != http.StatusCreated {
			t.Fatalf("create: got %d %s", status, b)
		}
		return decodeRequest(t, b)
	}
	deletion := func(id, path, extra string) string {
		return `{"approvals":[{"tool_name":"delete_file","args":{"path":"` + path + `"},"tool_call_id":"` + id + `","part_kind":"tool-call"}]` + extra + `}`
	}

	t.Run("approve by click, answered by long poll", func(t *testing.T) {
		a := create(deletion("call_1", "/tmp/report.csv", `,"requester":"Ticket bot","context":"Customer asked to delete their export in ticket #42."`))
		card := e.apiCard(a.Token, "call_1")
		text := strings.ReplaceAll(string(card.BlocksJSON), `\u0026`, "&")
		for _, want := range []string{"Customer asked to delete their export in ticket #42.", "Ticket bot", "delete_file", "/tmp/report.csv"} {
			if !strings.Contains(text, want) {
				t.Errorf("the card does not show %q: %s", want, text)
			}
		}
		if status := e.click(alice, card, bot.ActionIDApprove); status != http.StatusOK {
			t.Fatalf("click: got %d", status)
		}
		status, b := e.apiCall(doc, keyBilling, http.MethodGet, "/v1/approvals/"+a.Token+"?wait=10s", "")
		done := decodeRequest(t, b)
		if status != http.StatusOK || done.Status != "resolved" || done.Calls[0].State != "approved" || *done.Calls[0].DecidedBy != alice {
			t.Errorf("after the click: got %d %s", status, b)
		}
		jsonEqual(t, "results", done.Results, `{"calls":{},"approvals":{"call_1":true},"metadata":{},"answered_by":{"call_1":"U0ALICE"}}`)
		e.waitFor("the card to say approved", func() bool {
			return strings.Contains(string(e.latest(card).BlocksJSON), "Approved")
		})
	})

	t.Run("deny with reason", func(t *testing.T) {
		a := create(deletion("call_2", "/srv/data", ""))
		card := e.apiCard(a.Token, "call_2")
		trigger := e.slack.IssueTrigger(bob, "")
		click := slacktest.Click{Team: testTeam, User: bob, Message: card, Button: button(t, card, bot.ActionIDDenyReason), TriggerID: trigger}.Payload()
		if status, err := e.slackPost(t.Context(), click); err != nil || status != http.StatusOK {
			t.Fatalf("click deny_reason: got %d, %v", status, err)
		}
		var view slackfake.View
		e.waitFor("the deny_reason modal", func() bool {
			for _, v := range e.slack.Views() {
				if v.TriggerID == trigger && v.CallbackID == bot.CallbackDenyReason {
					view = v
					return true
				}
			}
			return false
		})
		e.submit(bob, view, map[string]map[string]string{bot.BlockIDDenyReason: {bot.ActionIDDenyReasonInput: "Not on a Friday."}})
		_, b := e.apiCall(doc, keyBilling, http.MethodGet, "/v1/approvals/"+a.Token+"?wait=10s", "")
		done := decodeRequest(t, b)
		if done.Status != "resolved" || done.Calls[0].State != "denied" {
			t.Errorf("after the denial: got %s", b)
		}
		jsonEqual(t, "results", done.Results,
			`{"calls":{},"approvals":{"call_2":{"message":"Not on a Friday.","kind":"tool-denied"}},"metadata":{},"answered_by":{"call_2":"U0BOB"}}`)
	})

	t.Run("an API answer shows on the card", func(t *testing.T) {
		a := create(deletion("call_3", "/srv/all", ""))
		card := e.apiCard(a.Token, "call_3")
		status, b := e.apiCall(doc, keyBilling, http.MethodPost, "/v1/approvals/"+a.Token+"/results",
			`{"approvals":{"call_3":{"kind":"tool-approved","override_args":{"path":"/srv/all/tmp"}}}}`)
		if status != http.StatusOK {
			t.Fatalf("results: got %d %s", status, b)
		}
		done := decodeRequest(t, b)
		e.waitFor("the card to show the API's approval", func() bool {
			s := string(e.latest(card).BlocksJSON)
			return strings.Contains(s, "Approved") && strings.Contains(s, "billing")
		})
		// A click afterwards changes nothing.
		e.click(alice, card, bot.ActionIDApprove)
		_, again := e.apiCall(doc, keyBilling, http.MethodGet, "/v1/approvals/"+a.Token, "")
		jsonEqual(t, "results after a late click", decodeRequest(t, again).Results, string(done.Results))
	})

	t.Run("expiry shows on the card", func(t *testing.T) {
		a := create(deletion("call_4", "/tmp/old", `,"timeout":"1m"`))
		card := e.apiCard(a.Token, "call_4")
		e.clock.Add(2 * time.Minute)
		e.waitFor("the card to say expired", func() bool { return strings.Contains(string(e.latest(card).BlocksJSON), "Expired") })
		_, b := e.apiCall(doc, keyBilling, http.MethodGet, "/v1/approvals/"+a.Token, "")
		if got := decodeRequest(t, b); got.Status != "expired" {
			t.Errorf("after the deadline: got %s", b)
		}
	})

	t.Run("cancel shows on every card", func(t *testing.T) {
		a := create(`{"approvals":[{"tool_name":"delete_file","args":{"path":"/a"},"tool_call_id":"c1"}],"calls":[{"tool_name":"fetch_report","args":{},"tool_call_id":"c2"}]}`)
		cards := []slackfake.Message{e.apiCard(a.Token, "c1"), e.apiCard(a.Token, "c2")}
		if status, b := e.apiCall(doc, keyBilling, http.MethodDelete, "/v1/approvals/"+a.Token, ""); status != http.StatusOK {
			t.Fatalf("cancel: got %d %s", status, b)
		}
		for _, card := range cards {
			e.waitFor("the card of "+card.TS+" to say cancelled", func() bool {
				return strings.Contains(string(e.latest(card).BlocksJSON), "Cancelled")
			})
		}
	})
}
