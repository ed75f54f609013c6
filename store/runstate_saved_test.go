package store_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/slackapprove/slackbot/agentrunner"
	"github.com/slackapprove/slackbot/approval"
	"github.com/slackapprove/slackbot/store"
)

// A run whose waiter vanished before the decision is handed to exactly one
// consumer, including by XAUTOCLAIM of the entry a dead consumer read.
func TestResumeQueueDeadWaiter(t *testing.T) {
	e := newEnv(t)
	ctx := t.Context()
	s := e.store()
	// Process A opened the token and died: its Tokens never ran, so it has
	// no heartbeat, and its waiter registration is stale.
	dead := store.NewTokens(s, store.TokensOptions{Owner: "A"})
	token := agentrunner.NewToken()
	a := &approval.Request{Token: token, RunID: "run-1", Requests: requests("c1")}
	if err := s.Create(ctx, a); err != nil {
		t.Fatal(err)
	}
	if err := dead.Watch(ctx, token); err != nil {
		t.Fatal(err)
	}
	rs := store.RunState{RunID: "run-1", Token: token, Pending: requests("c1"), Origin: []byte(`{"channel":"C1","thread_ts":"1.2"}`),
		Messages: []agentrunner.Message{{Kind: agentrunner.KindRequest, Parts: []agentrunner.Part{agentrunner.UserPrompt("delete c1")}}}}
	if err := s.SaveRun(ctx, rs); err != nil {
		t.Fatal(err)
	}
	if _, err := e.otherProcess(t).Decide(ctx, token, approve("c1", "UA")); err != nil {
		t.Fatal(err)
	}

	q1 := e.store().ResumeQueue(store.ResumeQueueOptions{})
	q2 := e.otherProcess(t).ResumeQueue(store.ResumeQueueOptions{})
	jobs, err := q1.Read(ctx, "consumer-1", 0)
	if err != nil || len(jobs) != 1 {
		t.Fatalf("consumer-1 read: got %v, %v; want one job", jobs, err)
	}
	want := store.ResumeJob{ID: jobs[0].ID, Token: token, RunID: "run-1", State: approval.StateResolved}
	if jobs[0] != want {
		t.Errorf("job: got %+v, want %+v", jobs[0], want)
	}
	// consumer-1 dies without acknowledging. consumer-2 sees nothing new,
	// then takes the stale entry over; two reclaimers race for it.
	if got, err := q2.Read(ctx, "consumer-2", 0); err != nil || len(got) != 0 {
		t.Fatalf("consumer-2 read: got %v, %v; want nothing", got, err)
	}
	var mu sync.Mutex
	var reclaimed []store.ResumeJob
	var wg sync.WaitGroup
	for _, c := range []string{"consumer-2", "consumer-3"} {
		wg.Go(func() {
			got, err := q2.Reclaim(ctx, c, 0)
			if err != nil {
				t.Errorf("%s reclaim: %v", c, err)
			}
			mu.Lock()
			reclaimed = append(reclaimed, got...)
			mu.Unlock()
		})
	}
	wg.Wait()
	if len(reclaimed) == 0 {
		t.Fatal("no consumer reclaimed the dead consumer's job")
	}
	// Whoever got it (XAUTOCLAIM may hand it to both if they race on an
	// idle time of 0), the claim lets exactly one resume.
	claims, winner := 0, ""
	for _, c := range []string{"consumer-2", "consumer-3", "consumer-1"} {
		ok, err := s.ClaimResume(ctx, token, c, 0)
		if err != nil {
			t.Fatal(err)
		}
		if ok {
			claims++
			winner = c
			got, err := s.LoadRun(ctx, "run-1")
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(rs.Messages, got.Messages); diff != "" || string(got.Origin) != string(rs.Origin) {
				t.Errorf("loaded run state (-want +got):\n%s origin %s", diff, got.Origin)
			}
		}
	}
	if claims != 1 {
		t.Errorf("got %d successful claims, want 1", claims)
	}
	if ok, err := s.ClaimResume(ctx, token, winner, 0); !ok || err != nil {
		t.Errorf("claiming again as the holder: got %v, %v; want true", ok, err)
	}
	if err := q2.Ack(ctx, reclaimed[0].ID); err != nil {
		t.Fatal(err)
	}
	if got, err := q2.Reclaim(ctx, "consumer-2", 0); err != nil || len(got) != 0 {
		t.Errorf("reclaim after ack: got %v, %v; want nothing", got, err)
	}
	if err := s.DeleteRun(ctx, "run-1"); err != nil {
		t.Fatal(err)
	}
	_, err = s.LoadRun(ctx, "run-1")
	wantErr(t, "load deleted run", err, store.ErrRunNotFound)
}

// While a live process waits on the token, consumers leave its job alone;
// the waiter resumes the run and takes the job off the queue.
func TestResumeQueueDefersToLiveWaiter(t *testing.T) {
	e := newEnv(t)
	ctx := t.Context()
	s := e.store()
	ev := store.NewTokens(s, store.TokensOptions{Owner: "A"})
	runTokens(t, ev)
	token := agentrunner.NewToken()
	if err := s.Create(ctx, &approval.Request{Token: token, RunID: "run-1", Requests: requests("c1")}); err != nil {
		t.Fatal(err)
	}
	if err := ev.Watch(ctx, token); err != nil {
		t.Fatal(err)
	}
	q := e.otherProcess(t).ResumeQueue(store.ResumeQueueOptions{})
	if _, err := q.Read(ctx, "B", 0); err != nil { // creates the group before the job exists
		t.Fatal(err)
	}
	if _, err := e.otherProcess(t).Decide(ctx, token, approve("c1", "UA")); err != nil {
		t.Fatal(err)
	}
	if got, err := q.Read(ctx, "B", 0); err != nil || len(got) != 0 {
		t.Fatalf("read while A is alive: got %v, %v; want nothing", got, err)
	}
	res, err := approval.RunTokens{TokenStore: ev}.Wait(ctx, token)
	if err != nil || !res.Approvals["c1"].Approved {
		t.Fatalf("A's wait: got %+v, %v", res, err)
	}
	// A resumes the run: the job stays queued until A finished it (so
	// that, were A to die now, another process would take the run over),
	// but nobody else is handed it while A lives.
	if got, err := q.Read(ctx, "B", 0); err != nil || len(got) != 0 {
		t.Errorf("read while A resumes: got %v, %v; want nothing", got, err)
	}
	if got, err := q.Reclaim(ctx, "B", 0); err != nil || len(got) != 0 {
		t.Errorf("reclaim while A resumes: got %v, %v; want nothing", got, err)
	}
	if err := s.FinishResume(ctx, token); err != nil {
		t.Fatal(err)
	}
	if n := e.rdb.XLen(ctx, e.prefix+"resume").Val(); n != 0 {
		t.Errorf("resume stream after A resumed: %d entries, want 0", n)
	}
	if got, err := q.Reclaim(ctx, "B", 0); err != nil || len(got) != 0 {
		t.Errorf("reclaim after A resumed: got %v, %v; want nothing", got, err)
	}
	if ok, _ := s.ClaimResume(ctx, token, "B", 0); ok {
		t.Error("B claimed a run A resumed")
	}
}

// A waiter that loses the claim to a consumer must not continue the run.
func TestWaitLosesClaim(t *testing.T) {
	e := newEnv(t)
	s := e.store()
	ev := store.NewTokens(s, store.TokensOptions{Owner: "A"})
	runTokens(t, ev)
	a := e.create(t, s, requests("c1"), 1)
	if _, err := s.Decide(t.Context(), a.Token, approve("c1", "UA")); err != nil {
		t.Fatal(err)
	}
	if ok, err := s.ClaimResume(t.Context(), a.Token, "consumer", 0); !ok || err != nil {
		t.Fatalf("claim: %v, %v", ok, err)
	}
	_, err := approval.RunTokens{TokenStore: ev}.Wait(t.Context(), a.Token)
	wantErr(t, "wait after another claimed", err, store.ErrClaimed)
}

// storeAsker is the agentrunner.Asker of TestAskHandlerEndToEnd: what
// approval.Service does for a run, reduced to the store's part.
type storeAsker struct {
	s      *store.Store
	tokens chan<- string
}

func (a storeAsker) Ask(ctx context.Context, rc *agentrunner.RunContext, ask agentrunner.Asking) error {
	r := &approval.Request{Token: ask.Token, RunID: rc.RunID, Origin: approval.Origin{User: "U0REQ"}, Requests: ask.Requests, ExpiresAt: ask.Deadline}
	if err := a.s.Create(ctx, r); err != nil {
		return err
	}
	if ask.Recorded != nil {
		if err := ask.Recorded(ctx); err != nil {
			return err
		}
	}
	if err := a.s.SaveRun(ctx, store.RunState{RunID: rc.RunID, Token: ask.Token, Messages: rc.Messages, Pending: ask.Requests}); err != nil {
		return err
	}
	a.tokens <- ask.Token
	return nil
}

func (a storeAsker) Fail(ctx context.Context, token string, nd *agentrunner.NoDecisionError) error {
	_, err := a.s.Fail(ctx, token, "", nd.Reason)
	return err
}

// The whole path with agentrunner: a run asks through AskHandler, its
// Asker and Tokens, the approval comes from another process, and the tool runs once.
// Then the durable path: the process dies while waiting, and a resume
// consumer elsewhere continues the run from Redis, running the tool once.
func TestAskHandlerEndToEnd(t *testing.T) {
	e := newEnv(t)
	var ran atomic.Int32
	tool := agentrunner.NewTool("delete_customer", "Delete a customer.",
		func(_ context.Context, _ *agentrunner.ToolContext, a struct {
			CustomerID string `json:"customer_id"`
		}) (any, error) {
			ran.Add(1)
			return "deleted " + a.CustomerID, nil
		}, agentrunner.RequiresApproval())

	// newRunner builds a process: its store, Tokens and runner. Its Asker
	// stores the record and run state and reports each token.
	newRunner := func(t *testing.T, s *store.Store, ev *store.Tokens, tokens chan<- string) *agentrunner.Runner {
		r, err := agentrunner.NewRunner(agentrunner.TestModel{}, []*agentrunner.Tool{tool},
			agentrunner.WithHandlers(&agentrunner.AskHandler{Asker: storeAsker{s, tokens}, Waiter: approval.RunTokens{TokenStore: ev}}))
		if err != nil {
			t.Fatal(err)
		}
		return r
	}

	t.Run("approved from another process", func(t *testing.T) {
		ran.Store(0)
		s := e.store()
		ev := store.NewTokens(s, store.TokensOptions{})
		runTokens(t, ev)
		tokens := make(chan string, 1)
		r := newRunner(t, s, ev, tokens)
		done := make(chan *agentrunner.RunResult, 1)
		go func() {
			res, err := r.Run(t.Context(), agentrunner.RunInput{Prompt: "delete customer a"})
			if err != nil {
				t.Errorf("run: %v", err)
			}
			done <- res
		}()
		token := <-tokens
		if _, err := e.otherProcess(t).Decide(t.Context(), token, approve("pyd_ai_tool_call_id__delete_customer", "U0BOSS")); err != nil {
			t.Fatal(err)
		}
		res := <-done
		if res == nil || res.Output != `{"delete_customer":"deleted a"}` || ran.Load() != 1 {
			t.Errorf("run: got %+v, tool ran %d times; want deleted a, once", res, ran.Load())
		}
		// The run ended here: its job leaves the queue only now.
		if err := s.FinishResume(t.Context(), token); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("resumed from the queue after the process died", func(t *testing.T) {
		ran.Store(0)
		sA := e.store()
		evA := store.NewTokens(sA, store.TokensOptions{Owner: "A"})
		ctxA, killA := context.WithCancel(t.Context())
		runDone := make(chan error, 1)
		go func() { runDone <- evA.Run(ctxA) }()
		<-evA.Ready()
		tokens := make(chan string, 1)
		rA := newRunner(t, sA, evA, tokens)
		failed := make(chan error, 1)
		go func() {
			_, err := rA.Run(ctxA, agentrunner.RunInput{Prompt: "delete customer a"})
			failed <- err
		}()
		token := <-tokens
		untilWaiting(t, evA, 1)
		killA() // process A goes away while its run waits
		if err := <-failed; !errors.Is(err, context.Canceled) {
			t.Fatalf("A's run: got %v, want context.Canceled", err)
		}
		<-runDone

		sB := e.otherProcess(t)
		if _, err := sB.Decide(t.Context(), token, approve("pyd_ai_tool_call_id__delete_customer", "U0BOSS")); err != nil {
			t.Fatal(err)
		}
		// Process C consumes the queue and resumes the run.
		sC := e.otherProcess(t)
		q := sC.ResumeQueue(store.ResumeQueueOptions{})
		jobs, err := q.Read(t.Context(), "C", 0)
		if err != nil || len(jobs) != 1 {
			t.Fatalf("read: got %v, %v; want one job", jobs, err)
		}
		j := jobs[0]
		ok, err := sC.ClaimResume(t.Context(), j.Token, "C", 0)
		if err != nil || !ok {
			t.Fatalf("claim: %v, %v", ok, err)
		}
		rs, err := sC.LoadRun(t.Context(), j.RunID)
		if err != nil {
			t.Fatal(err)
		}
		a, err := sC.Get(t.Context(), j.Token)
		if err != nil {
			t.Fatal(err)
		}
		rC, err := agentrunner.NewRunner(agentrunner.TestModel{}, []*agentrunner.Tool{tool})
		if err != nil {
			t.Fatal(err)
		}
		res, err := rC.Run(t.Context(), agentrunner.RunInput{RunID: rs.RunID, History: rs.Messages, Results: a.Results(nil)})
		if err != nil {
			t.Fatalf("resume: %v", err)
		}
		if res.Output != `{"delete_customer":"deleted a"}` || ran.Load() != 1 {
			t.Errorf("resumed run: got %q, tool ran %d times; want deleted a, once", res.Output, ran.Load())
		}
		if err := q.Ack(t.Context(), j.ID); err != nil {
			t.Fatal(err)
		}
		if err := sC.DeleteRun(t.Context(), j.RunID); err != nil {
			t.Fatal(err)
		}
	})
}

// failingAsker records the ask and then fails, as an ask whose card
// could not be recorded does.
type failingAsker struct{ storeAsker }

func (a failingAsker) Ask(ctx context.Context, rc *agentrunner.RunContext, ask agentrunner.Asking) error {
	if err := a.storeAsker.Ask(ctx, rc, ask); err != nil {
		return err
	}
	return errors.New("record the card: connection reset")
}

// An ask that fails after its request was recorded: the handler keeps the
// run in this process (it ends here with the error) and the Asker fails
// the token, so nothing is left on the resume queue for anyone else, and
// no direct resume takes the run either.
func TestFailedAskKeepsRunHere(t *testing.T) {
	e := newEnv(t)
	s := e.store()
	ev := store.NewTokens(s, store.TokensOptions{Owner: "A"})
	runTokens(t, ev)
	tokens := make(chan string, 1)
	h := &agentrunner.AskHandler{Asker: failingAsker{storeAsker{s, tokens}}, Waiter: approval.RunTokens{TokenStore: ev}}
	_, err := h.HandleDeferred(t.Context(), &agentrunner.RunContext{RunID: "run-1"}, requests("c1"))
	if err == nil {
		t.Fatal("handle: the failed ask returned no error")
	}
	token := <-tokens
	if a, err := s.Get(t.Context(), token); err != nil || a.State != approval.StateFailed {
		t.Fatalf("token after the failed ask: %+v, %v; want failed", a, err)
	}
	q := e.otherProcess(t).ResumeQueue(store.ResumeQueueOptions{})
	if got, err := q.Read(t.Context(), "B", 0); err != nil || len(got) != 0 {
		t.Errorf("read while A runs: got %v, %v; want nothing", got, err)
	}
	if ok, _ := s.ClaimResume(t.Context(), token, "B", 0); ok {
		t.Error("another process claimed a run whose ask failed here")
	}
	if ok, _ := s.ClaimDirect(t.Context(), token, "A/direct"); ok {
		t.Error("a direct resume claimed a run whose ask failed here")
	}
}

// A run whose wait ended (the process is shutting down) is left to the
// queue, even if the token is then resolved through this process.
func TestCancelledWaitLeavesRunToQueue(t *testing.T) {
	e := newEnv(t)
	s := e.store()
	ev := store.NewTokens(s, store.TokensOptions{Owner: "A"})
	runTokens(t, ev)
	token := agentrunner.NewToken()
	if err := s.Create(t.Context(), &approval.Request{Token: token, RunID: "run-1", Requests: requests("c1")}); err != nil {
		t.Fatal(err)
	}
	if err := ev.Watch(t.Context(), token); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	waited := waitAsync(ctx, ev, token)
	untilWaiting(t, ev, 1)
	cancel()
	wantErr(t, "wait", (<-waited).err, context.Canceled)

	if _, err := s.Decide(t.Context(), token, approve("c1", "U0ALICE")); err != nil {
		t.Fatal(err)
	}
	jobs, err := e.otherProcess(t).ResumeQueue(store.ResumeQueueOptions{}).Read(t.Context(), "B", 0)
	if err != nil || len(jobs) != 1 {
		t.Fatalf("read: got %v, %v; want the run's job", jobs, err)
	}
	if ok, err := s.ClaimResume(t.Context(), token, "B", 0); !ok || err != nil {
		t.Errorf("consumer claim: got %v, %v; want true", ok, err)
	}
}

func TestDedupe(t *testing.T) {
	e := newEnv(t)
	stores := []*store.Store{e.store(), e.otherProcess(t)}
	var firsts atomic.Int32
	var wg sync.WaitGroup
	for i := range 50 {
		wg.Go(func() {
			first, err := stores[i%2].Dedupe(t.Context(), "slack:Ev123", time.Minute)
			if err != nil {
				t.Error(err)
			}
			if first {
				firsts.Add(1)
			}
		})
	}
	wg.Wait()
	if firsts.Load() != 1 {
		t.Errorf("got %d first occurrences, want 1", firsts.Load())
	}
	if first, err := stores[0].Dedupe(t.Context(), "slack:Ev124", 0); !first || err != nil {
		t.Errorf("another key: got %v, %v; want first", first, err)
	}
	if ttl := e.rdb.PTTL(t.Context(), e.prefix+"dedupe:slack:Ev123").Val(); ttl <= 0 || ttl > time.Minute {
		t.Errorf("dedupe TTL: got %v, want within (0, 1m]", ttl)
	}
}
