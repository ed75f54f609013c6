package store_test

import (
	"encoding/json"
	"strconv"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/redis/go-redis/v9"

	"github.com/slackapprove/slackbot/agentrunner"
	"github.com/slackapprove/slackbot/approval"
	"github.com/slackapprove/slackbot/store"
)

func TestCreateGetRoundTrip(t *testing.T) {
	e := newEnv(t)
	s := e.store()
	reqs := agentrunner.DeferredToolRequests{
		Approvals: []agentrunner.ToolCallPart{
			{ToolName: "issue_refund", Args: json.RawMessage(`{"amount":12345678901234567890,"items":[]}`), ToolCallID: "a1"},
			{ToolName: "noop", Args: nil, ToolCallID: "a2"},
		},
		Calls: []agentrunner.ToolCallPart{
			{ToolName: "ask_user", Args: json.RawMessage(`"{\"q\":1}"`), ToolCallID: "q1"},
			{ToolName: "fetch", Args: json.RawMessage(`{}`), ToolCallID: "x1"},
		},
		Metadata: map[string]map[string]any{"q1": {"question": "Which account?"}, "x1": {"job": "j-1"}},
	}
	a := &approval.Request{
		Token:    agentrunner.NewToken(),
		RunID:    "run-1",
		Origin:   approval.Origin{Team: "T1", Channel: "C1", ThreadTS: "171.1", User: "U0ALICE"},
		Requests: reqs,
		Calls: []approval.Call{
			{ID: "a1", Route: "refunds", Required: 2, Message: approval.MessageRef{Channel: "C0APPROVALS", ID: "1.1"}},
			{ID: "q1", Route: "questions"},
		},
		ExpiresAt: e.clock.Now().Add(30 * time.Minute),
	}
	if err := s.Create(t.Context(), a); err != nil {
		t.Fatalf("create: %v", err)
	}
	got, err := s.Get(t.Context(), a.Token)
	if err != nil {
		t.Fatalf("get: %v", err)
	}
	// User JSON (big numbers, empty arrays, string-encoded args, null
	// args) comes back byte for byte.
	if g, w := mustJSON(t, got.Requests), mustJSON(t, reqs); g != w {
		t.Errorf("requests:\n got %s\nwant %s", g, w)
	}
	want := &approval.Request{
		Token:     a.Token,
		RunID:     "run-1",
		Origin:    a.Origin,
		Requests:  got.Requests,
		CreatedAt: e.clock.Now(),
		ExpiresAt: a.ExpiresAt,
		State:     approval.StatePending,
		Calls: []approval.Call{
			{ID: "a1", Tool: "issue_refund", Kind: agentrunner.KindApproval, Route: "refunds", Required: 2, Status: approval.CallPending, Message: approval.MessageRef{Channel: "C0APPROVALS", ID: "1.1"}},
			{ID: "a2", Tool: "noop", Kind: agentrunner.KindApproval, Required: 1, Status: approval.CallPending},
			{ID: "q1", Tool: "ask_user", Kind: agentrunner.KindQuestion, Route: "questions", Required: 1, Status: approval.CallPending},
			{ID: "x1", Tool: "fetch", Kind: agentrunner.KindExternal, Required: 1, Status: approval.CallPending},
		},
	}
	if diff := cmp.Diff(want, got, cmpopts.IgnoreUnexported(approval.Call{}), cmpopts.EquateApproxTime(0)); diff != "" {
		t.Errorf("get (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(want.Calls, a.Calls, cmpopts.IgnoreUnexported(approval.Call{})); diff != "" {
		t.Errorf("create fills in calls (-want +got):\n%s", diff)
	}

	if err := s.SetMessage(t.Context(), a.Token, "x1", approval.MessageRef{Channel: "C2", ID: "2.2"}); err != nil {
		t.Fatalf("set message: %v", err)
	}
	got, err = s.Get(t.Context(), a.Token)
	if err != nil {
		t.Fatal(err)
	}
	if c := got.Call("x1"); c.Message != (approval.MessageRef{Channel: "C2", ID: "2.2"}) {
		t.Errorf("message of x1: got %+v, want C2/2.2", c.Message)
	}
}

func TestCreateErrors(t *testing.T) {
	e := newEnv(t)
	s := e.store()
	existing := e.create(t, s, requests("c1"), 1)
	tests := []struct {
		name string
		a    approval.Request
		want error
	}{
		{"duplicate token", approval.Request{Token: existing.Token, Requests: requests("c1")}, approval.ErrConflict},
		{"short token", approval.Request{Token: "abc", Requests: requests("c1")}, approval.ErrInvalid},
		{"token with bad characters", approval.Request{Token: "abcdefghijklmnopqrstuvwxyz+/", Requests: requests("c1")}, approval.ErrInvalid},
		{"no calls", approval.Request{Token: agentrunner.NewToken()}, approval.ErrInvalid},
		{"repeated call id", approval.Request{Token: agentrunner.NewToken(), Requests: requests("c1", "c1")}, approval.ErrInvalid},
		{"spec for unknown call", approval.Request{Token: agentrunner.NewToken(), Requests: requests("c1"), Calls: []approval.Call{{ID: "zz"}}}, approval.ErrInvalid},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			wantErr(t, "create", s.Create(t.Context(), &tt.a), tt.want)
		})
	}
	_, err := s.Get(t.Context(), agentrunner.NewToken())
	wantErr(t, "get unknown token", err, approval.ErrNotFound)
	wantErr(t, "set message of unknown call", s.SetMessage(t.Context(), existing.Token, "nope", approval.MessageRef{Channel: "C", ID: "1"}), approval.ErrNotPending)
	wantErr(t, "set message of unknown token", s.SetMessage(t.Context(), agentrunner.NewToken(), "c1", approval.MessageRef{Channel: "C", ID: "1"}), approval.ErrNotFound)
}

// announce writes the minimal record of token that a replica of the
// previous version wrote before its ask (its Tokens.Open, since removed):
// a rolling deploy may leave one for a newer replica to read.
func announce(t *testing.T, e *env, token string, deadline time.Time, waiter string) {
	t.Helper()
	rec, exp := e.prefix+"a:"+token, strconv.FormatInt(deadline.UnixMilli(), 10)
	now := strconv.FormatInt(e.clock.Now().UnixMilli(), 10)
	if err := e.rdb.HSet(t.Context(), rec, "v", "1", "state", "open", "exp", exp, "opened", now, "waiter", waiter, "n", "0", "left", "0").Err(); err != nil {
		t.Fatal(err)
	}
	if err := e.rdb.ZAdd(t.Context(), e.prefix+"deadlines", redis.Z{Score: float64(deadline.UnixMilli()), Member: token}).Err(); err != nil {
		t.Fatal(err)
	}
}

// Create fills in a record an older replica announced (rolling deploy):
// it keeps its deadline and its waiter, and refuses a token that ended
// since.
func TestCreateFillsInAnnouncedRecord(t *testing.T) {
	e := newEnv(t)
	s := e.store()
	deadline := e.clock.Now().Add(10 * time.Minute)

	token := agentrunner.NewToken()
	announce(t, e, token, deadline, "A")
	a := &approval.Request{Token: token, RunID: "run-x", Requests: requests("c1")}
	if err := s.Create(t.Context(), a); err != nil {
		t.Fatalf("create after announcement: %v", err)
	}
	if !a.ExpiresAt.Equal(deadline) {
		t.Errorf("create after announcement: got deadline %v, want the announced %v", a.ExpiresAt, deadline)
	}
	if w, err := e.rdb.HGet(t.Context(), e.prefix+"a:"+token, "waiter").Result(); err != nil || w != "A" {
		t.Errorf("waiter after create: got %q, %v; want the announced A", w, err)
	}
	wantErr(t, "create twice", s.Create(t.Context(), &approval.Request{Token: token, Requests: requests("c1")}), approval.ErrConflict)

	// A token that failed between announcement and Create cannot be created.
	failed := agentrunner.NewToken()
	announce(t, e, failed, deadline, "A")
	if _, err := s.Fail(t.Context(), failed, "", "asking failed"); err != nil {
		t.Fatalf("fail: %v", err)
	}
	wantErr(t, "create after fail", s.Create(t.Context(), &approval.Request{Token: failed, Requests: requests("c1")}), approval.ErrFailed)

	// Otherwise a zero deadline means DefaultTimeout.
	b := &approval.Request{Token: agentrunner.NewToken(), Requests: requests("c1")}
	if err := s.Create(t.Context(), b); err != nil {
		t.Fatal(err)
	}
	if want := e.clock.Now().Add(store.DefaultTimeout); !b.ExpiresAt.Equal(want) {
		t.Errorf("create without deadline: got %v, want %v", b.ExpiresAt, want)
	}
}

// A token an older replica resolved before its calls were recorded keeps
// what it was resolved with in field raw: a newer replica reads it as
// Given, so that run still resumes during a rolling deploy.
func TestOldReplicasResolvedAnnouncementReads(t *testing.T) {
	e := newEnv(t)
	s := e.store()
	token := agentrunner.NewToken()
	announce(t, e, token, e.clock.Now().Add(time.Minute), "A")
	given := agentrunner.NewDeferredToolResults()
	given.Approvals["c1"] = agentrunner.Approve()
	raw, err := json.Marshal(given)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.rdb.HSet(t.Context(), e.prefix+"a:"+token, "state", "resolved", "raw", string(raw)).Err(); err != nil {
		t.Fatal(err)
	}
	a, err := s.Get(t.Context(), token)
	if err != nil {
		t.Fatal(err)
	}
	if a.State != approval.StateResolved || a.Given == nil || len(a.Given.Approvals) != 1 {
		t.Fatalf("got state %s, given %+v; want resolved with the one approval", a.State, a.Given)
	}
	if _, ok := a.Given.Approvals["c1"]; !ok {
		t.Errorf("given approvals %v, want c1", a.Given.Approvals)
	}
}
