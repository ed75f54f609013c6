package store_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/slackapprove/slackbot/agentrunner"
	"github.com/slackapprove/slackbot/approval"
	"github.com/slackapprove/slackbot/store"
)

var testThread = store.Thread{Team: "T1", Channel: "C1", TS: "1700000000.000100"}

// turn is one user message and what the run made of it: a tool call, its
// return, and a final text.
func turn(i int, pad string) []agentrunner.Message {
	id := fmt.Sprintf("call_%d", i)
	return []agentrunner.Message{
		{Kind: agentrunner.KindRequest, Parts: []agentrunner.Part{agentrunner.UserPrompt(fmt.Sprintf("turn %d %s", i, pad))}},
		{Kind: agentrunner.KindResponse, Parts: []agentrunner.Part{agentrunner.ToolCall("issue_refund", json.RawMessage(`{"amount":1}`), id)}},
		{Kind: agentrunner.KindRequest, Parts: []agentrunner.Part{agentrunner.ToolReturn("issue_refund", id, json.RawMessage(`"ok"`), agentrunner.OutcomeSuccess)}},
		{Kind: agentrunner.KindResponse, Parts: []agentrunner.Part{agentrunner.Text(fmt.Sprintf("answer %d", i))}},
	}
}

func TestThreadHistoryRoundTrip(t *testing.T) {
	e := newEnv(t)
	st := e.store()
	if _, err := st.Threads().History(t.Context(), testThread); !errors.Is(err, store.ErrThreadNotFound) {
		t.Fatalf("load before save: got %v, want ErrThreadNotFound", err)
	}
	h := turn(1, "")
	n, err := st.Threads().SaveHistory(t.Context(), testThread, h)
	if err != nil || n != len(h) {
		t.Fatalf("save: got %d, %v; want %d, nil", n, err, len(h))
	}
	got, err := st.Threads().History(t.Context(), testThread)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(h, got); diff != "" {
		t.Errorf("history (-saved +loaded):\n%s", diff)
	}
	// Another thread of the same channel is another conversation.
	other := testThread
	other.TS = "1700000000.000200"
	if _, err := st.Threads().History(t.Context(), other); !errors.Is(err, store.ErrThreadNotFound) {
		t.Errorf("other thread: got %v, want ErrThreadNotFound", err)
	}
	ttl := e.rdb.PTTL(t.Context(), e.prefix+"thread:"+testThread.String()+":h").Val()
	if ttl <= 6*24*time.Hour || ttl > store.DefaultThreadTTL {
		t.Errorf("history TTL: got %v, want about %v", ttl, store.DefaultThreadTTL)
	}
}

func TestThreadHistoryThatNoLongerDecodes(t *testing.T) {
	e := newEnv(t)
	st := e.store()
	e.rdb.Set(t.Context(), e.prefix+"thread:"+testThread.String()+":h", `[{"kind":"request","parts":[{"content":"no part kind"}]}]`, time.Hour)
	_, err := st.Threads().History(t.Context(), testThread)
	if !errors.Is(err, store.ErrThreadUndecodable) {
		t.Errorf("got %v, want ErrThreadUndecodable", err)
	}
}

func TestThreadBadIDs(t *testing.T) {
	st := newEnv(t).store()
	for _, th := range []store.Thread{{Channel: "C1"}, {TS: "1.2"}, {Channel: "C1|x", TS: "1.2"}, {Channel: "C1", TS: strings.Repeat("9", 65)}} {
		if _, err := st.Threads().SaveHistory(t.Context(), th, turn(1, "")); !errors.Is(err, approval.ErrInvalid) {
			t.Errorf("save %+v: got %v, want ErrInvalid", th, err)
		}
		if _, err := st.Threads().Enter(t.Context(), th, store.ThreadTurn{RunID: "r"}, time.Second); !errors.Is(err, approval.ErrInvalid) {
			t.Errorf("enter %+v: got %v, want ErrInvalid", th, err)
		}
	}
	if _, err := st.Threads().Enter(t.Context(), testThread, store.ThreadTurn{RunID: "a|b"}, time.Second); !errors.Is(err, approval.ErrInvalid) {
		t.Errorf("run id with '|': got %v, want ErrInvalid", err)
	}
}

// TestTrimHistory: a history over the cap loses its oldest whole turns,
// never a tool call without its return.
func TestTrimHistory(t *testing.T) {
	var h []agentrunner.Message
	for i := range 10 {
		h = append(h, turn(i, strings.Repeat("x", 200))...)
	}
	full, _ := json.Marshal(h)
	last3, _ := json.Marshal(h[len(h)-12:])
	last1, _ := json.Marshal(h[len(h)-4:])
	tests := []struct {
		name     string
		max      int
		wantMsgs int
	}{
		{"fits", len(full), len(h)},
		{"exactly three turns", len(last3), 12},
		{"just under three turns", len(last3) - 1, 8},
		{"one turn", len(last1), 4},
		{"not even the last turn", len(last1) - 1, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			kept, b, err := store.TrimHistory(h, tt.max)
			if err != nil {
				t.Fatal(err)
			}
			if len(kept) != tt.wantMsgs {
				t.Fatalf("kept %d messages, want %d", len(kept), tt.wantMsgs)
			}
			if len(b) > tt.max {
				t.Errorf("JSON of %d bytes over the cap %d", len(b), tt.max)
			}
			if len(kept) > 0 && kept[0].Parts[0].PartKind != agentrunner.PartUserPrompt {
				t.Errorf("kept history starts with %s, want a user prompt", kept[0].Parts[0].PartKind)
			}
		})
	}
	// A turn whose prompt came with tool returns (a resumed run given a
	// prompt) does not start a turn: cutting there would orphan the calls.
	mixed := append(turn(0, strings.Repeat("y", 300)), agentrunner.Message{Kind: agentrunner.KindRequest, Parts: []agentrunner.Part{
		agentrunner.ToolReturn("t", "call_0", json.RawMessage(`"late"`), agentrunner.OutcomeSuccess), agentrunner.UserPrompt("and this"),
	}})
	kept, _, _ := store.TrimHistory(mixed, 200)
	if len(kept) != 0 {
		t.Errorf("cut inside a turn: kept %d messages", len(kept))
	}
}

func TestSaveThreadHistoryCap(t *testing.T) {
	e := newEnv(t)
	one, _ := json.Marshal(turn(0, ""))
	e.opts.ThreadMaxBytes = 2*len(one) + 10
	st := e.store()
	var h []agentrunner.Message
	for i := range 5 {
		h = append(h, turn(i, "")...)
	}
	n, err := st.Threads().SaveHistory(t.Context(), testThread, h)
	if err != nil || n != 8 {
		t.Fatalf("save: got %d, %v; want 8 messages kept", n, err)
	}
	got, err := st.Threads().History(t.Context(), testThread)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(h[12:], got); diff != "" {
		t.Errorf("kept (-want +got):\n%s", diff)
	}
	// A last turn larger than the cap drops the history: the next run
	// starts afresh rather than from a stale one.
	n, err = st.Threads().SaveHistory(t.Context(), testThread, turn(9, strings.Repeat("z", len(one)*3)))
	if err != nil || n != 0 {
		t.Fatalf("save of an oversized turn: got %d, %v; want 0, nil", n, err)
	}
	if _, err := st.Threads().History(t.Context(), testThread); !errors.Is(err, store.ErrThreadNotFound) {
		t.Errorf("after an oversized turn: got %v, want ErrThreadNotFound", err)
	}
}

// TestThreadLeaseQueue: turns take the thread one at a time, in order, on
// redis-server and on the embedded miniredis `slackbot dev` uses.
func TestThreadLeaseQueue(t *testing.T) {
	t.Run("redis-server", func(t *testing.T) { threadLeaseQueue(t, newEnv(t).store()) })
	t.Run("miniredis", func(t *testing.T) {
		rdb, closeFn, err := store.Open(t.Context(), "")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = closeFn() })
		threadLeaseQueue(t, store.New(rdb, store.Options{}))
	})
}

func threadLeaseQueue(t *testing.T, st *store.Store) {
	ctx := t.Context()
	enter := func(id string) *store.ThreadTurn {
		t.Helper()
		got, err := st.Threads().Enter(ctx, testThread, store.ThreadTurn{RunID: id, Payload: []byte("p-" + id)}, time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	if got := enter("a"); got == nil || got.RunID != "a" || string(got.Payload) != "p-a" {
		t.Fatalf("first turn: got %+v, want a to run", got)
	}
	if got := enter("b"); got != nil {
		t.Fatalf("second turn while a runs: got %+v, want it queued", got)
	}
	if got := enter("c"); got != nil {
		t.Fatalf("third turn: got %+v, want it queued", got)
	}
	// Only the holder hands on.
	if got, err := st.Threads().Leave(ctx, testThread, "b", time.Minute); err != nil || got != nil {
		t.Fatalf("leave by a non-holder: got %+v, %v", got, err)
	}
	if ok, _ := st.Threads().Hold(ctx, testThread, "b", time.Hour); ok {
		t.Error("a non-holder renewed the lease")
	}
	for _, want := range []string{"b", "c"} {
		prev := map[string]string{"b": "a", "c": "b"}[want]
		got, err := st.Threads().Leave(ctx, testThread, prev, time.Minute)
		if err != nil || got == nil || got.RunID != want || string(got.Payload) != "p-"+want {
			t.Fatalf("%s leaves: got %+v, %v; want %s next", prev, got, err, want)
		}
		if ok, _ := st.Threads().Hold(ctx, testThread, want, time.Minute); !ok {
			t.Errorf("%s does not hold the lease it was handed", want)
		}
	}
	if got, err := st.Threads().Leave(ctx, testThread, "c", time.Minute); err != nil || got != nil {
		t.Fatalf("last leaves: got %+v, %v; want the thread free", got, err)
	}
	if got := enter("d"); got == nil || got.RunID != "d" {
		t.Fatalf("turn on a free thread: got %+v, want d to run", got)
	}
}

// TestThreadLeaseLapses: when the holder dies its lease lapses, and the
// next turn to arrive runs the queue in order before itself.
func TestThreadLeaseLapses(t *testing.T) {
	e := newEnv(t)
	st := e.store()
	ctx := t.Context()
	if _, err := st.Threads().Enter(ctx, testThread, store.ThreadTurn{RunID: "dead"}, time.Minute); err != nil {
		t.Fatal(err)
	}
	if got, _ := st.Threads().Enter(ctx, testThread, store.ThreadTurn{RunID: "queued"}, time.Minute); got != nil {
		t.Fatalf("got %+v, want queued behind the holder", got)
	}
	// A lease can be extended (to a token's deadline) but never shortened.
	if ok, _ := st.Threads().Hold(ctx, testThread, "dead", time.Millisecond); !ok {
		t.Fatal("the holder cannot renew")
	}
	lease := e.prefix + "thread:" + testThread.String() + ":l"
	if ttl := e.rdb.PTTL(ctx, lease).Val(); ttl < 30*time.Second {
		t.Errorf("renewal shortened the minute's lease to %v", ttl)
	}
	// The holder is gone and its minute passes: Redis lets the lease
	// lapse (brought forward here), and the next turn finds it lapsed.
	if err := e.rdb.PExpire(ctx, lease, time.Millisecond).Err(); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "the lease to lapse", func() bool { return e.rdb.Exists(ctx, lease).Val() == 0 })
	got, err := st.Threads().Enter(ctx, testThread, store.ThreadTurn{RunID: "late"}, time.Minute)
	if err != nil || got == nil || got.RunID != "queued" {
		t.Fatalf("after the lapse: got %+v, %v; want the queued turn to run first", got, err)
	}
	next, err := st.Threads().Leave(ctx, testThread, "queued", time.Minute)
	if err != nil || next == nil || next.RunID != "late" {
		t.Fatalf("then: got %+v, %v; want late", next, err)
	}
}

func TestThreadQueueIsBounded(t *testing.T) {
	st := newEnv(t).store()
	ctx := t.Context()
	if _, err := st.Threads().Enter(ctx, testThread, store.ThreadTurn{RunID: "holder"}, time.Minute); err != nil {
		t.Fatal(err)
	}
	for i := range store.MaxThreadQueue {
		if _, err := st.Threads().Enter(ctx, testThread, store.ThreadTurn{RunID: fmt.Sprint(i)}, time.Minute); err != nil {
			t.Fatalf("turn %d: %v", i, err)
		}
	}
	if _, err := st.Threads().Enter(ctx, testThread, store.ThreadTurn{RunID: "one too many"}, time.Minute); !errors.Is(err, store.ErrThreadBusy) {
		t.Errorf("got %v, want ErrThreadBusy", err)
	}
}

// TestThreadLeaseConcurrentEnters: of many turns entering at once, exactly
// one runs; the others run one at a time, each once, in queue order.
func TestThreadLeaseConcurrentEnters(t *testing.T) {
	e := newEnv(t)
	ctx := t.Context()
	const n = 20
	var (
		mu      sync.Mutex
		running []string
		wg      sync.WaitGroup
	)
	for i := range n {
		wg.Go(func() {
			got, err := e.store().Threads().Enter(ctx, testThread, store.ThreadTurn{RunID: fmt.Sprint(i)}, time.Minute)
			if err != nil {
				t.Error(err)
				return
			}
			if got != nil {
				mu.Lock()
				running = append(running, got.RunID)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if len(running) != 1 {
		t.Fatalf("%d turns run at once: %v", len(running), running)
	}
	seen := map[string]bool{running[0]: true}
	cur := running[0]
	for {
		next, err := e.store().Threads().Leave(ctx, testThread, cur, time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		if next == nil {
			break
		}
		if seen[next.RunID] {
			t.Fatalf("turn %s ran twice", next.RunID)
		}
		seen[next.RunID] = true
		cur = next.RunID
	}
	if len(seen) != n {
		t.Errorf("%d of %d turns ran", len(seen), n)
	}
}
