package agentrunner_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/slackapprove/slackbot/agentrunner"
)

// fakeClock is a clock tests move by hand; its timers fire in Advance.
type fakeClock struct {
	mu     sync.Mutex
	now    time.Time
	timers []*fakeTimer
}

type fakeTimer struct {
	at      time.Time
	f       func()
	stopped bool
}

func newFakeClock() *fakeClock {
	return &fakeClock{now: time.Date(2025, 6, 1, 10, 0, 0, 0, time.UTC)}
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) AfterFunc(d time.Duration, f func()) func() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := &fakeTimer{at: c.now.Add(d), f: f}
	c.timers = append(c.timers, t)
	return func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		was := !t.stopped
		t.stopped = true
		return was
	}
}

// Advance moves the clock and runs the timers that came due, outside the
// clock's lock, as real timers run on their own goroutines.
func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	var due []*fakeTimer
	kept := c.timers[:0]
	for _, t := range c.timers {
		switch {
		case t.stopped:
		case !t.at.After(c.now):
			t.stopped = true
			due = append(due, t)
		default:
			kept = append(kept, t)
		}
	}
	c.timers = kept
	c.mu.Unlock()
	for _, t := range due {
		t.f()
	}
}

// Set moves the clock without running any timer, as when a timer is late.
func (c *fakeClock) Set(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

func newTokens(c *fakeClock) *agentrunner.MemoryTokens {
	return &agentrunner.MemoryTokens{Now: c.Now, AfterFunc: c.AfterFunc, Retain: time.Hour}
}

func cancelled() *agentrunner.NoDecisionError {
	return &agentrunner.NoDecisionError{Reason: agentrunner.ReasonCancelled, Cause: agentrunner.ErrTokenCancelled}
}

// Answering a token that is not open returns an error that says why.
func TestMemoryTokensLateAnswers(t *testing.T) {
	ctx := t.Context()
	tests := []struct {
		name    string
		end     func(ev *agentrunner.MemoryTokens, c *fakeClock, token string)
		wantErr error
	}{
		{"unknown", func(*agentrunner.MemoryTokens, *fakeClock, string) {}, agentrunner.ErrTokenNotFound},
		{"resolved", func(ev *agentrunner.MemoryTokens, _ *fakeClock, tok string) {
			mustOK(t, ev.Resolve(ctx, tok, nil))
		}, agentrunner.ErrTokenResolved},
		{"expired by timer", func(_ *agentrunner.MemoryTokens, c *fakeClock, _ string) {
			c.Advance(time.Minute)
		}, agentrunner.ErrTokenExpired},
		{"expired, timer late", func(_ *agentrunner.MemoryTokens, c *fakeClock, _ string) {
			c.Set(time.Minute)
		}, agentrunner.ErrTokenExpired},
		{"cancelled", func(ev *agentrunner.MemoryTokens, _ *fakeClock, tok string) {
			mustOK(t, ev.Fail(ctx, tok, cancelled()))
		}, agentrunner.ErrTokenCancelled},
		{"failed", func(ev *agentrunner.MemoryTokens, _ *fakeClock, tok string) {
			mustOK(t, ev.Fail(ctx, tok, &agentrunner.NoDecisionError{Reason: "slack is down"}))
		}, agentrunner.ErrTokenFailed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := newFakeClock()
			ev := newTokens(c)
			tok := "tok-" + tt.name
			if tt.wantErr != agentrunner.ErrTokenNotFound {
				mustOK(t, ev.Open(ctx, tok, c.Now().Add(time.Minute)))
			}
			tt.end(ev, c, tok)
			if err := ev.Resolve(ctx, tok, agentrunner.NewDeferredToolResults()); !errors.Is(err, tt.wantErr) {
				t.Errorf("Resolve: got %v, want %v", err, tt.wantErr)
			}
			if err := ev.Fail(ctx, tok, nil); !errors.Is(err, tt.wantErr) {
				t.Errorf("Fail: got %v, want %v", err, tt.wantErr)
			}
		})
	}
}

func mustOK(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func TestMemoryTokensWait(t *testing.T) {
	ctx := t.Context()
	c := newFakeClock()
	ev := newTokens(c)

	// An answer that arrives before Wait is kept.
	mustOK(t, ev.Open(ctx, "early", time.Time{}))
	answer := results(map[string]agentrunner.ApprovalResult{"x": agentrunner.Approve()}, nil)
	mustOK(t, ev.Resolve(ctx, "early", answer))
	got, err := ev.Wait(ctx, "early")
	if err != nil || !got.Approvals["x"].Approved {
		t.Errorf("Wait after Resolve: got %+v, %v", got, err)
	}

	// Expiry, failure and cancellation end the wait with a NoDecisionError.
	for _, tt := range []struct {
		token, reason string
		end           func()
		cause         error
	}{
		{"exp", agentrunner.ReasonExpired, func() { c.Advance(time.Minute) }, agentrunner.ErrTokenExpired},
		{"fail", "slack is down", func() { mustOK(t, ev.Fail(ctx, "fail", &agentrunner.NoDecisionError{Reason: "slack is down"})) }, agentrunner.ErrTokenFailed},
		{"cancel", agentrunner.ReasonCancelled, func() { mustOK(t, ev.Fail(ctx, "cancel", cancelled())) }, agentrunner.ErrTokenCancelled},
	} {
		mustOK(t, ev.Open(ctx, tt.token, c.Now().Add(time.Minute)))
		done := make(chan error, 1)
		go func() {
			_, err := ev.Wait(ctx, tt.token)
			done <- err
		}()
		tt.end()
		err := <-done
		var nd *agentrunner.NoDecisionError
		if !errors.As(err, &nd) || nd.Reason != tt.reason || !errors.Is(err, tt.cause) {
			t.Errorf("%s: got %v, want a NoDecisionError %q wrapping %v", tt.token, err, tt.reason, tt.cause)
		}
		if got, want := err.Error(), agentrunner.NoDecisionPrefix+tt.reason; got != want {
			t.Errorf("%s: got message %q, want %q", tt.token, got, want)
		}
	}

	// ctx ending returns ctx's error and leaves the token open.
	mustOK(t, ev.Open(ctx, "open", time.Time{}))
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := ev.Wait(cctx, "open"); !errors.Is(err, context.Canceled) {
		t.Errorf("Wait with cancelled ctx: got %v, want context.Canceled", err)
	}
	if err := ev.Resolve(ctx, "open", nil); err != nil {
		t.Errorf("Resolve after the waiter left: got %v, want the token still open", err)
	}

	if _, err := ev.Wait(ctx, "never"); !errors.Is(err, agentrunner.ErrTokenNotFound) {
		t.Errorf("Wait on unknown token: got %v, want ErrTokenNotFound", err)
	}
	if err := ev.Open(ctx, "open", time.Time{}); !errors.Is(err, agentrunner.ErrTokenOpen) {
		t.Errorf("Open twice: got %v, want ErrTokenOpen", err)
	}
	// A deadline already past expires the token at once.
	mustOK(t, ev.Open(ctx, "past", c.Now().Add(-time.Second)))
	if _, err := ev.Wait(ctx, "past"); !errors.Is(err, agentrunner.ErrTokenExpired) {
		t.Errorf("Wait on a token opened past its deadline: got %v, want ErrTokenExpired", err)
	}
}

// Finished tokens are remembered for Retain, then forgotten.
func TestMemoryTokensForget(t *testing.T) {
	ctx := t.Context()
	c := newFakeClock()
	ev := newTokens(c)
	ev.Retain = time.Minute
	mustOK(t, ev.Open(ctx, "old", time.Time{}))
	mustOK(t, ev.Resolve(ctx, "old", nil))
	c.Advance(2 * time.Minute)
	mustOK(t, ev.Open(ctx, "recent", time.Time{}))
	mustOK(t, ev.Resolve(ctx, "recent", nil))
	mustOK(t, ev.Open(ctx, "pending", time.Time{}))
	c.Advance(30 * time.Second)
	mustOK(t, ev.Open(ctx, "trigger", time.Time{}))

	for token, want := range map[string]error{
		"old":     agentrunner.ErrTokenNotFound,
		"recent":  agentrunner.ErrTokenResolved,
		"pending": nil,
	} {
		if err := ev.Resolve(ctx, token, nil); !errors.Is(err, want) {
			t.Errorf("Resolve(%s): got %v, want %v", token, err, want)
		}
	}
	// A forgotten token may be opened again.
	mustOK(t, ev.Open(ctx, "old", time.Time{}))
}

func TestNewToken(t *testing.T) {
	seen := map[string]bool{}
	for range 100 {
		tok := agentrunner.NewToken()
		if len(tok) != 43 || seen[tok] {
			t.Fatalf("token %q: want 43 characters, never repeated", tok)
		}
		seen[tok] = true
	}
}

// askRig is an AskHandler whose ask hands the token to the test.
type askRig struct {
	clock  *fakeClock
	tokens *agentrunner.MemoryTokens
	asked  chan askCall
}

type askCall struct {
	token    string
	rc       *agentrunner.RunContext
	requests agentrunner.DeferredToolRequests
}

func newAskRig(answer func(agentrunner.DeferredToolRequests) *agentrunner.DeferredToolResults) (*askRig, *agentrunner.AskHandler) {
	c := newFakeClock()
	rig := &askRig{clock: c, tokens: newTokens(c), asked: make(chan askCall, 16)}
	h := &agentrunner.AskHandler{
		Tokens:  rig.tokens,
		Timeout: 10 * time.Minute,
		Now:     c.Now,
		Ask: func(_ context.Context, rc *agentrunner.RunContext, req agentrunner.DeferredToolRequests, token string) (*agentrunner.DeferredToolResults, error) {
			rig.asked <- askCall{token, rc, req}
			if answer != nil {
				return answer(req), nil
			}
			return nil, nil
		},
	}
	return rig, h
}

type runOutcome struct {
	res *agentrunner.RunResult
	err error
}

func runAsync(ctx context.Context, r *agentrunner.Runner, in agentrunner.RunInput) <-chan runOutcome {
	out := make(chan runOutcome, 1)
	go func() {
		res, err := r.Run(ctx, in)
		out <- runOutcome{res, err}
	}()
	return out
}

// When the wait ends without an answer, approvals are denied and external
// calls fail with the reason, and the run goes on.
func TestAskHandlerNoDecision(t *testing.T) {
	tests := []struct {
		name   string
		end    func(rig *askRig, token string)
		reason string
	}{
		{"timeout", func(rig *askRig, _ string) { rig.clock.Advance(10 * time.Minute) }, agentrunner.ReasonExpired},
		{"failure", func(rig *askRig, tok string) {
			mustOK(t, rig.tokens.Fail(t.Context(), tok, &agentrunner.NoDecisionError{Reason: "Slack rejected the message"}))
		}, "Slack rejected the message"},
		{"cancelled", func(rig *askRig, tok string) { mustOK(t, rig.tokens.Fail(t.Context(), tok, cancelled())) }, agentrunner.ReasonCancelled},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rig, h := newAskRig(nil)
			var ran atomic.Int32
			tools := append(jobTools(), deleteCustomerTool(&ran))
			r := newRunner(t, agentrunner.TestModel{CallTools: []string{"delete_customer", "run_job"}}, tools, agentrunner.WithHandlers(h))
			done := runAsync(t.Context(), r, agentrunner.RunInput{Prompt: "go"})
			call := <-rig.asked
			tt.end(rig, call.token)
			out := <-done
			if out.err != nil {
				t.Fatal(out.err)
			}
			msg := agentrunner.NoDecisionPrefix + tt.reason
			want, _ := json.Marshal(map[string]string{"delete_customer": msg, "run_job": msg})
			if out.res.Output != string(want) {
				t.Errorf("output: got %s, want %s", out.res.Output, want)
			}
			returns := toolReturns(out.res.Messages)
			if got := returns["pyd_ai_tool_call_id__delete_customer"].Outcome; got != agentrunner.OutcomeDenied {
				t.Errorf("approval outcome: got %q, want denied", got)
			}
			if got := returns["pyd_ai_tool_call_id__run_job"].Outcome; got != agentrunner.OutcomeFailed {
				t.Errorf("external call outcome: got %q, want failed", got)
			}
			if ran.Load() != 0 {
				t.Errorf("tool ran %d times, want 0", ran.Load())
			}
		})
	}
}

// An answer given in place and one resolved through the tokens look the
// same to the run.
func TestAskHandlerInPlaceEqualsResolved(t *testing.T) {
	answer := func(req agentrunner.DeferredToolRequests) *agentrunner.DeferredToolResults {
		res := agentrunner.NewDeferredToolResults()
		// The string form of override_args, as a client might send it.
		res.Approvals[req.Approvals[0].ToolCallID] = agentrunner.ApproveWith(json.RawMessage(`"{\"customer_id\": \"b\"}"`))
		res.AnsweredBy[req.Approvals[0].ToolCallID] = "U0ALICE"
		return res
	}
	var ran atomic.Int32

	inPlaceRig, inPlace := newAskRig(answer)
	r1 := newRunner(t, agentrunner.TestModel{}, []*agentrunner.Tool{deleteCustomerTool(&ran)}, agentrunner.WithHandlers(inPlace))
	res1, err := r1.Run(t.Context(), agentrunner.RunInput{Prompt: "go"})
	if err != nil {
		t.Fatal(err)
	}
	call := <-inPlaceRig.asked
	if err := inPlaceRig.tokens.Resolve(t.Context(), call.token, nil); !errors.Is(err, agentrunner.ErrTokenResolved) {
		t.Errorf("late answer to an in-place token: got %v, want ErrTokenResolved", err)
	}

	rig, waiting := newAskRig(nil)
	r2 := newRunner(t, agentrunner.TestModel{}, []*agentrunner.Tool{deleteCustomerTool(&ran)}, agentrunner.WithHandlers(waiting))
	done := runAsync(t.Context(), r2, agentrunner.RunInput{Prompt: "go"})
	call = <-rig.asked
	mustOK(t, rig.tokens.Resolve(t.Context(), call.token, answer(call.requests)))
	out := <-done
	if out.err != nil {
		t.Fatal(out.err)
	}
	if diff := cmp.Diff(res1.Applied, out.res.Applied); diff != "" {
		t.Errorf("applied answers differ (-in place +resolved):\n%s", diff)
	}
	if res1.Output != `{"delete_customer":"deleted b"}` || out.res.Output != res1.Output {
		t.Errorf("outputs: in place %s, resolved %s, want both deleted b", res1.Output, out.res.Output)
	}
}

// Shutdown during a wait ends the run with ctx's error and denies nothing:
// the token stays open and the answer resumes the run in another runner.
func TestAskHandlerShutdownThenDurableResume(t *testing.T) {
	rig, h := newAskRig(nil)
	var ran atomic.Int32
	r := newRunner(t, agentrunner.TestModel{}, []*agentrunner.Tool{deleteCustomerTool(&ran)}, agentrunner.WithHandlers(h))
	ctx, cancel := context.WithCancel(t.Context())
	done := runAsync(ctx, r, agentrunner.RunInput{Prompt: "go", RunID: "run-1"})
	call := <-rig.asked
	cancel()
	out := <-done
	if !errors.Is(out.err, context.Canceled) {
		t.Fatalf("got %v, want context.Canceled", out.err)
	}
	if ran.Load() != 0 {
		t.Fatalf("tool ran %d times on shutdown, want 0", ran.Load())
	}

	// What a store would have saved when ask ran, through JSON.
	saved, err := json.Marshal(agentrunner.PendingRun{RunID: call.rc.RunID, Messages: call.rc.Messages, Requests: call.requests})
	if err != nil {
		t.Fatal(err)
	}
	// The click arrives after the restart; the token is still open.
	answer := results(map[string]agentrunner.ApprovalResult{call.requests.IDs()[0]: agentrunner.Approve()}, nil)
	mustOK(t, rig.tokens.Resolve(t.Context(), call.token, answer))

	var state agentrunner.PendingRun
	mustOK(t, json.Unmarshal(saved, &state))
	other := newRunner(t, agentrunner.TestModel{}, []*agentrunner.Tool{deleteCustomerTool(&ran)})
	got, err := rig.tokens.Wait(t.Context(), call.token)
	if err != nil {
		t.Fatal(err)
	}
	res, err := state.Resume(t.Context(), other, got)
	if err != nil {
		t.Fatal(err)
	}
	if res.Output != `{"delete_customer":"deleted a"}` || res.RunID != "run-1" || ran.Load() != 1 {
		t.Errorf("resumed: got output %s run %s ran %d, want deleted a, run-1, 1", res.Output, res.RunID, ran.Load())
	}
}

// An ask that fails ends the run with its error and fails the token, so a
// late click is told so.
func TestAskHandlerAskFails(t *testing.T) {
	ev := agentrunner.NewMemoryTokens()
	boom := errors.New("channel not found")
	var token string
	h := &agentrunner.AskHandler{Tokens: ev, NewToken: func() string { return "tok-1" },
		Ask: func(_ context.Context, _ *agentrunner.RunContext, _ agentrunner.DeferredToolRequests, tok string) (*agentrunner.DeferredToolResults, error) {
			token = tok
			return nil, boom
		}}
	var ran atomic.Int32
	r := newRunner(t, agentrunner.TestModel{}, []*agentrunner.Tool{deleteCustomerTool(&ran)}, agentrunner.WithHandlers(h))
	if _, err := r.Run(t.Context(), agentrunner.RunInput{Prompt: "go"}); !errors.Is(err, boom) {
		t.Fatalf("got %v, want the ask's error", err)
	}
	if token != "tok-1" {
		t.Errorf("token: got %q, want tok-1 from NewToken", token)
	}
	if err := ev.Resolve(t.Context(), token, nil); !errors.Is(err, agentrunner.ErrTokenFailed) {
		t.Errorf("late answer: got %v, want ErrTokenFailed", err)
	}
}

// 1,000 runs wait on their tokens at once; answers arrive from other
// goroutines in random order, and each run resumes with its own answer.
func TestThousandWaitingRuns(t *testing.T) {
	const n = 1000
	ctx := t.Context()
	ev := agentrunner.NewMemoryTokens()
	var (
		tokens sync.Map // run id → token
		asked  sync.WaitGroup
	)
	asked.Add(n)
	h := &agentrunner.AskHandler{Tokens: ev, Ask: func(_ context.Context, rc *agentrunner.RunContext, _ agentrunner.DeferredToolRequests, token string) (*agentrunner.DeferredToolResults, error) {
		tokens.Store(rc.RunID, token)
		asked.Done()
		return nil, nil
	}}
	r := newRunner(t, agentrunner.TestModel{}, approvalTools("transfer"), agentrunner.WithHandlers(h))

	outs := make([]<-chan runOutcome, n)
	for i := range n {
		outs[i] = runAsync(ctx, r, agentrunner.RunInput{Prompt: "go", RunID: fmt.Sprintf("run-%d", i)})
	}
	asked.Wait()

	order := rand.Perm(n)
	const resolvers = 8
	var wg sync.WaitGroup
	for w := range resolvers {
		wg.Go(func() {
			for _, i := range order[w*n/resolvers : (w+1)*n/resolvers] {
				tok, _ := tokens.Load(fmt.Sprintf("run-%d", i))
				if err := ev.Resolve(ctx, tok.(string), answerFor(i)); err != nil {
					t.Errorf("resolve run-%d: %v", i, err)
				}
			}
		})
	}
	wg.Wait()
	for i, out := range outs {
		o := <-out
		if o.err != nil {
			t.Errorf("run-%d: %v", i, o.err)
			continue
		}
		if got, want := o.res.Output, wantFor(i); got != want {
			t.Errorf("run-%d: got %s, want %s", i, got, want)
		}
	}
}

const transferID = "pyd_ai_tool_call_id__transfer"

func answerFor(i int) *agentrunner.DeferredToolResults {
	res := agentrunner.NewDeferredToolResults()
	if i%2 == 0 {
		res.Approvals[transferID] = agentrunner.ApproveWith(json.RawMessage(fmt.Sprintf(`{"name":"to-%d"}`, i)))
	} else {
		res.Approvals[transferID] = agentrunner.Deny(fmt.Sprintf("no for %d", i))
	}
	return res
}

func wantFor(i int) string {
	if i%2 == 0 {
		return fmt.Sprintf(`{"transfer":"transfer to-%d"}`, i)
	}
	return fmt.Sprintf(`{"transfer":"no for %d"}`, i)
}
