package agentrunner_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/slackapprove/slackbot/agentrunner"
)

func TestHandlerChainOrder(t *testing.T) {
	h1 := &chainHandler{name: "read-only-policy", decide: func(c agentrunner.ToolCallPart) (agentrunner.ApprovalResult, bool) {
		return agentrunner.Approve(), c.ToolName == "read"
	}}
	h2 := &chainHandler{name: "deny-policy", decide: func(c agentrunner.ToolCallPart) (agentrunner.ApprovalResult, bool) {
		return agentrunner.Deny("Not allowed."), c.ToolName == "drop"
	}}
	h3 := &chainHandler{name: "U0ALICE", decide: func(agentrunner.ToolCallPart) (agentrunner.ApprovalResult, bool) {
		return agentrunner.Approve(), true
	}}
	r := newRunner(t, agentrunner.TestModel{}, approvalTools("read", "drop", "write"), agentrunner.WithHandlers(h1, h2, h3))
	res, err := r.Run(t.Context(), agentrunner.RunInput{Prompt: "go", RunID: "run-7", Deps: "deps"})
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		h    *chainHandler
		want []string
	}{{h1, []string{"read", "drop", "write"}}, {h2, []string{"drop", "write"}}, {h3, []string{"write"}}} {
		if diff := cmp.Diff(tt.want, tt.h.seen); diff != "" {
			t.Errorf("%s saw (-want +got):\n%s", tt.h.name, diff)
		}
	}
	if got, want := res.Output, `{"drop":"Not allowed.","read":"read a","write":"write a"}`; got != want {
		t.Errorf("output: got %s, want %s", got, want)
	}
	wantBy := map[string]string{
		"pyd_ai_tool_call_id__read":  "read-only-policy",
		"pyd_ai_tool_call_id__drop":  "deny-policy",
		"pyd_ai_tool_call_id__write": "U0ALICE",
	}
	if diff := cmp.Diff(wantBy, res.Applied.AnsweredBy); diff != "" {
		t.Errorf("answered_by (-want +got):\n%s", diff)
	}
	rc := h1.rc
	if rc.RunID != "run-7" || rc.Deps != "deps" || rc.Runner != r {
		t.Errorf("run context: got id %q deps %v runner %p, want run-7, deps, %p", rc.RunID, rc.Deps, rc.Runner, r)
	}
	if last := rc.Messages[len(rc.Messages)-1]; last.Kind != agentrunner.KindResponse || len(last.ToolCalls()) != 3 {
		t.Errorf("run context history ends with %+v, want the response with the calls", last)
	}
}

func TestHandlerErrors(t *testing.T) {
	boom := errors.New("policy store down")
	tests := []struct {
		name    string
		handler agentrunner.HandlerFunc
		wantErr error
		naming  string
	}{
		{"unknown id", func(context.Context, *agentrunner.RunContext, agentrunner.DeferredToolRequests) (*agentrunner.DeferredToolResults, error) {
			return results(map[string]agentrunner.ApprovalResult{"nope": agentrunner.Approve()}, nil), nil
		}, agentrunner.ErrNotPending, "approval nope"},
		{"approval answered as a call", func(_ context.Context, _ *agentrunner.RunContext, req agentrunner.DeferredToolRequests) (*agentrunner.DeferredToolResults, error) {
			return results(nil, map[string]agentrunner.CallResult{req.IDs()[0]: {Value: mustArgs(`1`)}}), nil
		}, agentrunner.ErrNotPending, "call pyd_ai_tool_call_id__write"},
		{"handler fails", func(context.Context, *agentrunner.RunContext, agentrunner.DeferredToolRequests) (*agentrunner.DeferredToolResults, error) {
			return nil, boom
		}, boom, "policy store down"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var ran atomic.Int32
			tool := agentrunner.NewTool("write", "", func(context.Context, *agentrunner.ToolContext, struct{}) (any, error) {
				ran.Add(1)
				return nil, nil
			}, agentrunner.RequiresApproval())
			r := newRunner(t, agentrunner.TestModel{}, []*agentrunner.Tool{tool}, agentrunner.WithHandlers(tt.handler))
			_, err := r.Run(t.Context(), agentrunner.RunInput{Prompt: "go", AllowPending: true})
			if !errors.Is(err, tt.wantErr) || !strings.Contains(err.Error(), tt.naming) {
				t.Fatalf("got error %v, want %v naming %s", err, tt.wantErr, tt.naming)
			}
			if ran.Load() != 0 {
				t.Errorf("tool ran %d times, want 0", ran.Load())
			}
		})
	}
}

// A run that will fail because a call stays undecided runs none of the
// calls the handlers did decide.
func TestUndecidedRunsNothing(t *testing.T) {
	var ran atomic.Int32
	model := callsThen(
		agentrunner.ToolCall("delete_customer", mustArgs(`{"customer_id":"a"}`), "c1"),
		agentrunner.ToolCall("delete_customer", mustArgs(`{"customer_id":"b"}`), "c2"),
	)
	onlyC1 := agentrunner.HandlerFunc(func(context.Context, *agentrunner.RunContext, agentrunner.DeferredToolRequests) (*agentrunner.DeferredToolResults, error) {
		return results(map[string]agentrunner.ApprovalResult{"c1": agentrunner.Approve()}, nil), nil
	})
	r := newRunner(t, model, []*agentrunner.Tool{deleteCustomerTool(&ran)}, agentrunner.WithHandlers(onlyC1))
	_, err := r.Run(t.Context(), agentrunner.RunInput{Prompt: "go"})
	if !errors.Is(err, agentrunner.ErrUndecided) || !strings.Contains(err.Error(), "c2") {
		t.Fatalf("got %v, want ErrUndecided naming c2", err)
	}
	if ran.Load() != 0 {
		t.Errorf("tool ran %d times in a failed run, want 0", ran.Load())
	}
	res, err := r.Run(t.Context(), agentrunner.RunInput{Prompt: "go", AllowPending: true})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(res.Pending.IDs(), []string{"c2"}) || ran.Load() != 1 {
		t.Errorf("pending allowed: got pending %v and %d runs, want c2 pending and c1 run", res.Pending.IDs(), ran.Load())
	}
}

// What the handlers leave undecided fails a run that does not allow pending
// output, and ends one that does as pending.
func TestUndecided(t *testing.T) {
	abstain := agentrunner.HandlerFunc(func(context.Context, *agentrunner.RunContext, agentrunner.DeferredToolRequests) (*agentrunner.DeferredToolResults, error) {
		return nil, nil
	})
	for _, handlers := range [][]agentrunner.DeferredHandler{nil, {abstain}} {
		var ran atomic.Int32
		r := newRunner(t, agentrunner.TestModel{}, []*agentrunner.Tool{deleteCustomerTool(&ran)}, agentrunner.WithHandlers(handlers...))
		_, err := r.Run(t.Context(), agentrunner.RunInput{Prompt: "go"})
		if !errors.Is(err, agentrunner.ErrUndecided) || !strings.Contains(err.Error(), "pyd_ai_tool_call_id__delete_customer") {
			t.Errorf("%d handlers: got error %v, want ErrUndecided naming the call", len(handlers), err)
		}
		res, err := r.Run(t.Context(), agentrunner.RunInput{Prompt: "go", AllowPending: true})
		if err != nil || res.Status != agentrunner.StatusPending {
			t.Errorf("%d handlers, pending allowed: got %v, %v, want status pending", len(handlers), res, err)
		}
		if ran.Load() != 0 {
			t.Errorf("tool ran %d times, want 0", ran.Load())
		}
	}
}

// changingTools is a ToolSource whose tools the test swaps.
type changingTools struct {
	mu    sync.Mutex
	tools []*agentrunner.Tool
}

func (c *changingTools) Tools() []*agentrunner.Tool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.tools
}

func (c *changingTools) set(tools ...*agentrunner.Tool) {
	c.mu.Lock()
	c.tools = tools
	c.mu.Unlock()
}

// A tool source's tools are snapshotted per run: a tool added later is
// offered to later runs, and a static tool wins over a source's namesake.
func TestToolSource(t *testing.T) {
	mk := func(name, out string) *agentrunner.Tool {
		return agentrunner.NewTool(name, "", func(context.Context, *agentrunner.ToolContext, struct{}) (any, error) { return out, nil })
	}
	src := &changingTools{}
	r, err := agentrunner.NewRunner(agentrunner.TestModel{}, []*agentrunner.Tool{mk("static", "s")}, agentrunner.WithToolSource(src))
	if err != nil {
		t.Fatal(err)
	}
	res, err := r.Run(t.Context(), agentrunner.RunInput{Prompt: "go"})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := res.Output, `{"static":"s"}`; got != want {
		t.Errorf("before: got %s, want %s", got, want)
	}
	src.set(mk("mcp__search", "found"), mk("static", "shadowed"))
	res, err = r.Run(t.Context(), agentrunner.RunInput{Prompt: "go"})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := res.Output, `{"mcp__search":"found","static":"s"}`; got != want {
		t.Errorf("after: got %s, want %s", got, want)
	}
	if _, ok := r.Tool("mcp__search"); !ok {
		t.Error("Tool does not find the source's tool")
	}
	if n := len(r.Tools()); n != 2 {
		t.Errorf("Tools has %d tools, want 2", n)
	}
}
