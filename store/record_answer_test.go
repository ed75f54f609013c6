package store_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/slackapprove/slackbot/agentrunner"
	"github.com/slackapprove/slackbot/approval"
	"github.com/slackapprove/slackbot/store"
	"github.com/slackapprove/slackbot/store/redistest"
)

// apiRequests has two approvals (a1, a2) and one external call (x1).
func apiRequests() agentrunner.DeferredToolRequests {
	r := requests("a1", "a2")
	r.Calls = []agentrunner.ToolCallPart{{ToolName: "fetch_report", Args: json.RawMessage(`{"id":7}`), ToolCallID: "x1"}}
	return r
}

func createAPI(t *testing.T, e *env, s *store.Store, reqs agentrunner.DeferredToolRequests, callback string) *approval.Request {
	t.Helper()
	a := &approval.Request{
		Token:       agentrunner.NewToken(),
		Origin:      approval.Origin{Client: "billing", Name: "Billing bot"},
		Requests:    reqs,
		ExpiresAt:   e.clock.Now().Add(time.Hour),
		Context:     "Customer asked for a refund in ticket #42.",
		CallbackURL: callback,
	}
	if err := s.Create(t.Context(), a); err != nil {
		t.Fatalf("create: %v", err)
	}
	return a
}

func TestCreateKeepsAPIFields(t *testing.T) {
	e := newEnv(t)
	s := e.store()
	a := createAPI(t, e, s, apiRequests(), "https://agent.example/cb")
	got, err := s.Get(t.Context(), a.Token)
	if err != nil {
		t.Fatal(err)
	}
	if got.Origin.Client != "billing" || got.Context != a.Context || got.CallbackURL != "https://agent.example/cb" || got.Origin.Name != "Billing bot" {
		t.Errorf("got client %q, context %q, callback %q, name %q; want what was created",
			got.Origin.Client, got.Context, got.CallbackURL, got.Origin.Name)
	}
	// The record keeps the encoding of the previous version.
	if f, _ := e.rdb.HMGet(t.Context(), e.prefix+"a:"+a.Token, "requester", "client").Result(); f[0] != "api:Billing bot" || f[1] != "billing" {
		t.Errorf("record fields requester, client: got %v, want api:Billing bot, billing", f)
	}
	slack := e.create(t, s, requests("c1"), 1)
	if got, _ := s.Get(t.Context(), slack.Token); got.Origin.Client != "" || got.CallbackURL != "" || got.Context != "" {
		t.Errorf("a Slack run's token: got client %q, callback %q, context %q; want none", got.Origin.Client, got.CallbackURL, got.Context)
	}
}

func TestAnswerPartialThenRest(t *testing.T) {
	e := newEnv(t)
	s := e.store()
	ctx := t.Context()
	a := createAPI(t, e, s, apiRequests(), "")

	part := agentrunner.NewDeferredToolResults()
	part.Approvals["a1"] = agentrunner.ApproveWith(json.RawMessage(`{"path":"other.txt"}`))
	got, err := s.Answer(ctx, a.Token, "billing", part)
	if err != nil {
		t.Fatalf("partial answer: %v", err)
	}
	if got.State != approval.StatePending || got.Results(nil) != nil {
		t.Fatalf("after a partial answer: got state %s, results %v; want open, none", got.State, got.Results(nil))
	}
	if c := got.Call("a1"); c.Status != approval.CallApproved || c.DecidedBy != "billing" {
		t.Errorf("a1: got %s by %q, want approved by billing", c.Status, c.DecidedBy)
	}
	if c := got.Call("a2"); c.Status != approval.CallPending {
		t.Errorf("a2: got %s, want pending", c.Status)
	}

	// Answering a1 again, or answering an approval as a call, changes nothing.
	again := agentrunner.NewDeferredToolResults()
	again.Approvals["a1"] = agentrunner.Approve()
	again.Approvals["a2"] = agentrunner.Approve()
	if _, err := s.Answer(ctx, a.Token, "billing", again); !errors.Is(err, approval.ErrNotPending) {
		t.Errorf("answer a decided call: got %v, want ErrNotPendingCall", err)
	}
	wrongKind := agentrunner.NewDeferredToolResults()
	wrongKind.Calls["a2"] = agentrunner.CallResult{Value: json.RawMessage(`1`)}
	if _, err := s.Answer(ctx, a.Token, "billing", wrongKind); !errors.Is(err, approval.ErrNotPending) {
		t.Errorf("answer an approval as a call: got %v, want ErrNotPendingCall", err)
	}
	if got, _ := s.Get(ctx, a.Token); got.Calls[1].Status != approval.CallPending {
		t.Errorf("a refused answer changed a2 to %s", got.Calls[1].Status)
	}

	rest := agentrunner.NewDeferredToolResults()
	rest.Approvals["a2"] = agentrunner.Deny("Not this one.")
	rest.Calls["x1"] = agentrunner.CallResult{Value: json.RawMessage(`{"rows":3}`)}
	rest.AnsweredBy["x1"] = "report-service"
	got, err = s.Answer(ctx, a.Token, "billing", rest)
	if err != nil {
		t.Fatalf("answer the rest: %v", err)
	}
	if got.State != approval.StateResolved {
		t.Fatalf("after answering every call: got state %s, want resolved", got.State)
	}
	jsonEqual(t, "results", mustJSON(t, got.Results(nil)), `{
		"calls": {"x1": {"rows":3}},
		"approvals": {"a1": {"override_args":{"path":"other.txt"},"kind":"tool-approved"},
		              "a2": {"message":"Not this one.","kind":"tool-denied"}},
		"metadata": {},
		"answered_by": {"a1":"billing","a2":"billing","x1":"report-service"}}`)
	if _, err := s.Answer(ctx, a.Token, "billing", part); !errors.Is(err, approval.ErrResolved) {
		t.Errorf("answer a resolved token: got %v, want ErrResolved", err)
	}
}

func TestAnswerErrors(t *testing.T) {
	e := newEnv(t)
	s := e.store()
	ctx := t.Context()
	one := agentrunner.NewDeferredToolResults()
	one.Approvals["a1"] = agentrunner.Approve()

	cancelled := createAPI(t, e, s, apiRequests(), "")
	if _, err := s.Cancel(ctx, cancelled.Token, "billing"); err != nil {
		t.Fatal(err)
	}
	expired := createAPI(t, e, s, apiRequests(), "")
	open := createAPI(t, e, s, apiRequests(), "")
	tests := []struct {
		name    string
		token   string
		results *agentrunner.DeferredToolResults
		advance time.Duration
		want    error
	}{
		{"unknown token", agentrunner.NewToken(), one, 0, approval.ErrNotFound},
		{"malformed token", "x", one, 0, approval.ErrNotFound},
		{"no answers", open.Token, agentrunner.NewDeferredToolResults(), 0, approval.ErrInvalid},
		{"cancelled", cancelled.Token, one, 0, approval.ErrCancelled},
		{"past the deadline", expired.Token, one, 2 * time.Hour, approval.ErrExpired},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e.clock.Advance(tt.advance)
			_, err := s.Answer(ctx, tt.token, "billing", tt.results)
			wantErr(t, "answer", err, tt.want)
		})
	}
}

func TestIdempotency(t *testing.T) {
	e := newEnv(t)
	s := e.store()
	ctx := t.Context()
	tok1, tok2 := agentrunner.NewToken(), agentrunner.NewToken()

	got, first, err := s.ClaimIdempotency(ctx, "billing", "order-42", tok1, "fp1", time.Minute)
	if err != nil || !first || got.Token != tok1 {
		t.Fatalf("first claim: got %+v, %v, %v; want %s, first", got, first, err, tok1)
	}
	got, first, err = s.ClaimIdempotency(ctx, "billing", "order-42", tok2, "fp2", time.Minute)
	if err != nil || first || got != (store.Idempotency{Token: tok1, Fingerprint: "fp1"}) {
		t.Fatalf("second claim: got %+v, %v, %v; want the first claim's token and fingerprint", got, first, err)
	}
	// Keys are per client.
	if got, first, _ := s.ClaimIdempotency(ctx, "support", "order-42", tok2, "fp2", time.Minute); !first || got.Token != tok2 {
		t.Errorf("another client's claim of the same key: got %+v, first %v; want its own", got, first)
	}
	// Release only drops the key while it stands for the token.
	if err := s.ReleaseIdempotency(ctx, "billing", "order-42", tok2); err != nil {
		t.Fatal(err)
	}
	if got, first, _ := s.ClaimIdempotency(ctx, "billing", "order-42", tok2, "fp2", time.Minute); first || got.Token != tok1 {
		t.Errorf("after releasing for another token: got %+v, first %v; want the key kept", got, first)
	}
	if err := s.ReleaseIdempotency(ctx, "billing", "order-42", tok1); err != nil {
		t.Fatal(err)
	}
	if _, first, _ := s.ClaimIdempotency(ctx, "billing", "order-42", tok2, "fp2", time.Minute); !first {
		t.Errorf("after release: the key is still taken")
	}

	// Keep ties the key's lifetime to the token's record.
	a := createAPI(t, e, s, apiRequests(), "")
	if _, _, err := s.ClaimIdempotency(ctx, "billing", "k2", a.Token, "fp", time.Minute); err != nil {
		t.Fatal(err)
	}
	if err := s.KeepIdempotency(ctx, "billing", "k2", a.Token); err != nil {
		t.Fatal(err)
	}
	var idemTTL, recTTL time.Duration
	for _, k := range scanKeys(t, e.rdb, e.prefix) {
		ttl := e.rdb.PTTL(ctx, k).Val()
		switch {
		case k == e.prefix+"a:"+a.Token:
			recTTL = ttl
		case keyKind(k[len(e.prefix):]) == "idem" && ttl > time.Minute:
			idemTTL = ttl
		}
	}
	// The two PTTLs are read a few milliseconds apart, in either order.
	if idemTTL < recTTL-time.Minute || idemTTL > recTTL+time.Second {
		t.Errorf("kept idempotency key: PTTL %v, want about the record's %v", idemTTL, recTTL)
	}
}

func TestOwner(t *testing.T) {
	e := newEnv(t)
	s := e.store()
	api := createAPI(t, e, s, apiRequests(), "")
	slackRun := e.create(t, s, requests("c1"), 1)
	if got, err := s.Owner(t.Context(), api.Token); err != nil || got != "billing" {
		t.Errorf("Owner(API token) = %q, %v; want billing", got, err)
	}
	for name, token := range map[string]string{
		"a Slack run's token": slackRun.Token,
		"an unknown token":    agentrunner.NewToken(),
		"a malformed token":   "x",
	} {
		if got, err := s.Owner(t.Context(), token); !errors.Is(err, approval.ErrNotFound) {
			t.Errorf("Owner(%s) = %q, %v; want ErrNotFound", name, got, err)
		}
	}
}

// bigAPIApproval creates an API client's token whose record is about
// 900 KB, the size that made another client's 404 slower than an unknown
// token's.
func bigAPIApproval(t testing.TB, s *store.Store) string {
	t.Helper()
	reqs := requests("c1")
	reqs.Approvals[0].Args = json.RawMessage(`{"blob":"` + strings.Repeat("x", 900<<10) + `"}`)
	a := &approval.Request{Token: agentrunner.NewToken(), Origin: approval.Origin{Client: "billing"}, Requests: reqs}
	if err := s.Create(t.Context(), a); err != nil {
		t.Fatal(err)
	}
	return a.Token
}

// Owner reads one small field: checking the owner of a 900 KB record
// reads as little from Redis as checking an unknown token.
func TestOwnerReadsOneField(t *testing.T) {
	_, prefix := redistest.Client(t)
	m := &meter{}
	s := store.New(meteredClient(t, m), store.Options{Prefix: prefix})
	token := bigAPIApproval(t, s)
	read := func(f func() error) int64 {
		t.Helper()
		m.reset()
		if err := f(); err != nil && !errors.Is(err, approval.ErrNotFound) {
			t.Fatal(err)
		}
		return m.read.Load()
	}
	owner := read(func() error { _, err := s.Owner(t.Context(), token); return err })
	unknown := read(func() error { _, err := s.Owner(t.Context(), agentrunner.NewToken()); return err })
	whole := read(func() error { _, err := s.Get(t.Context(), token); return err })
	if owner > 256 || unknown > 256 {
		t.Errorf("Owner read %d bytes for the big record and %d for an unknown token; want a few bytes each", owner, unknown)
	}
	if whole < 900<<10 {
		t.Errorf("Get read %d bytes; the meter does not see the record", whole)
	}
}
