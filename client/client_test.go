package client_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/slackapprove/slackbot/agentrunner"
	"github.com/slackapprove/slackbot/client"
	"github.com/slackapprove/slackbot/httpapi"
	"github.com/slackapprove/slackbot/internal/apitest"
)

// The client is tested against a server that answers with /v1's
// recorded JSON, each answer checked against slackbot's OpenAPI document
// (apitest.Doc), so the fake cannot drift from the API. The hook
// command (package hook) uses this client against a real slackbot end to
// end (cmd/slackbot, TestHook*).

const key = "billing-key-0123456789abcdef"

// Recorded answers of /v1.
const (
	pendingView = `{"token":"tok_1","status":"pending","created_at":"2026-01-02T03:04:05Z","expires_at":"2026-01-02T03:34:05Z","ended_at":null,` +
		`"requester":"api:billing (Ops <bot>)","context":"cleanup","calls":[{"tool_call_id":"c1","tool_name":"delete_path","kind":"approval","state":"pending",` +
		`"route":"deletions","decided_by":null,"votes":0,"required":1,"by_client":false}],"results":null}`
	resolvedView = `{"token":"tok_1","status":"resolved","created_at":"2026-01-02T03:04:05Z","expires_at":"2026-01-02T03:34:05Z","ended_at":"2026-01-02T03:05:00Z",` +
		`"requester":"api:billing (Ops <bot>)","context":"cleanup","calls":[{"tool_call_id":"c1","tool_name":"delete_path","kind":"approval","state":"approved",` +
		`"route":"deletions","decided_by":"U0ALICE","votes":1,"required":1,"by_client":false}],` +
		`"results":{"calls":{},"approvals":{"c1":true},"metadata":{},"answered_by":{"c1":"U0ALICE"}}}`
	cancelledView = `{"token":"tok_1","status":"cancelled","created_at":"2026-01-02T03:04:05Z","expires_at":"2026-01-02T03:34:05Z","ended_at":"2026-01-02T03:05:00Z",` +
		`"requester":"api:billing (Ops <bot>)","context":"cleanup","calls":[{"tool_call_id":"c1","tool_name":"delete_path","kind":"approval","state":"cancelled",` +
		`"route":"deletions","decided_by":null,"votes":0,"required":1,"by_client":false}],` +
		`"results":{"calls":{},"approvals":{"c1":{"message":"No decision: the request was cancelled","kind":"tool-denied"}},"metadata":{},"answered_by":{}}}`
)

// exchange is one request the fake expects and its answer.
type exchange struct {
	method, path, query string
	body                string // the JSON the client must send; "" for none
	status              int
	header              http.Header
	answer              string
}

// fakeAPI serves the exchanges in order, failing t on any difference.
func fakeAPI(t *testing.T, doc *apitest.Doc, exchanges ...exchange) *httptest.Server {
	t.Helper()
	next := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if next >= len(exchanges) {
			t.Errorf("unexpected request %s %s", r.Method, r.URL)
			http.Error(w, "unexpected", http.StatusTeapot)
			return
		}
		x := exchanges[next]
		next++
		if r.Method != x.method || r.URL.Path != x.path || r.URL.RawQuery != x.query {
			t.Errorf("request %s %s?%s; want %s %s?%s", r.Method, r.URL.Path, r.URL.RawQuery, x.method, x.path, x.query)
		}
		if got := r.Header.Get("Authorization"); got != "Bearer "+key {
			t.Errorf("%s %s: Authorization %q; want the bearer key", r.Method, r.URL.Path, got)
		}
		b, _ := io.ReadAll(r.Body)
		if x.body == "" && len(b) > 0 {
			t.Errorf("%s %s: body %s; want none", r.Method, r.URL.Path, b)
		}
		if x.body != "" {
			if ct := r.Header.Get("Content-Type"); ct != "application/json" {
				t.Errorf("%s %s: Content-Type %q", r.Method, r.URL.Path, ct)
			}
			apitest.JSONEqual(t, r.Method+" "+r.URL.Path+" body", b, x.body)
		}
		h := http.Header{"Content-Type": {"application/json"}}
		for k, v := range x.header {
			h[k] = v
		}
		if doc != nil {
			doc.Check(t, r.Method, r.URL.Path, x.status, h, []byte(x.answer))
		}
		for k, v := range h {
			w.Header()[k] = v
		}
		w.WriteHeader(x.status)
		_, _ = io.WriteString(w, x.answer)
	}))
	t.Cleanup(srv.Close)
	return srv
}

func newClient(t *testing.T, url string) *client.Client {
	t.Helper()
	c, err := client.New(url, key)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestRequestsAndAnswers: each method sends what /v1 documents and
// decodes what it answers.
func TestRequestsAndAnswers(t *testing.T) {
	doc := apitest.Load(t)
	results := `{"calls":{},"approvals":{"c1":{"kind":"tool-denied","message":"not today"}},"metadata":{},"answered_by":{}}`
	srv := fakeAPI(t, doc,
		exchange{method: "POST", path: "/v1/approvals", status: 201, answer: pendingView, header: http.Header{"Location": {"/v1/approvals/tok_1"}},
			body: `{"approvals":[{"tool_name":"delete_path","args":{"path":"/tmp/a && rm <x>"},"tool_call_id":"c1"}],"route":"deletions",` +
				`"requester":"Ops <bot>","context":"cleanup","timeout":"30m0s","idempotency_key":"idem-1"}`},
		exchange{method: "GET", path: "/v1/approvals/tok_1", query: "wait=30s", status: 200, answer: resolvedView},
		exchange{method: "GET", path: "/v1/approvals/tok_1", status: 200, answer: resolvedView},
		exchange{method: "POST", path: "/v1/approvals/tok_1/results", status: 200, answer: resolvedView, body: results},
		exchange{method: "DELETE", path: "/v1/approvals/tok_1", status: 200, answer: cancelledView},
	)
	c := newClient(t, srv.URL+"/")
	ctx := t.Context()

	created, err := c.Create(ctx, client.CreateRequest{
		Approvals: []agentrunner.ToolCallPart{{ToolName: "delete_path", Args: json.RawMessage(`{"path":"/tmp/a && rm <x>"}`), ToolCallID: "c1"}},
		Route:     "deletions", Requester: "Ops <bot>", Context: "cleanup", Timeout: 30 * time.Minute, IdempotencyKey: "idem-1",
	})
	if err != nil {
		t.Fatalf("Create: %v", err)
	}
	want := &client.Approval{
		Token: "tok_1", Status: client.StatusPending,
		CreatedAt: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), ExpiresAt: time.Date(2026, 1, 2, 3, 34, 5, 0, time.UTC),
		Requester: "api:billing (Ops <bot>)", Context: "cleanup",
		Calls: []client.Call{{ToolCallID: "c1", ToolName: "delete_path", Kind: agentrunner.KindApproval, State: "pending", Route: "deletions", Required: 1}},
	}
	if diff := cmp.Diff(want, created); diff != "" {
		t.Errorf("Create (-want +got):\n%s", diff)
	}
	if !created.Pending() {
		t.Error("a pending request: Pending() = false")
	}

	done, err := c.Get(ctx, created.Token, 30*time.Second)
	if err != nil {
		t.Fatalf("Get with wait: %v", err)
	}
	if done.Pending() || done.Status != client.StatusResolved || done.Results == nil || !done.Results.Approvals["c1"].Approved ||
		done.Results.AnsweredBy["c1"] != "U0ALICE" || done.EndedAt == nil {
		t.Errorf("Get: got %+v; want resolved with c1 approved by U0ALICE", done)
	}
	if call, ok := done.Call("c1"); !ok || call.DecidedBy != "U0ALICE" || call.ByClient {
		t.Errorf("Call(c1) = %+v, %v; want decided by U0ALICE, not by the client", call, ok)
	}
	if _, ok := done.Call("nope"); ok {
		t.Error("Call(nope) found a call")
	}
	if _, err := c.Get(ctx, created.Token, 0); err != nil {
		t.Fatalf("Get without wait: %v", err)
	}
	var answers agentrunner.DeferredToolResults
	if err := json.Unmarshal([]byte(results), &answers); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Results(ctx, created.Token, answers); err != nil {
		t.Fatalf("Results: %v", err)
	}
	cancelled, err := c.Cancel(ctx, created.Token)
	if err != nil || cancelled.Status != client.StatusCancelled {
		t.Fatalf("Cancel: %+v, %v; want cancelled", cancelled, err)
	}
}

// TestErrors: refusals are *Error with slackbot's code and Retry-After,
// no answer is *UnreachableError, unreadable answers *ResponseError; only
// unreachable and 5xx are transient, and no error shows the key.
func TestErrors(t *testing.T) {
	doc := apitest.Load(t)
	errBody := func(code, msg string) string { return fmt.Sprintf(`{"error":{"code":%q,"message":%q}}`, code, msg) }
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := "http://" + l.Addr().String()
	l.Close()

	for _, tc := range []struct {
		name      string
		status    int
		header    http.Header
		answer    string
		checkDoc  bool
		url       string // instead of a fake
		create    bool   // a create, not a read (429 and 503 answer creates)
		want      error
		transient bool
	}{
		{name: "unauthorized", status: 401, checkDoc: true, answer: errBody(client.CodeUnauthorized, "a valid bearer key is required"),
			header: http.Header{"Www-Authenticate": {`Bearer realm="slackbot"`}},
			want:   &client.Error{Status: 401, Code: client.CodeUnauthorized, Message: "a valid bearer key is required"}},
		{name: "not found", status: 404, checkDoc: true, answer: errBody(client.CodeNotFound, "no approval request with this token"),
			want: &client.Error{Status: 404, Code: client.CodeNotFound, Message: "no approval request with this token"}},
		{name: "rate limited", status: 429, checkDoc: true, answer: errBody(client.CodeRateLimited, "slow down"), header: http.Header{"Retry-After": {"7"}}, create: true,
			want: &client.Error{Status: 429, Code: client.CodeRateLimited, Message: "slow down", RetryAfter: 7 * time.Second}},
		{name: "unconfirmed", status: 503, checkDoc: true, answer: errBody(client.CodeUnconfirmed, "repeat"), header: http.Header{"Retry-After": {"1"}}, create: true,
			want: &client.Error{Status: 503, Code: client.CodeUnconfirmed, Message: "repeat", RetryAfter: time.Second}, transient: true},
		{name: "internal", status: 500, checkDoc: true, answer: errBody(client.CodeInternal, "try again later"),
			want: &client.Error{Status: 500, Code: client.CodeInternal, Message: "try again later"}, transient: true},
		{name: "proxy error without JSON", status: 502, answer: "<html>bad gateway</html>",
			want: &client.Error{Status: 502}, transient: true},
		{name: "not JSON", status: 200, answer: "<html>", want: &client.ResponseError{Status: 200}},
		{name: "no token", status: 200, answer: `{"status":"approved"}`,
			want: &client.ResponseError{Status: 200, Problem: `an approval request without a token or a known status (got status "approved")`}},
		{name: "too large", status: 200, answer: `{"token":"` + strings.Repeat("x", client.MaxResponse) + `"}`,
			want: &client.ResponseError{Status: 200, Problem: fmt.Sprintf("a body larger than %d bytes", client.MaxResponse)}},
		{name: "down", url: closed, want: &client.UnreachableError{}, transient: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			url := tc.url
			if url == "" {
				d := doc
				if !tc.checkDoc {
					d = nil
				}
				x := exchange{method: "GET", path: "/v1/approvals/tok_1", status: tc.status, header: tc.header, answer: tc.answer}
				if tc.create {
					x.method, x.path, x.body = "POST", "/v1/approvals", `{"calls":[{"tool_name":"fetch_x","args":{},"tool_call_id":"c1"}]}`
				}
				url = fakeAPI(t, d, x).URL
			}
			c := newClient(t, url)
			var err error
			if tc.create {
				_, err = c.Create(t.Context(), client.CreateRequest{Calls: []agentrunner.ToolCallPart{{ToolName: "fetch_x", Args: json.RawMessage(`{}`), ToolCallID: "c1"}}})
			} else {
				_, err = c.Get(t.Context(), "tok_1", 0)
			}
			if err == nil {
				t.Fatal("got no error")
			}
			switch want := tc.want.(type) {
			case *client.Error:
				var got *client.Error
				if !errors.As(err, &got) {
					t.Fatalf("got %T %v; want *client.Error", err, err)
				}
				if diff := cmp.Diff(want, got); diff != "" {
					t.Errorf("error (-want +got):\n%s", diff)
				}
			case *client.ResponseError:
				var got *client.ResponseError
				if !errors.As(err, &got) || got.Status != want.Status || got.Problem != want.Problem || (want.Problem == "") != (got.Err != nil) {
					t.Errorf("got %T %v; want a ResponseError like %+v", err, err, want)
				}
			case *client.UnreachableError:
				var got *client.UnreachableError
				if !errors.As(err, &got) || strings.Contains(err.Error(), l.Addr().String()+"/v1") {
					t.Errorf("got %T %v; want *client.UnreachableError without the URL", err, err)
				}
			}
			if got := client.IsTransient(err); got != tc.transient {
				t.Errorf("IsTransient(%v) = %v; want %v", err, got, tc.transient)
			}
			if strings.Contains(err.Error(), key) {
				t.Errorf("the error shows the key: %v", err)
			}
		})
	}
}

// TestNew: the base URL and key are checked, and formatting a client
// never shows its key or the URL's password.
func TestNew(t *testing.T) {
	for _, tc := range []struct {
		url, key string
		want     error
	}{
		{"", key, client.ErrInvalidURL},
		{"slackbot.example.com", key, client.ErrInvalidURL},
		{"ftp://slackbot.example.com", key, client.ErrInvalidURL},
		{"https://", key, client.ErrInvalidURL},
		{"https://slackbot.example.com", "", client.ErrInvalidKey},
		{"https://slackbot.example.com", key + "\n", client.ErrInvalidKey},
		{"https://slackbot.example.com", "two words", client.ErrInvalidKey},
	} {
		if _, err := client.New(tc.url, tc.key); !errors.Is(err, tc.want) {
			t.Errorf("New(%q, %q) = %v; want %v", tc.url, tc.key, err, tc.want)
		}
	}
	c, err := client.New("https://ops:hunter2@slackbot.example.com/base/", key)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := c.Redacted(), "https://ops:xxxxx@slackbot.example.com/base"; got != want {
		t.Errorf("Redacted() = %q; want %q", got, want)
	}
	for _, verb := range []string{"%v", "%+v", "%#v", "%s"} {
		if s := fmt.Sprintf(verb, c); strings.Contains(s, key) || strings.Contains(s, "hunter2") {
			t.Errorf("%s of a client shows a secret: %s", verb, s)
		}
	}
}

// TestContextEndsTheRequest: a long poll ends when its ctx does, with an
// error that says so.
func TestContextEndsTheRequest(t *testing.T) {
	arrived := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		close(arrived)
		<-r.Context().Done()
	}))
	t.Cleanup(srv.Close)
	ctx, cancel := context.WithCancel(t.Context())
	go func() { <-arrived; cancel() }()
	_, err := newClient(t, srv.URL).Get(ctx, "tok_1", 30*time.Second)
	if !errors.Is(err, context.Canceled) {
		t.Errorf("Get after cancel: %v; want context.Canceled", err)
	}
}

// TestCodesAreTheAPIs: the client's codes are httpapi's, one for one, so
// a code added or renamed there cannot be missed here.
func TestCodesAreTheAPIs(t *testing.T) {
	got := []string{client.CodeUnauthorized, client.CodeNotFound, client.CodeMethodNotAllowed, client.CodeInvalidRequest,
		client.CodeRouteForbidden, client.CodeSelfApproval, client.CodeConflict, client.CodePayloadTooLarge,
		client.CodeUnsupportedMediaType, client.CodeRateLimited, client.CodeUnconfirmed, client.CodeInternal}
	want := []string{httpapi.CodeUnauthorized, httpapi.CodeNotFound, httpapi.CodeMethodNotAllowed, httpapi.CodeInvalidRequest,
		httpapi.CodeRouteForbidden, httpapi.CodeSelfApproval, httpapi.CodeConflict, httpapi.CodePayloadTooLarge,
		httpapi.CodeUnsupportedMediaType, httpapi.CodeRateLimited, httpapi.CodeUnconfirmed, httpapi.CodeInternal}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("codes (-httpapi +client):\n%s", diff)
	}
	statuses := []string{client.StatusPending, client.StatusResolved, client.StatusExpired, client.StatusCancelled, client.StatusFailed}
	apiStatuses := []string{httpapi.StatusPending, httpapi.StatusResolved, httpapi.StatusExpired, httpapi.StatusCancelled, httpapi.StatusFailed}
	if diff := cmp.Diff(apiStatuses, statuses); diff != "" {
		t.Errorf("statuses (-httpapi +client):\n%s", diff)
	}
}
