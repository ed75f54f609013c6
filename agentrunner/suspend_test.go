package agentrunner_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/slackapprove/slackbot/agentrunner"
)

// suspendingTokens is MemoryTokens that counts waits: a suspended run
// must never wait.
type suspendingTokens struct {
	*agentrunner.MemoryTokens
	waits atomic.Int32
}

func (s *suspendingTokens) Wait(ctx context.Context, token string) (*agentrunner.DeferredToolResults, error) {
	s.waits.Add(1)
	return s.MemoryTokens.Wait(ctx, token)
}

func deleteTool(ran *atomic.Int32, name string) *agentrunner.Tool {
	return agentrunner.NewTool(name, "Delete a customer.",
		func(_ context.Context, _ *agentrunner.ToolContext, a customer) (any, error) {
			ran.Add(1)
			return "deleted " + a.CustomerID, nil
		}, agentrunner.RequiresApproval())
}

// A run whose calls were handed out returns at once, suspended on the
// token, without waiting; the answer resumes it from its history.
func TestAskHandlerSuspends(t *testing.T) {
	ctx := t.Context()
	var ran atomic.Int32
	tokens := &suspendingTokens{MemoryTokens: agentrunner.NewMemoryTokens()}
	asked := 0
	ask := &agentrunner.AskHandler{Tokens: tokens, Suspend: true, Timeout: time.Minute,
		Ask: func(context.Context, *agentrunner.RunContext, agentrunner.DeferredToolRequests, string) (*agentrunner.DeferredToolResults, error) {
			asked++
			return nil, nil
		}}
	r, err := agentrunner.NewRunner(agentrunner.TestModel{}, []*agentrunner.Tool{deleteTool(&ran, "delete_customer")}, agentrunner.WithHandlers(ask))
	if err != nil {
		t.Fatal(err)
	}
	res, err := r.Run(ctx, agentrunner.RunInput{Prompt: "Delete customer a."})
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != agentrunner.StatusSuspended || res.Suspended == nil || res.Pending == nil {
		t.Fatalf("got status %s, suspended %v, pending %v; want suspended with both", res.Status, res.Suspended, res.Pending)
	}
	if asked != 1 || tokens.waits.Load() != 0 || ran.Load() != 0 {
		t.Fatalf("asked %d, waited %d, tool ran %d; want 1, 0, 0", asked, tokens.waits.Load(), ran.Load())
	}
	if d := time.Until(res.Suspended.Deadline); d <= 0 || d > time.Minute {
		t.Errorf("deadline in %s, want within the handler's minute", d)
	}
	if ids := res.Pending.IDs(); len(ids) != 1 {
		t.Fatalf("pending %v, want the one call", ids)
	}

	answer := agentrunner.NewDeferredToolResults()
	answer.Approvals[res.Pending.IDs()[0]] = agentrunner.Approve()
	res, err = r.Run(ctx, agentrunner.RunInput{RunID: res.RunID, History: res.Messages, Pending: res.Pending, Results: answer})
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != agentrunner.StatusComplete || ran.Load() != 1 || res.Suspended != nil {
		t.Fatalf("after the answer: status %s, tool ran %d times, suspended %v; want complete, 1, nil", res.Status, ran.Load(), res.Suspended)
	}
}

// When an earlier handler decided calls of the same round, suspending
// would lose those decisions: the run waits in place instead.
func TestAskHandlerWaitsWhenTheRoundHasDecisions(t *testing.T) {
	var ran atomic.Int32
	tokens := &suspendingTokens{MemoryTokens: agentrunner.NewMemoryTokens()}
	approveA := agentrunner.HandlerFunc(func(_ context.Context, _ *agentrunner.RunContext, req agentrunner.DeferredToolRequests) (*agentrunner.DeferredToolResults, error) {
		res := agentrunner.NewDeferredToolResults()
		for _, c := range req.Approvals {
			if c.ToolName == "delete_a" {
				res.Approvals[c.ToolCallID] = agentrunner.Approve()
			}
		}
		return res, nil
	})
	ask := &agentrunner.AskHandler{Tokens: tokens, Suspend: true,
		Ask: func(_ context.Context, rc *agentrunner.RunContext, req agentrunner.DeferredToolRequests, token string) (*agentrunner.DeferredToolResults, error) {
			if rc.Decided.Len() != 1 {
				t.Errorf("the ask sees %d earlier decisions, want 1", rc.Decided.Len())
			}
			go func() {
				ans := agentrunner.NewDeferredToolResults()
				for _, id := range req.IDs() {
					ans.Approvals[id] = agentrunner.Approve()
				}
				if err := tokens.Resolve(context.Background(), token, ans); err != nil {
					t.Error(err)
				}
			}()
			return nil, nil
		}}
	r, err := agentrunner.NewRunner(agentrunner.TestModel{}, []*agentrunner.Tool{deleteTool(&ran, "delete_a"), deleteTool(&ran, "delete_b")},
		agentrunner.WithHandlers(approveA, ask))
	if err != nil {
		t.Fatal(err)
	}
	res, err := r.Run(t.Context(), agentrunner.RunInput{Prompt: "Delete a and b."})
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != agentrunner.StatusComplete || ran.Load() != 2 || tokens.waits.Load() != 1 {
		t.Fatalf("status %s, tools ran %d, waits %d; want complete, 2, 1",
			res.Status, ran.Load(), tokens.waits.Load())
	}
}

// Suspend from a handler of one's own: Run returns the suspension, not
// an error.
func TestSuspendFromAHandler(t *testing.T) {
	var ran atomic.Int32
	h := agentrunner.HandlerFunc(func(_ context.Context, rc *agentrunner.RunContext, req agentrunner.DeferredToolRequests) (*agentrunner.DeferredToolResults, error) {
		return nil, agentrunner.Suspend(rc, req, "tok", time.Time{})
	})
	r, err := agentrunner.NewRunner(agentrunner.TestModel{}, []*agentrunner.Tool{deleteTool(&ran, "delete_customer")}, agentrunner.WithHandlers(h))
	if err != nil {
		t.Fatal(err)
	}
	res, err := r.Run(t.Context(), agentrunner.RunInput{Prompt: "Delete customer a."})
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != agentrunner.StatusSuspended || res.Suspended.Token != "tok" || len(res.Messages) == 0 {
		t.Fatalf("got %+v, want suspended on tok with the history", res)
	}
	if !errors.Is(agentrunner.Suspend(nil, agentrunner.DeferredToolRequests{}, "t", time.Time{}), agentrunner.ErrSuspended) {
		t.Error("Suspend's error does not match ErrSuspended")
	}
}
