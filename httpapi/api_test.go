package httpapi_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/slackapprove/slackbot/agentrunner"
	"github.com/slackapprove/slackbot/approval"
	"github.com/slackapprove/slackbot/httpapi"
	"github.com/slackapprove/slackbot/internal/apitest"
	"github.com/slackapprove/slackbot/store"
)

// deletion is a create request body for one approval of delete_file.
func deletion(id, path string, extra map[string]any) map[string]any {
	body := map[string]any{
		"approvals": []map[string]any{{
			"tool_name": "delete_file", "args": map[string]any{"path": path}, "tool_call_id": id,
			// Pydantic AI's ToolCallPart carries more fields; they are ignored.
			"part_kind": "tool-call", "id": nil, "provider_details": nil,
		}},
	}
	for k, v := range extra {
		body[k] = v
	}
	return body
}

// jsonEqual fails t unless got and want are the same JSON value.
var jsonEqual = apitest.JSONEqual

// spyWaiter tells the test when a long poll starts waiting.
type spyWaiter struct {
	httpapi.Waiter
	waiting chan string
}

func (s *spyWaiter) Await(ctx context.Context, token string) (*approval.Request, error) {
	select {
	case s.waiting <- token:
	default:
	}
	return s.Waiter.Await(ctx, token)
}

// poll starts a long poll and returns a channel with its response and
// the time it arrived.
func (e *env) poll(key, token, wait string) <-chan timedResponse {
	out := make(chan timedResponse, 1)
	go func() {
		// do fails the test from this goroutine only through Errorf.
		resp := e.do(request{key: key, method: http.MethodGet, path: "/v1/approvals/" + token + "?wait=" + wait})
		out <- timedResponse{resp, time.Now()}
	}()
	return out
}

type timedResponse struct {
	response
	at time.Time
}

func TestAPI(t *testing.T) {
	t.Run("approve by click, answered by long poll", testApproveLongPoll)
	t.Run("deny with reason", testDenyWithReason)
	t.Run("edit with override_args", testOverrideArgs)
	t.Run("partial answers and external calls", testPartialAnswers)
	t.Run("expiry", testExpiry)
	t.Run("cancel", testCancel)
	t.Run("idempotency", testIdempotency)
	t.Run("auth", testAuth)
	t.Run("tokens of others are not found", testForeignToken)
	t.Run("malformed requests", testMalformed)
	t.Run("routes and policies", testRoutes)
	t.Run("unknown paths and methods", testUnknownPaths)
	t.Run("callbacks", testCallbacks)
	t.Run("callback redirects", testCallbackRedirect)
	t.Run("agent sessions", testAgentSessions)
	t.Run("agent sessions refused", testAgentSessionRegistrationRefused)
	t.Run("outcome of an approved call that did not run", testReportOutcomeNotRun)
	t.Run("outcomes ran and failed", testReportOutcomeRanAndFailed)
	t.Run("outcomes refused", testReportOutcomeRefusals)
	if !t.Failed() {
		apitest.Load(t).CheckCoverage(t)
	}
}

func testApproveLongPoll(t *testing.T) {
	spy := &spyWaiter{waiting: make(chan string, 1)}
	e := newEnv(t, envOptions{waiter: spy})

	resp := e.do(request{key: keyBilling, method: http.MethodPost, path: "/v1/approvals",
		body: deletion("call_1", "/tmp/report.csv", map[string]any{
			"requester": "Ticket bot", "context": "Customer asked to delete their export in ticket #42.",
		})})
	if resp.status != http.StatusCreated {
		t.Fatalf("create: got %d: %s", resp.status, resp.body)
	}
	a := resp.approval(t)
	if got, want := resp.header.Get("Location"), "/v1/approvals/"+a.Token; got != want {
		t.Errorf("Location: got %q, want %q", got, want)
	}
	if a.Status != "pending" || len(a.Calls) != 1 || a.Calls[0].Route != "deletions" || a.Calls[0].State != "pending" ||
		a.Calls[0].Required != 1 || a.Calls[0].DecidedBy != nil || a.Requester != "Ticket bot" || string(a.Results) != "null" {
		t.Errorf("created: got %s", resp.body)
	}
	if got := a.ExpiresAt.Sub(a.CreatedAt); got != 30*time.Minute {
		t.Errorf("expires %v after creation, want the route's 30m", got)
	}
	card := e.card(a.Token, "call_1")
	if rec, err := e.svc.Get(t.Context(), a.Token); err != nil || rec.Context != "Customer asked to delete their export in ticket #42." || rec.Origin.Shown() != "Ticket bot" {
		t.Errorf("the card's request: context and requester not recorded (%v)", err)
	}

	// At once: still pending.
	now := e.do(request{key: keyBilling, method: http.MethodGet, path: "/v1/approvals/" + a.Token}).approval(t)
	if now.Status != "pending" {
		t.Errorf("GET without wait: got %s, want pending", now.Status)
	}
	polled := e.poll(keyBilling, a.Token, "30s")
	select {
	case <-spy.waiting:
	case <-time.After(10 * time.Second):
		t.Fatal("the long poll did not start waiting")
	}
	clickSent := time.Now()
	e.click(alice, card, approval.ActionApprove)
	clicked := time.Now()
	var got timedResponse
	select {
	case got = <-polled:
	case <-time.After(10 * time.Second):
		t.Fatal("the long poll did not answer after the click")
	}
	t.Logf("click sent → long poll answered: %v (click acknowledged → answered: %v)", got.at.Sub(clickSent), got.at.Sub(clicked))
	if got.status != http.StatusOK {
		t.Fatalf("long poll: got %d: %s", got.status, got.body)
	}
	done := got.approval(t)
	if done.Status != "resolved" || done.Calls[0].State != "approved" || done.Calls[0].DecidedBy == nil || *done.Calls[0].DecidedBy != alice || done.EndedAt == nil {
		t.Errorf("after the click: got %s", got.body)
	}
	jsonEqual(t, "results", e.receiptless(t, done.Token, done.Results), `{"calls":{},"approvals":{"call_1":true},"metadata":{},"answered_by":{"call_1":"U0ALICE"}}`)
	e.waitShown(card, approval.CallApproved)
}

func testDenyWithReason(t *testing.T) {
	e := newEnv(t, envOptions{})
	a := e.create(keyBilling, deletion("call_2", "/srv/data", nil))
	polled := e.poll(keyBilling, a.Token, "30")
	card := e.card(a.Token, "call_2")
	e.deny(bob, card, "Not on a Friday.")
	got := <-polled
	done := got.approval(t)
	if done.Status != "resolved" || done.Calls[0].State != "denied" {
		t.Errorf("after the denial: got %s", got.body)
	}
	jsonEqual(t, "results", e.receiptless(t, done.Token, done.Results),
		`{"calls":{},"approvals":{"call_2":{"message":"Not on a Friday.","kind":"tool-denied"}},"metadata":{},"answered_by":{"call_2":"U0BOB"}}`)
}

// testOverrideArgs: the key edits and approves its own call, on a route
// that lets it (allow_self_approval).
func testOverrideArgs(t *testing.T) {
	e := newEnv(t, envOptions{})
	a := e.create(keyBilling, map[string]any{"approvals": []map[string]any{
		{"tool_name": "sandbox_delete_file", "args": map[string]any{"path": "/srv/all"}, "tool_call_id": "call_3"},
	}})
	card := e.card(a.Token, "call_3")
	resp := e.do(request{key: keyBilling, method: http.MethodPost, path: "/v1/approvals/" + a.Token + "/results",
		body: `{"approvals":{"call_3":{"kind":"tool-approved","override_args":{"path":"/srv/all/tmp"}}}}`})
	if resp.status != http.StatusOK {
		t.Fatalf("results: got %d: %s", resp.status, resp.body)
	}
	done := resp.approval(t)
	if done.Status != "resolved" || *done.Calls[0].DecidedBy != "billing" {
		t.Errorf("after the answer: got %s", resp.body)
	}
	jsonEqual(t, "results", e.receiptless(t, done.Token, done.Results),
		`{"calls":{},"approvals":{"call_3":{"override_args":{"path":"/srv/all/tmp"},"kind":"tool-approved"}},"metadata":{},"answered_by":{"call_3":"billing"}}`)
	// The card shows the programmatic decision.
	if shown := e.waitShown(card, approval.CallApproved); shown.DecidedBy != "billing" {
		t.Errorf("the card shows the call decided by %q, want billing", shown.DecidedBy)
	}
	// A click afterwards changes nothing.
	e.click(alice, card, approval.ActionApprove)
	again := e.do(request{key: keyBilling, method: http.MethodGet, path: "/v1/approvals/" + a.Token})
	jsonEqual(t, "results after a late click", again.approval(t).Results, string(done.Results))
}

func testPartialAnswers(t *testing.T) {
	e := newEnv(t, envOptions{})
	a := e.create(keyBilling, map[string]any{
		"approvals": []map[string]any{{"tool_name": "delete_file", "args": `{"path":"/tmp/x"}`, "tool_call_id": "a1"}},
		"calls":     []map[string]any{{"tool_name": "fetch_report", "args": nil, "tool_call_id": "x1"}},
		"metadata":  map[string]any{"x1": map[string]any{"source": "warehouse"}},
	})
	if a.Calls[1].Kind != "external" || a.Calls[1].Route != "reports" {
		t.Fatalf("external call: got %+v", a.Calls[1])
	}
	path := "/v1/approvals/" + a.Token + "/results"
	resp := e.do(request{key: keyBilling, method: http.MethodPost, path: path,
		body: `{"calls":{"x1":{"rows":3}},"answered_by":{"x1":"warehouse-job"}}`})
	part := resp.approval(t)
	if resp.status != http.StatusOK || part.Status != "pending" || part.Calls[1].State != "answered" || part.Calls[0].State != "pending" ||
		*part.Calls[1].DecidedBy != "billing/warehouse-job" {
		t.Fatalf("partial answer: got %d %s", resp.status, resp.body)
	}
	tests := []struct {
		name, body string
		status     int
		code, msg  string
	}{
		{"answered already", `{"calls":{"x1":{"rows":4}}}`, 409, httpapi.CodeConflict, "x1 (answered by billing/warehouse-job)"},
		{"unknown id", `{"approvals":{"nope":true}}`, 400, httpapi.CodeInvalidRequest, "approval nope"},
		{"approval answered as a call", `{"calls":{"a1":1}}`, 400, httpapi.CodeInvalidRequest, "call a1"},
		{"external call answered as an approval", `{"approvals":{"x1":true}}`, 400, httpapi.CodeInvalidRequest, "approval x1"},
		{"metadata naming no call", `{"approvals":{"a1":true},"metadata":{"zz":{}}}`, 400, httpapi.CodeInvalidRequest, "metadata zz"},
		{"answered_by naming no call", `{"approvals":{"a1":true},"answered_by":{"zz":"me"}}`, 400, httpapi.CodeInvalidRequest, "answered_by zz"},
		{"every misfit named", `{"approvals":{"nope":true,"x1":true},"calls":{"a1":1}}`, 400, httpapi.CodeInvalidRequest, "approval nope, approval x1, call a1"},
		{"model-retry on an approval", `{"calls":{"a1":{"kind":"model-retry","message":"again"}}}`, 400, httpapi.CodeInvalidRequest, "call a1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp := e.do(request{key: keyBilling, method: http.MethodPost, path: path, body: tt.body})
			got := resp.apiError(t)
			if resp.status != tt.status || got.Error.Code != tt.code || !strings.Contains(got.Error.Message, tt.msg) {
				t.Errorf("got %d %s, want %d %s mentioning %q", resp.status, resp.body, tt.status, tt.code, tt.msg)
			}
		})
	}
	e.click(alice, e.card(a.Token, "a1"), approval.ActionApprove)
	done := e.do(request{key: keyBilling, method: http.MethodGet, path: "/v1/approvals/" + a.Token + "?wait=10s"}).approval(t)
	if done.Status != "resolved" {
		t.Fatalf("after the click: got %s", done.Status)
	}
	jsonEqual(t, "results", e.receiptless(t, done.Token, done.Results),
		`{"calls":{"x1":{"rows":3}},"approvals":{"a1":true},"metadata":{},"answered_by":{"a1":"U0ALICE","x1":"billing/warehouse-job"}}`)
}

func testExpiry(t *testing.T) {
	e := newEnv(t, envOptions{})
	a := e.create(keyBilling, deletion("call_4", "/tmp/old", map[string]any{"timeout": "1m"}))
	if got := a.ExpiresAt.Sub(a.CreatedAt); got != time.Minute {
		t.Errorf("expires %v after creation, want 1m", got)
	}
	card := e.card(a.Token, "call_4")
	polled := e.poll(keyBilling, a.Token, "30s")
	e.clock.Add(2 * time.Minute)
	got := <-polled
	done := got.approval(t)
	if done.Status != "expired" || done.Calls[0].State != "expired" {
		t.Errorf("after the deadline: got %s", got.body)
	}
	jsonEqual(t, "results", e.receiptless(t, done.Token, done.Results),
		`{"calls":{},"approvals":{"call_4":{"message":"No decision on this tool call arrived: the request expired","kind":"tool-denied"}},"metadata":{},"answered_by":{}}`)
	e.waitShown(card, approval.CallExpired)
	resp := e.do(request{key: keyBilling, method: http.MethodPost, path: "/v1/approvals/" + a.Token + "/results", body: `{"approvals":{"call_4":true}}`})
	if resp.status != http.StatusConflict || !strings.Contains(resp.apiError(t).Error.Message, "expired") {
		t.Errorf("answer after expiry: got %d %s, want 409 saying expired", resp.status, resp.body)
	}
}

func testCancel(t *testing.T) {
	e := newEnv(t, envOptions{})
	a := e.create(keyBilling, map[string]any{
		"approvals": []map[string]any{{"tool_name": "delete_file", "args": map[string]any{"path": "/a"}, "tool_call_id": "c1"}},
		"calls":     []map[string]any{{"tool_name": "fetch_report", "args": map[string]any{}, "tool_call_id": "c2"}},
	})
	e.card(a.Token, "c1")
	e.card(a.Token, "c2")
	resp := e.do(request{key: keyBilling, method: http.MethodDelete, path: "/v1/approvals/" + a.Token})
	if resp.status != http.StatusOK {
		t.Fatalf("cancel: got %d %s", resp.status, resp.body)
	}
	done := resp.approval(t)
	if done.Status != "cancelled" || done.Calls[0].State != "cancelled" || done.Calls[1].State != "cancelled" {
		t.Errorf("cancelled: got %s", resp.body)
	}
	const msg = "No decision on this tool call arrived: cancelled"
	jsonEqual(t, "results", e.receiptless(t, done.Token, done.Results), `{"calls":{"c2":{"message":"`+msg+`","kind":"tool-failed"}},"approvals":{"c1":{"message":"`+msg+`","kind":"tool-denied"}},"metadata":{},"answered_by":{}}`)
	for _, id := range []string{"c1", "c2"} {
		e.waitShown(e.card(a.Token, id), approval.CallCancelled)
	}
	again := e.do(request{key: keyBilling, method: http.MethodDelete, path: "/v1/approvals/" + a.Token})
	if again.status != http.StatusConflict || again.apiError(t).Error.Code != httpapi.CodeConflict {
		t.Errorf("cancel twice: got %d %s, want 409 conflict", again.status, again.body)
	}
	var cancelled bool
	for _, ev := range e.auditOf(a.Token) {
		if ev.Type == store.AuditCancelled && ev.By == "billing" {
			cancelled = true
		}
	}
	if !cancelled {
		t.Errorf("the audit stream does not record the cancellation by billing")
	}
}

func testIdempotency(t *testing.T) {
	e := newEnv(t, envOptions{})
	body := deletion("call_5", "/tmp/once", map[string]any{"idempotency_key": "ticket-42/delete"})
	first := e.create(keyBilling, body)
	e.card(first.Token, "call_5")

	resp := e.do(request{key: keyBilling, method: http.MethodPost, path: "/v1/approvals", body: body})
	if resp.status != http.StatusOK || resp.header.Get("Idempotent-Replayed") != "true" {
		t.Fatalf("repeat: got %d %s, want 200 replayed", resp.status, resp.body)
	}
	if again := resp.approval(t); again.Token != first.Token || again.Status != "pending" {
		t.Errorf("repeat: got token %s… status %s; want the first token, pending", again.Token[:6], again.Status)
	}
	other := e.do(request{key: keyBilling, method: http.MethodPost, path: "/v1/approvals",
		body: deletion("call_5", "/tmp/other", map[string]any{"idempotency_key": "ticket-42/delete"})})
	if other.status != http.StatusConflict || !strings.Contains(other.apiError(t).Error.Message, "different request body") {
		t.Errorf("same key, other body: got %d %s, want 409", other.status, other.body)
	}
	// Keys are per client.
	theirs := e.create(keySupport, body)
	if theirs.Token == first.Token {
		t.Errorf("another client's request with the same key got the same token")
	}
	if n := e.poster.CardsIn(approvals_); n != 2 {
		t.Errorf("got %d cards, want 2 (one per client)", n)
	}
	// The status follows the token.
	e.click(alice, e.card(first.Token, "call_5"), approval.ActionApprove)
	e.do(request{key: keyBilling, method: http.MethodGet, path: "/v1/approvals/" + first.Token + "?wait=10s"})
	resp = e.do(request{key: keyBilling, method: http.MethodPost, path: "/v1/approvals", body: body})
	if got := resp.approval(t); resp.status != http.StatusOK || got.Token != first.Token || got.Status != "resolved" {
		t.Errorf("repeat after the decision: got %d %s", resp.status, resp.body)
	}
}

func testAuth(t *testing.T) {
	e := newEnv(t, envOptions{})
	a := e.create(keyBilling, deletion("call_6", "/tmp/x", nil))
	for _, tt := range []struct {
		name, header string
	}{
		{"no header", ""},
		{"wrong key", "Bearer not-a-key-0123456789abcdef"},
		{"a prefix of a key", "Bearer " + keyBilling[:20]},
		{"basic auth", "Basic " + keyBilling},
		{"empty bearer", "Bearer "},
	} {
		t.Run(tt.name, func(t *testing.T) {
			for _, r := range []request{
				{method: http.MethodPost, path: "/v1/approvals", body: deletion("z", "/z", nil)},
				{method: http.MethodGet, path: "/v1/approvals/" + a.Token},
				{method: http.MethodDelete, path: "/v1/approvals/" + a.Token},
				{method: http.MethodPost, path: "/v1/approvals/" + a.Token + "/results", body: `{"approvals":{"call_6":true}}`},
			} {
				req, _ := http.NewRequestWithContext(t.Context(), r.method, e.srv.URL+r.path, nil)
				if tt.header != "" {
					req.Header.Set("Authorization", tt.header)
				}
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				resp.Body.Close()
				if resp.StatusCode != http.StatusUnauthorized || resp.Header.Get("WWW-Authenticate") == "" {
					t.Errorf("%s %s: got %d (WWW-Authenticate %q), want 401 with a challenge", r.method, r.path, resp.StatusCode, resp.Header.Get("WWW-Authenticate"))
				}
			}
		})
	}
	resp := e.do(request{method: http.MethodGet, path: "/v1/approvals/" + a.Token})
	if got := resp.apiError(t).Error.Code; got != httpapi.CodeUnauthorized {
		t.Errorf("error code: got %q, want unauthorized", got)
	}
	if got := e.do(request{key: keyBilling, method: http.MethodGet, path: "/v1/approvals/" + a.Token}).approval(t); got.Status != "pending" {
		t.Errorf("nothing changed: got status %s", got.Status)
	}
}

func testForeignToken(t *testing.T) {
	e := newEnv(t, envOptions{})
	mine := e.create(keyBilling, deletion("call_7", "/tmp/mine", nil))
	// A token of a run started from Slack: no API client owns it.
	slackRun := &approval.Request{Token: agentrunner.NewToken(), Origin: approval.Origin{User: alice}, Requests: agentrunner.DeferredToolRequests{
		Approvals: []agentrunner.ToolCallPart{{ToolName: "delete_file", ToolCallID: "s1"}}}}
	if err := e.store.Create(t.Context(), slackRun); err != nil {
		t.Fatal(err)
	}
	tokens := map[string]string{
		"another client's": mine.Token,
		"a Slack run's":    slackRun.Token,
		"unknown":          agentrunner.NewToken(),
		"malformed":        "not-a-token",
	}
	var bodies []string
	for name, token := range tokens {
		for _, r := range []request{
			{key: keySupport, method: http.MethodGet, path: "/v1/approvals/" + token},
			{key: keySupport, method: http.MethodGet, path: "/v1/approvals/" + token + "?wait=1s"},
			{key: keySupport, method: http.MethodDelete, path: "/v1/approvals/" + token},
			{key: keySupport, method: http.MethodPost, path: "/v1/approvals/" + token + "/results", body: `{"approvals":{"call_7":true}}`},
		} {
			resp := e.do(r)
			if resp.status != http.StatusNotFound {
				t.Errorf("%s token, %s: got %d %s, want 404", name, r.method, resp.status, resp.body)
			}
			bodies = append(bodies, string(resp.body))
		}
	}
	for _, b := range bodies[1:] {
		if b != bodies[0] {
			t.Errorf("404 bodies differ, so tokens can be probed: %q vs %q", b, bodies[0])
		}
	}
	if got := e.do(request{key: keyBilling, method: http.MethodGet, path: "/v1/approvals/" + mine.Token}).approval(t); got.Status != "pending" {
		t.Errorf("another client changed the token: status %s", got.Status)
	}
}

func testMalformed(t *testing.T) {
	e := newEnv(t, envOptions{})
	a := e.create(keyBilling, deletion("call_8", "/tmp/x", nil))
	calls := func(n int) string {
		var parts []string
		for i := range n {
			parts = append(parts, fmt.Sprintf(`{"tool_name":"delete_file","args":{},"tool_call_id":"c%d"}`, i))
		}
		return `{"approvals":[` + strings.Join(parts, ",") + `]}`
	}
	one := `{"tool_name":"delete_file","args":{"path":"/x"},"tool_call_id":"c1"}`
	create := func(body string) request {
		return request{key: keyBilling, method: http.MethodPost, path: "/v1/approvals", body: body}
	}
	results := func(body string) request {
		return request{key: keyBilling, method: http.MethodPost, path: "/v1/approvals/" + a.Token + "/results", body: body}
	}
	tests := []struct {
		name   string
		req    request
		status int
		code   string
		msg    string
	}{
		{"not JSON", create(`{"approvals":[`), 400, httpapi.CodeInvalidRequest, "JSON object"},
		{"an array", create(`[]`), 400, httpapi.CodeInvalidRequest, "JSON object"},
		{"null", create(`null`), 400, httpapi.CodeInvalidRequest, "JSON object"},
		{"unknown field", create(`{"approvals":[` + one + `],"approval":[]}`), 400, httpapi.CodeInvalidRequest, `unknown field "approval"`},
		{"no calls", create(`{"approvals":[],"calls":null}`), 400, httpapi.CodeInvalidRequest, "no calls"},
		{"too many calls", create(calls(101)), 400, httpapi.CodeInvalidRequest, "101 calls"},
		{"calls not a list", create(`{"approvals":{"a":1}}`), 400, httpapi.CodeInvalidRequest, "approvals"},
		{"repeated id", create(`{"approvals":[` + one + `,` + one + `]}`), 400, httpapi.CodeInvalidRequest, `"c1" appears twice`},
		{"no id", create(`{"approvals":[{"tool_name":"delete_file"}]}`), 400, httpapi.CodeInvalidRequest, "approvals[0]: tool_call_id is required"},
		{"no tool", create(`{"calls":[{"tool_call_id":"x"}]}`), 400, httpapi.CodeInvalidRequest, "calls[0]: tool_name is required"},
		{"args a number", create(`{"approvals":[{"tool_name":"delete_file","tool_call_id":"x","args":7}]}`), 400, httpapi.CodeInvalidRequest, "args must be a JSON object"},
		{"args nested too deep", create(`{"approvals":[{"tool_name":"delete_file","tool_call_id":"x","args":{"a":` + strings.Repeat("[", 64) + strings.Repeat("]", 64) + `}}]}`), 400, httpapi.CodeInvalidRequest, "approvals[0]: args are nested deeper than 64 levels"},
		{"string args nested too deep", create(`{"calls":[{"tool_name":"delete_file","tool_call_id":"x","args":"{\"a\":` + strings.Repeat("[", 20000) + `"}]}`), 400, httpapi.CodeInvalidRequest, "calls[0]: args are nested deeper than 64 levels"},
		{"metadata of no call", create(`{"approvals":[` + one + `],"metadata":{"c9":{}}}`), 400, httpapi.CodeInvalidRequest, `metadata names "c9"`},
		{"an args schema that is no schema", create(`{"approvals":[` + one + `],"metadata":{"c1":{"slackbot_args_schema":{"type":7}}}}`), 400, httpapi.CodeInvalidRequest, `metadata["c1"].slackbot_args_schema is not a JSON Schema slackbot can use`},
		{"an args schema that is not an object", create(`{"approvals":[` + one + `],"metadata":{"c1":{"slackbot_args_schema":"object"}}}`), 400, httpapi.CodeInvalidRequest, `metadata["c1"].slackbot_args_schema must be a JSON Schema object`},
		{"an args schema reading a file", create(`{"approvals":[` + one + `],"metadata":{"c1":{"slackbot_args_schema":{"$ref":"file:///etc/passwd"}}}}`), 400, httpapi.CodeInvalidRequest, "may refer only to itself"},
		{"an args schema of an external call", create(`{"calls":[` + one + `],"metadata":{"c1":{"slackbot_args_schema":{"type":"object"}}}}`), 400, httpapi.CodeInvalidRequest, `only an approval's arguments can be edited`},
		{"bad timeout", create(`{"approvals":[` + one + `],"timeout":"soon"}`), 400, httpapi.CodeInvalidRequest, `timeout "soon"`},
		{"timeout too long", create(`{"approvals":[` + one + `],"timeout":"200h"}`), 400, httpapi.CodeInvalidRequest, "at most"},
		{"timeout too short", create(`{"approvals":[` + one + `],"timeout":0.5}`), 400, httpapi.CodeInvalidRequest, "at least 1s"},
		{"plain http callback", create(`{"approvals":[` + one + `],"callback_url":"http://agent.example/cb"}`), 400, httpapi.CodeInvalidRequest, "https"},
		{"callback with credentials", create(`{"approvals":[` + one + `],"callback_url":"https://u:p@agent.example/cb"}`), 400, httpapi.CodeInvalidRequest, "credentials"},
		{"relative callback", create(`{"approvals":[` + one + `],"callback_url":"/cb"}`), 400, httpapi.CodeInvalidRequest, "absolute"},
		{"requester too long", create(`{"approvals":[` + one + `],"requester":"` + strings.Repeat("x", 201) + `"}`), 400, httpapi.CodeInvalidRequest, "requester"},
		{"idempotency key too long", create(`{"approvals":[` + one + `],"idempotency_key":"` + strings.Repeat("k", 201) + `"}`), 400, httpapi.CodeInvalidRequest, "idempotency_key"},
		{"text/plain", request{key: keyBilling, method: http.MethodPost, path: "/v1/approvals", body: `{}`, contentType: "text/plain"}, 415, httpapi.CodeUnsupportedMediaType, "application/json"},
		{"too large", create(`{"context":"` + strings.Repeat("x", httpapi.MaxBodyBytes) + `"}`), 413, httpapi.CodePayloadTooLarge, "larger than"},
		{"bad wait", request{key: keyBilling, method: http.MethodGet, path: "/v1/approvals/" + a.Token + "?wait=forever"}, 400, httpapi.CodeInvalidRequest, `wait "forever"`},
		{"negative wait", request{key: keyBilling, method: http.MethodGet, path: "/v1/approvals/" + a.Token + "?wait=-1s"}, 400, httpapi.CodeInvalidRequest, "negative"},
		{"results: unknown field", results(`{"approvals":{"call_8":true},"extra":1}`), 400, httpapi.CodeInvalidRequest, `unknown field "extra"`},
		{"results: nothing", results(`{"approvals":{},"calls":null}`), 400, httpapi.CodeInvalidRequest, "answer no call"},
		{"results: bad kind", results(`{"approvals":{"call_8":{"kind":"tool-maybe"}}}`), 400, httpapi.CodeInvalidRequest, `unknown kind "tool-maybe"`},
		{"results: override not an object", results(`{"approvals":{"call_8":{"kind":"tool-approved","override_args":[1]}}}`), 400, httpapi.CodeInvalidRequest, "override_args"},
		{"results: override nested too deep", results(`{"approvals":{"call_8":{"kind":"tool-approved","override_args":{"a":` + strings.Repeat("[", 64) + strings.Repeat("]", 64) + `}}}}`), 400, httpapi.CodeInvalidRequest, "nested deeper than 64 levels"},
		{"results: approval a string", results(`{"approvals":{"call_8":"yes"}}`), 400, httpapi.CodeInvalidRequest, `approvals["call_8"]`},
		{"results: too large", results(`{"calls":{"x":"` + strings.Repeat("x", httpapi.MaxBodyBytes) + `"}}`), 413, httpapi.CodePayloadTooLarge, "larger than"},
		{"results: no content type", request{key: keyBilling, method: http.MethodPost, path: "/v1/approvals/" + a.Token + "/results", body: `{}`, contentType: "application/x-www-form-urlencoded"}, 415, httpapi.CodeUnsupportedMediaType, "application/json"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp := e.do(tt.req)
			got := resp.apiError(t)
			if resp.status != tt.status || got.Error.Code != tt.code || !strings.Contains(got.Error.Message, tt.msg) {
				t.Errorf("got %d %s, want %d %s mentioning %q", resp.status, resp.body, tt.status, tt.code, tt.msg)
			}
		})
	}
	if n := e.poster.CardsIn(approvals_); n != 1 {
		t.Errorf("malformed requests posted cards: %d cards, want 1", n)
	}
	if got := e.do(request{key: keyBilling, method: http.MethodGet, path: "/v1/approvals/" + a.Token}).approval(t); got.Status != "pending" {
		t.Errorf("malformed answers changed the token: %s", got.Status)
	}
}

func testRoutes(t *testing.T) {
	e := newEnv(t, envOptions{})
	deploy := map[string]any{"approvals": []map[string]any{{"tool_name": "deploy_web", "args": map[string]any{"version": "1.2"}, "tool_call_id": "d1"}}}
	tests := []struct {
		name   string
		key    string
		body   map[string]any
		status int
	}{
		{"a restricted key, its route", keyOps, deploy, 201},
		{"a restricted key, a call matching another route", keyOps, deletion("x1", "/x", nil), 403},
		{"a restricted key naming another route", keyOps, deletion("x1", "/x", map[string]any{"route": "deletions"}), 403},
		{"a route that does not exist", keyBilling, deletion("x1", "/x", map[string]any{"route": "nope"}), 403},
		{"a named route, a tool it matches", keyOps, map[string]any{"route": "ops", "approvals": deploy["approvals"]}, 201},
		// A named route applies only to the tools its when.tools match:
		// never its policy (refunds auto-approves amount <= 10) on another tool.
		{"a named route, a tool it does not match", keyOps, deletion("x1", "/x", map[string]any{"route": "ops"}), 403},
		{"an open key naming a route for another tool", keyBilling, map[string]any{"route": "refunds", "approvals": []map[string]any{
			{"tool_name": "delete_everything", "args": map[string]any{"amount": 1}, "tool_call_id": "x1"}}}, 403},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp := e.do(request{key: tt.key, method: http.MethodPost, path: "/v1/approvals", body: tt.body})
			if resp.status != tt.status {
				t.Fatalf("got %d %s, want %d", resp.status, resp.body, tt.status)
			}
			if tt.status == 403 && resp.apiError(t).Error.Code != httpapi.CodeRouteForbidden {
				t.Errorf("got %s, want route_forbidden", resp.body)
			}
			if tt.status == 201 {
				if got := resp.approval(t).Calls[0].Route; got != "ops" {
					t.Errorf("route: got %q, want ops", got)
				}
			}
		})
	}

	// Policies decide first; a call no route matches is denied at once.
	a := e.create(keyBilling, map[string]any{"approvals": []map[string]any{
		{"tool_name": "issue_refund", "args": map[string]any{"amount": 5}, "tool_call_id": "small"},
		{"tool_name": "launch_rocket", "args": map[string]any{}, "tool_call_id": "rocket"},
	}})
	if a.Status != "resolved" {
		t.Fatalf("all decided by policy: got status %s", a.Status)
	}
	var res agentrunner.DeferredToolResults
	if err := json.Unmarshal(a.Results, &res); err != nil {
		t.Fatal(err)
	}
	if !res.Approvals["small"].Approved || res.AnsweredBy["small"] != "policy:refunds" ||
		res.Approvals["rocket"].Approved || res.AnsweredBy["rocket"] != approval.ByNoRoute ||
		!strings.Contains(res.Approvals["rocket"].Message, "No approval route matches launch_rocket") {
		t.Errorf("policy results: got %s", a.Results)
	}
	if n := e.poster.CardsOf(a.Token); n != 0 {
		t.Errorf("%d cards were posted for calls policies decided", n)
	}
}

func testUnknownPaths(t *testing.T) {
	e := newEnv(t, envOptions{})
	tests := []struct {
		method, path string
		status       int
		code         string
	}{
		{http.MethodPut, "/v1/approvals", 405, httpapi.CodeMethodNotAllowed},
		{http.MethodPatch, "/v1/approvals/abc", 405, httpapi.CodeMethodNotAllowed},
		{http.MethodGet, "/v1/approvals/abc/results", 405, httpapi.CodeMethodNotAllowed},
		{http.MethodGet, "/v1/nothing", 404, httpapi.CodeNotFound},
	}
	for _, tt := range tests {
		resp := e.do(request{key: keyBilling, method: tt.method, path: tt.path})
		if resp.status != tt.status || resp.apiError(t).Error.Code != tt.code {
			t.Errorf("%s %s: got %d %s, want %d %s", tt.method, tt.path, resp.status, resp.body, tt.status, tt.code)
		}
	}
	resp := e.do(request{method: http.MethodGet, path: "/v1/openapi.json"})
	if resp.status != http.StatusOK || string(resp.body) != string(httpapi.OpenAPI) {
		t.Errorf("GET /v1/openapi.json: got %d, want 200 and the document", resp.status)
	}
}
