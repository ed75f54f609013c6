package store_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/slackapprove/slackbot/agentrunner"
	"github.com/slackapprove/slackbot/approval"
	"github.com/slackapprove/slackbot/store"
)

// dies takes owner's process heartbeat away, as its death does.
func (e *env) dies(t *testing.T, owner string) {
	t.Helper()
	if err := e.rdb.Del(t.Context(), e.prefix+"proc:"+owner).Err(); err != nil {
		t.Fatal(err)
	}
}

// decided creates a token of run runID, approves its call and returns it.
func (e *env) decided(t *testing.T, s *store.Store, runID string) string {
	t.Helper()
	token := agentrunner.NewToken()
	if err := s.Create(t.Context(), &approval.Request{Token: token, RunID: runID, Requests: requests("c1")}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Decide(t.Context(), token, approve("c1", "UA")); err != nil {
		t.Fatal(err)
	}
	return token
}

// A resume claim held by a process with a heartbeat dies with it: while
// A lives B cannot claim, and once A's heartbeat is gone B takes the run
// over; the job A was resuming is handed to B by ReclaimDead, not before.
func TestResumeClaimDiesWithOwner(t *testing.T) {
	e := newEnv(t)
	ctx := t.Context()
	s := e.store()
	token := e.decided(t, s, "run-1")
	e.alive(t, "A")
	e.alive(t, "B")
	q := s.ResumeQueue(store.ResumeQueueOptions{})
	jobs, err := q.Read(ctx, "A", 0)
	if err != nil || len(jobs) != 1 {
		t.Fatalf("A's read: got %v, %v; want one job", jobs, err)
	}
	if ok, err := s.ClaimResume(ctx, token, "A/queue", 0); !ok || err != nil {
		t.Fatalf("A's claim: %v, %v", ok, err)
	}
	if ok, err := s.ClaimResume(ctx, token, "B/queue", 0); ok || err != nil {
		t.Fatalf("B's claim while A lives: %v, %v; want false", ok, err)
	}
	e.clock.Advance(2 * time.Second)
	time.Sleep(1100 * time.Millisecond) // the stream's idle times are Redis's own
	if got, err := q.ReclaimDead(ctx, "B"); err != nil || len(got) != 0 {
		t.Fatalf("B's reclaim while A lives: got %v, %v; want nothing", got, err)
	}
	e.dies(t, "A")
	got, err := q.ReclaimDead(ctx, "B")
	if err != nil || len(got) != 1 || got[0].Token != token {
		t.Fatalf("B's reclaim after A died: got %v, %v; want A's job", got, err)
	}
	if ok, err := s.ClaimResume(ctx, token, "B/queue", 0); !ok || err != nil {
		t.Fatalf("B's claim after A died: %v, %v; want true", ok, err)
	}
	if ok, _ := s.ClaimResume(ctx, token, "A/queue", 0); ok {
		t.Error("A (restarted, no heartbeat yet) claimed a run B took over")
	}
	// B finishes: the job leaves the queue and nobody resumes the run again.
	if err := s.FinishResume(ctx, token); err != nil {
		t.Fatal(err)
	}
	e.dies(t, "B")
	time.Sleep(1100 * time.Millisecond)
	if got, err := q.ReclaimDead(ctx, "C"); err != nil || len(got) != 0 {
		t.Errorf("reclaim after the run finished: got %v, %v; want nothing", got, err)
	}
	if got, err := q.Reclaim(ctx, "C", 0); err != nil || len(got) != 0 {
		t.Errorf("idle reclaim after the run finished: got %v, %v; want nothing", got, err)
	}
}

// A process that waited on its token locally and resumed the run keeps
// the run's job hidden from others while it lives; once it died, a
// consumer's Read hands the job on and its claim takes the run over.
func TestLocalResumeTakenOverAfterDeath(t *testing.T) {
	e := newEnv(t)
	ctx := t.Context()
	s := e.store()
	ev := store.NewTokens(s, store.TokensOptions{Owner: "A"})
	stop := make(chan struct{})
	runCtx, cancel := context.WithCancel(context.Background())
	go func() { _ = ev.Run(runCtx); close(stop) }()
	<-ev.Ready()
	token := agentrunner.NewToken()
	if err := s.Create(ctx, &approval.Request{Token: token, RunID: "run-1", Requests: requests("c1")}); err != nil {
		t.Fatal(err)
	}
	if err := ev.Watch(ctx, token); err != nil {
		t.Fatal(err)
	}
	if _, err := e.otherProcess(t).Decide(ctx, token, approve("c1", "UA")); err != nil {
		t.Fatal(err)
	}
	if _, err := (approval.RunTokens{TokenStore: ev}).Wait(ctx, token); err != nil {
		t.Fatal(err)
	}
	e.alive(t, "B")
	q := e.otherProcess(t).ResumeQueue(store.ResumeQueueOptions{})
	if got, err := q.Read(ctx, "B", 0); err != nil || len(got) != 0 {
		t.Fatalf("read while A resumes: got %v, %v; want nothing", got, err)
	}
	cancel() // A dies mid-run (Run's end also drops its heartbeat)
	<-stop
	e.dies(t, "A")
	got, err := q.Reclaim(ctx, "B", 0)
	if err != nil || len(got) != 1 || got[0].Token != token {
		t.Fatalf("reclaim after A died: got %v, %v; want the run's job", got, err)
	}
	if ok, err := s.ClaimResume(ctx, token, "B/queue", 0); !ok || err != nil {
		t.Fatalf("B's claim after A died: %v, %v; want true", ok, err)
	}
}

// CallJournal: a call starts once; its recorded return is handed back
// instead of running it again; one started and never recorded is lost;
// End with no return lets it start again.
func TestCallJournal(t *testing.T) {
	e := newEnv(t)
	ctx := t.Context()
	j := e.store().CallJournal()
	other := e.otherProcess(t).CallJournal()
	at := agentrunner.Checkpoint{Step: 2}
	c := agentrunner.ToolCallPart{ToolName: "delete", ToolCallID: "c1", Args: json.RawMessage(`{}`)}
	if b, err := j.Begin(ctx, "run-1", c, at); b.Return != nil || b.Progress != nil || err != nil {
		t.Fatalf("first begin: %+v, %v; want nothing", b, err)
	}
	if _, err := other.Begin(ctx, "run-1", c, at); !errors.Is(err, agentrunner.ErrOutcomeLost) {
		t.Fatalf("begin of a started call: %v, want ErrOutcomeLost", err)
	}
	ret := agentrunner.ToolReturn("delete", "c1", json.RawMessage(`"deleted"`), agentrunner.OutcomeSuccess)
	if err := j.End(ctx, "run-1", c, &ret); err != nil {
		t.Fatal(err)
	}
	b, err := other.Begin(ctx, "run-1", c, at)
	if err != nil || b.Return == nil || b.Return.ReturnText() != "deleted" || b.Return.ToolCallID != "c1" {
		t.Fatalf("begin of a call that ran: %+v, %v; want its return", b, err)
	}
	c2 := agentrunner.ToolCallPart{ToolName: "delete", ToolCallID: "c2"}
	if _, err := j.Begin(ctx, "run-1", c2, at); err != nil {
		t.Fatal(err)
	}
	if err := j.End(ctx, "run-1", c2, nil); err != nil {
		t.Fatal(err)
	}
	if b, err := other.Begin(ctx, "run-1", c2, at); b.Return != nil || err != nil {
		t.Errorf("begin after a deferral: %+v, %v; want nothing", b, err)
	}
	if _, err := j.Begin(ctx, "", c, at); !errors.Is(err, approval.ErrInvalid) {
		t.Errorf("begin without a run id: %v, want ErrInvalid", err)
	}
	if _, err := j.Begin(ctx, "run-1", c, agentrunner.Checkpoint{}); !errors.Is(err, approval.ErrInvalid) {
		t.Errorf("begin without a step: %v, want ErrInvalid", err)
	}
}

// CallJournal keeps a run's checkpoint: a Begin at an earlier step, or at
// the same step with other messages (another response of the model), gets
// it back as Progress and begins nothing; a Begin at the checkpoint's
// step with its messages, or with none, begins the call; a later
// checkpoint replaces it.
func TestCallJournalCheckpoint(t *testing.T) {
	e := newEnv(t)
	ctx := t.Context()
	j := e.store().CallJournal()
	other := e.otherProcess(t).CallJournal()
	hist := func(id string) []agentrunner.Message {
		return []agentrunner.Message{
			{Kind: agentrunner.KindRequest, Parts: []agentrunner.Part{agentrunner.UserPrompt("go")}},
			{Kind: agentrunner.KindResponse, Parts: []agentrunner.Part{agentrunner.ToolCall("note", json.RawMessage(`{}`), id)}},
		}
	}
	call := func(id string) agentrunner.ToolCallPart {
		return agentrunner.ToolCallPart{ToolName: "note", ToolCallID: id}
	}
	if b, err := j.Begin(ctx, "run-1", call("n1"), agentrunner.Checkpoint{Step: 2, Messages: hist("n1")}); err != nil || b.Progress != nil {
		t.Fatalf("first begin with a checkpoint: %+v, %v", b, err)
	}
	for _, tc := range []struct {
		name string
		id   string
		at   agentrunner.Checkpoint
	}{
		{"an earlier step", "c0", agentrunner.Checkpoint{Step: 1}},
		{"the same step, another response", "n2", agentrunner.Checkpoint{Step: 2, Messages: hist("n2")}},
	} {
		b, err := other.Begin(ctx, "run-1", call(tc.id), tc.at)
		if err != nil || len(b.Progress) != 2 || b.Progress[1].ToolCalls()[0].ToolCallID != "n1" {
			t.Fatalf("begin at %s: %+v, %v; want the checkpoint as progress", tc.name, b, err)
		}
		if b, err := j.Begin(ctx, "run-1", call(tc.id), agentrunner.Checkpoint{Step: 2}); err != nil || b.Progress != nil || b.Return != nil {
			t.Errorf("begin of %s at the checkpoint's step: %+v, %v; want it begun now, not before", tc.id, b, err)
		}
	}
	if _, err := other.Begin(ctx, "run-1", call("n1"), agentrunner.Checkpoint{Step: 2, Messages: hist("n1")}); !errors.Is(err, agentrunner.ErrOutcomeLost) {
		t.Errorf("begin of n1 with the same checkpoint: %v; want ErrOutcomeLost (it started)", err)
	}
	later := append(hist("n1"), agentrunner.Message{Kind: agentrunner.KindRequest}, hist("n3")[1])
	if b, err := j.Begin(ctx, "run-1", call("n3"), agentrunner.Checkpoint{Step: 4, Messages: later}); err != nil || b.Progress != nil {
		t.Fatalf("begin with a later checkpoint: %+v, %v", b, err)
	}
	if b, err := other.Begin(ctx, "run-1", call("x"), agentrunner.Checkpoint{Step: 2}); err != nil || len(b.Progress) != 4 {
		t.Errorf("begin behind the later checkpoint: %+v, %v; want it as progress", b, err)
	}
}

// BeginAnswer: the first attempt posts; another live process's attempt
// waits for it; after an attempt that may have posted (its own, or a dead
// process's) the next one looks first; none posts after one recorded.
func TestBeginAnswer(t *testing.T) {
	e := newEnv(t)
	ctx := t.Context()
	s := e.store()
	e.alive(t, "A")
	e.alive(t, "B")
	steps := []struct{ owner, want string }{{"A/1", ""}, {"B/1", "busy"}, {"A/2", "busy"}}
	for i, st := range steps {
		if got, err := s.BeginAnswer(ctx, "run-1/t", st.owner); got != st.want || err != nil {
			t.Fatalf("begin %d by %s: %q, %v; want %q", i, st.owner, got, err, st.want)
		}
	}
	if err := s.AnswerFailed(ctx, "run-1/t"); err != nil {
		t.Fatal(err)
	}
	if got, err := s.BeginAnswer(ctx, "run-1/t", "A/3"); got != "posting" || err != nil {
		t.Fatalf("begin after a failed attempt: %q, %v; want posting", got, err)
	}
	e.dies(t, "A")
	if got, err := s.BeginAnswer(ctx, "run-1/t", "B/2"); got != "posting" || err != nil {
		t.Fatalf("begin by B after A died: %q, %v; want posting", got, err)
	}
	if err := s.AnswerPosted(ctx, "run-1/t", "1.2"); err != nil {
		t.Fatal(err)
	}
	if got, err := s.BeginAnswer(ctx, "run-1/t", "A/4"); got != "posted" || err != nil {
		t.Errorf("begin after posting: %q, %v; want posted", got, err)
	}
	if _, err := s.BeginAnswer(ctx, "", "A"); !errors.Is(err, approval.ErrInvalid) {
		t.Errorf("begin without key: %v, want ErrInvalid", err)
	}
}
