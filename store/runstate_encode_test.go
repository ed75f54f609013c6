package store_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/slackapprove/slackbot/agentrunner"
	"github.com/slackapprove/slackbot/approval"
	"github.com/slackapprove/slackbot/store"
)

// bigArgs are ~200 B of tool call arguments, as in the Redis memory bench.
const bigArgs = `{"paths":["/srv/reports/2025/q1-revenue-final.xlsx","/srv/reports/2025/q1-revenue-draft-v2.xlsx","/srv/reports/2025/q1-costs.csv"],"reason":"superseded by the audited 2025 annual report","dry_run":false}`

// realisticRun is the state of a Slack-started run waiting on token: a
// prompt, a tool that ran, then a call that needs approval.
func realisticRun(runID, token string, at time.Time) store.RunState {
	pending := agentrunner.DeferredToolRequests{
		Approvals: []agentrunner.ToolCallPart{{ToolName: "delete_files", Args: json.RawMessage(bigArgs), ToolCallID: "toolu_01B7wRt5yN2dH8"}},
		Metadata:  map[string]map[string]any{"toolu_01B7wRt5yN2dH8": {"risk": "high"}},
	}
	msgs := []agentrunner.Message{
		{Kind: agentrunner.KindRequest, RunID: runID, Timestamp: at, Parts: []agentrunner.Part{agentrunner.UserPrompt("<@U0BOT> please clean up the superseded Q1 2025 reports")}},
		{Kind: agentrunner.KindResponse, RunID: runID, Timestamp: at, ModelName: "claude-sonnet-4-5", Parts: []agentrunner.Part{
			agentrunner.Text("I'll look at what is in the 2025 reports folder first."),
			agentrunner.ToolCall("list_files", json.RawMessage(`{"dir":"/srv/reports/2025"}`), "toolu_01A9pQm3xV7cK2"),
		}},
		{Kind: agentrunner.KindRequest, RunID: runID, Timestamp: at, Parts: []agentrunner.Part{
			agentrunner.ToolReturn("list_files", "toolu_01A9pQm3xV7cK2", json.RawMessage(`["q1-revenue-final.xlsx","q1-costs.csv"]`), agentrunner.OutcomeSuccess),
		}},
		{Kind: agentrunner.KindResponse, RunID: runID, Timestamp: at, ModelName: "claude-sonnet-4-5", Parts: []agentrunner.Part{
			agentrunner.Text("Deleting them needs an approval."),
			agentrunner.ToolCall("delete_files", json.RawMessage(bigArgs), "toolu_01B7wRt5yN2dH8"),
		}},
	}
	origin, _ := store.MarshalOrigin(approval.Origin{Team: "T0", Channel: "C0GENERAL", ThreadTS: "1764600000.000100", User: "U0CAROL"})
	return store.RunState{RunID: runID, Token: token, Messages: msgs, Pending: pending, Origin: origin, ExpiresAt: at.Add(time.Hour).Truncate(time.Millisecond)}
}

// zstdFrame reports whether v is a zstd frame.
func zstdFrame(v string) bool { return strings.HasPrefix(v, "\x28\xb5\x2f\xfd") }

// A large run state is stored compressed, much smaller than its JSON, and
// loads back equal; its key keeps the state's TTL.
func TestRunStateCompressedRoundTrip(t *testing.T) {
	e := newEnv(t)
	s := e.store()
	ctx := t.Context()
	rs := realisticRun("run-big", agentrunner.NewToken(), e.clock.Now())
	if err := s.SaveRun(ctx, rs); err != nil {
		t.Fatal(err)
	}
	raw := e.rdb.Get(ctx, e.prefix+"run:run-big").Val()
	rs.SavedAt = e.clock.Now()
	plain, _ := json.Marshal(rs)
	if !zstdFrame(raw) {
		t.Fatalf("stored state is not a zstd frame: %.40q", raw)
	}
	if len(raw) > len(plain)/3 {
		t.Errorf("stored state: %d B, want at most a third of its %d B of JSON", len(raw), len(plain))
	}
	got, err := s.LoadRun(ctx, "run-big")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(mustJSON(t, rs), mustJSON(t, got)); diff != "" {
		t.Errorf("loaded state (-saved +loaded):\n%s", diff)
	}
	want := time.Hour + store.DefaultGrace
	if ttl := e.rdb.PTTL(ctx, e.prefix+"run:run-big").Val(); ttl <= want-time.Minute || ttl > want {
		t.Errorf("run state PTTL %v, want about %v", ttl, want)
	}
}

// A small state is stored as plain JSON: compressing it does not pay.
func TestRunStateSmallStaysJSON(t *testing.T) {
	e := newEnv(t)
	s := e.store()
	ctx := t.Context()
	if err := s.SaveRun(ctx, store.RunState{RunID: "run-small", Token: "t"}); err != nil {
		t.Fatal(err)
	}
	raw := e.rdb.Get(ctx, e.prefix+"run:run-small").Val()
	if !strings.HasPrefix(raw, "{") {
		t.Fatalf("small state stored as %q, want JSON", raw)
	}
	got, err := s.LoadRun(ctx, "run-small")
	if err != nil || got.RunID != "run-small" || got.Token != "t" {
		t.Fatalf("load: %+v, %v", got, err)
	}
}

// A state written by the previous version (plain JSON, whatever its size)
// still loads.
func TestRunStateOldFormatLoads(t *testing.T) {
	e := newEnv(t)
	s := e.store()
	ctx := t.Context()
	rs := realisticRun("run-old", agentrunner.NewToken(), e.clock.Now())
	rs.SavedAt = e.clock.Now()
	old, _ := json.Marshal(rs)
	if err := e.rdb.Set(ctx, e.prefix+"run:run-old", old, time.Hour).Err(); err != nil {
		t.Fatal(err)
	}
	got, err := s.LoadRun(ctx, "run-old")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(mustJSON(t, rs), mustJSON(t, got)); diff != "" {
		t.Errorf("loaded state (-saved +loaded):\n%s", diff)
	}
}

// A compressed state that is corrupt gives an error that says so, and is
// not mistaken for a missing state.
func TestRunStateCorrupt(t *testing.T) {
	e := newEnv(t)
	s := e.store()
	ctx := t.Context()
	rs := realisticRun("run-c", agentrunner.NewToken(), e.clock.Now())
	if err := s.SaveRun(ctx, rs); err != nil {
		t.Fatal(err)
	}
	raw := e.rdb.Get(ctx, e.prefix+"run:run-c").Val()
	for name, v := range map[string]string{
		"truncated":      raw[:len(raw)/2],
		"flipped bytes":  raw[:len(raw)/2] + strings.Repeat("\xff", 8) + raw[len(raw)/2+8:],
		"only the magic": raw[:4],
	} {
		if err := e.rdb.Set(ctx, e.prefix+"run:run-c", v, time.Hour).Err(); err != nil {
			t.Fatal(err)
		}
		_, err := s.LoadRun(ctx, "run-c")
		if err == nil || !strings.Contains(err.Error(), "corrupt compressed run state") {
			t.Errorf("%s: got error %v, want a corrupt compressed run state", name, err)
		}
	}
}

// Every key the ask path of a Slack-started run and of a /v1 request
// writes has a TTL, the compressed run state included.
func TestAskPathKeysHaveTTL(t *testing.T) {
	e := newEnv(t)
	s := e.store()
	ev := store.NewTokens(s, store.TokensOptions{})
	runTokens(t, ev)
	ctx := t.Context()

	// A Slack-started run: the event's dedupe key, the thread's lease,
	// Open, Create, the saved run, the card's message.
	if _, err := s.Dedupe(ctx, "event:Ev1", 2*time.Hour); err != nil {
		t.Fatal(err)
	}
	th := store.Thread{Team: "T0", Channel: "C0GENERAL", TS: "1764600000.000100"}
	if _, err := s.Threads().Enter(ctx, th, store.ThreadTurn{RunID: "run-slack", Payload: []byte(`{}`)}, time.Minute); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Threads().Hold(ctx, th, "run-slack", time.Hour); err != nil {
		t.Fatal(err)
	}
	token := agentrunner.NewToken()
	rs := realisticRun("run-slack", token, e.clock.Now())
	a := &approval.Request{Token: token, RunID: rs.RunID, Requests: rs.Pending,
		Origin: approval.Origin{Team: "T0", Channel: "C0GENERAL", ThreadTS: th.TS, User: "U0CAROL"},
		Calls:  []approval.Call{{ID: "toolu_01B7wRt5yN2dH8", Route: "files"}}}
	if err := s.Create(ctx, a); err != nil {
		t.Fatal(err)
	}
	if err := ev.Watch(ctx, token); err != nil {
		t.Fatal(err)
	}
	rc := &agentrunner.RunContext{RunID: rs.RunID, Messages: rs.Messages}
	if err := s.SaveWaitingRun(ctx, rc, token, rs.Pending, a.Origin, a.ExpiresAt); err != nil {
		t.Fatal(err)
	}
	if err := s.SetMessage(ctx, token, "toolu_01B7wRt5yN2dH8", approval.MessageRef{Channel: "C0APPROVALS", ID: "1764600001.000200"}); err != nil {
		t.Fatal(err)
	}
	if !zstdFrame(e.rdb.Get(ctx, e.prefix+"run:run-slack").Val()) {
		t.Fatal("the run state is not compressed: the test does not cover a compressed state's TTL")
	}
	// A /v1 request with an idempotency key.
	api := agentrunner.NewToken()
	if _, _, err := s.ClaimIdempotency(ctx, "ci", "k1", api, "fp", time.Minute); err != nil {
		t.Fatal(err)
	}
	e.create(t, s, requests("c1"), 1)
	if err := s.KeepIdempotency(ctx, "ci", "k1", api); err != nil {
		t.Fatal(err)
	}

	kinds := map[string]bool{}
	for _, k := range scanKeys(t, e.rdb, e.prefix) {
		if ttl := e.rdb.PTTL(ctx, k).Val(); ttl <= 0 {
			t.Errorf("key %s: PTTL %v, want > 0", k, ttl)
		}
		kinds[keyKind(k[len(e.prefix):])] = true
	}
	for _, want := range []string{"a", "deadlines", "audit", "run", "proc", "dedupe", "thread", "idem"} {
		if !kinds[want] {
			t.Errorf("no %q key was written; the test does not cover it (kinds: %v)", want, kinds)
		}
	}
}
