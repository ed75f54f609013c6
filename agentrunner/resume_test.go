package agentrunner_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/slackapprove/slackbot/agentrunner"
)

func TestResumeErrors(t *testing.T) {
	ctx := t.Context()
	var ran atomic.Int32
	model := callsThen(
		agentrunner.ToolCall("lookup", mustArgs(`{"customer_id":"a"}`), "c1"),
		agentrunner.ToolCall("delete_customer", mustArgs(`{"customer_id":"a"}`), "c2"),
		agentrunner.ToolCall("delete_customer", mustArgs(`{"customer_id":"b"}`), "c3"),
	)
	r := newRunner(t, model, []*agentrunner.Tool{lookupTool(), deleteCustomerTool(&ran)})
	first, err := r.Run(ctx, agentrunner.RunInput{Prompt: "go", AllowPending: true})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"c2", "c3"}, first.Pending.IDs()); diff != "" {
		t.Fatalf("pending (-want +got):\n%s", diff)
	}
	completed, err := newRunner(t, agentrunner.TestModel{}, nil).Run(ctx, agentrunner.RunInput{Prompt: "hi"})
	if err != nil {
		t.Fatal(err)
	}
	approve := agentrunner.Approve()
	onlyC2 := agentrunner.DeferredToolRequests{Approvals: first.Pending.Approvals[:1]}

	tests := []struct {
		name    string
		in      agentrunner.RunInput
		wantErr error
		naming  string
	}{
		{"empty history", agentrunner.RunInput{Results: results(map[string]agentrunner.ApprovalResult{"c2": approve}, nil)}, agentrunner.ErrEmptyHistory, ""},
		{"no unprocessed calls", agentrunner.RunInput{History: completed.Messages, Results: results(map[string]agentrunner.ApprovalResult{"c2": approve}, nil)}, agentrunner.ErrNoUnprocessedCalls, ""},
		{"already executed", agentrunner.RunInput{History: first.Messages, Results: results(map[string]agentrunner.ApprovalResult{"c1": approve, "c2": approve, "c3": approve}, nil)}, agentrunner.ErrAlreadyExecuted, "c1"},
		{"not pending", agentrunner.RunInput{History: first.Messages, Results: results(map[string]agentrunner.ApprovalResult{"c2": approve, "c3": approve, "c9": approve}, nil)}, agentrunner.ErrNotPending, "c9"},
		{"metadata not pending", agentrunner.RunInput{History: first.Messages, Results: &agentrunner.DeferredToolResults{
			Approvals: map[string]agentrunner.ApprovalResult{"c2": approve, "c3": approve}, Metadata: map[string]map[string]any{"c7": {}}}}, agentrunner.ErrNotPending, "c7"},
		{"incomplete", agentrunner.RunInput{History: first.Messages, Results: results(map[string]agentrunner.ApprovalResult{"c2": approve}, nil)}, agentrunner.ErrIncompleteResults, "c3"},
		{"wrong kind", agentrunner.RunInput{History: first.Messages, Pending: first.Pending, Results: results(
			map[string]agentrunner.ApprovalResult{"c3": approve}, map[string]agentrunner.CallResult{"c2": {Value: mustArgs(`1`)}})}, agentrunner.ErrNotPending, "call c2"},
		{"answered twice", agentrunner.RunInput{History: first.Messages, Results: results(
			map[string]agentrunner.ApprovalResult{"c2": approve, "c3": approve}, map[string]agentrunner.CallResult{"c2": {Value: mustArgs(`1`)}})}, agentrunner.ErrNotPending, "approval c2"},
		{"stale pending", agentrunner.RunInput{History: first.Messages, Pending: &onlyC2, Results: results(map[string]agentrunner.ApprovalResult{"c2": approve}, nil)}, agentrunner.ErrPendingMismatch, "c3 is not in the requests"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := r.Run(ctx, tt.in)
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("got error %v, want %v", err, tt.wantErr)
			}
			if !strings.Contains(err.Error(), tt.naming) {
				t.Errorf("error %q does not name %q", err, tt.naming)
			}
			if ran.Load() != 0 {
				t.Errorf("tool ran %d times on a bad resume, want 0", ran.Load())
			}
		})
	}
}

// With AllowPending, results may answer some calls; the rest stay pending.
func TestResumePartial(t *testing.T) {
	ctx := t.Context()
	var ran atomic.Int32
	model := callsThen(
		agentrunner.ToolCall("delete_customer", mustArgs(`{"customer_id":"a"}`), "c1"),
		agentrunner.ToolCall("delete_customer", mustArgs(`{"customer_id":"b"}`), "c2"),
	)
	r := newRunner(t, model, []*agentrunner.Tool{deleteCustomerTool(&ran)})
	first, err := r.Run(ctx, agentrunner.RunInput{Prompt: "go", AllowPending: true})
	if err != nil {
		t.Fatal(err)
	}
	second, err := r.Run(ctx, agentrunner.RunInput{History: first.Messages, Pending: first.Pending, AllowPending: true,
		Results: results(map[string]agentrunner.ApprovalResult{"c1": agentrunner.Approve()}, nil)})
	if err != nil {
		t.Fatal(err)
	}
	if second.Status != agentrunner.StatusPending || !slices.Equal(second.Pending.IDs(), []string{"c2"}) {
		t.Fatalf("got status %s pending %v, want c2 pending", second.Status, second.Pending)
	}
	if ran.Load() != 1 {
		t.Errorf("tool ran %d times, want 1", ran.Load())
	}
	third, err := r.Run(ctx, agentrunner.RunInput{History: second.Messages, Pending: second.Pending,
		Results: results(map[string]agentrunner.ApprovalResult{"c2": agentrunner.Deny("")}, nil)})
	if err != nil {
		t.Fatal(err)
	}
	// Both results of the response reach the model in one request, as
	// providers require, though they were given in two resumes.
	resp := slices.IndexFunc(third.Messages, func(m agentrunner.Message) bool { return len(m.ToolCalls()) > 0 })
	next := third.Messages[resp+1]
	if next.Kind != agentrunner.KindRequest || len(next.Parts) != 2 || next.Parts[0].ToolCallID != "c1" || next.Parts[1].ToolCallID != "c2" {
		t.Errorf("message after the calls: got %+v, want one request with the returns of c1 and c2", next)
	}
	returns := toolReturns(third.Messages)
	if got := returns["c1"].ReturnText(); got != "deleted a" {
		t.Errorf("c1: got %q, want deleted a", got)
	}
	if got := returns["c2"]; got.ReturnText() != agentrunner.DefaultDenialMessage || got.Outcome != agentrunner.OutcomeDenied {
		t.Errorf("c2: got %q outcome %q, want the default denial", got.ReturnText(), got.Outcome)
	}
}

type jobArgs struct {
	Job string `json:"job"`
}

func jobTools() []*agentrunner.Tool {
	return []*agentrunner.Tool{
		agentrunner.NewTool("run_job", "Start a job; its result comes later.", func(_ context.Context, _ *agentrunner.ToolContext, a jobArgs) (any, error) {
			return nil, agentrunner.DeferCall(map[string]any{"job": a.Job})
		}),
		agentrunner.NewTool("ask_region", "Ask the user for a region.", func(context.Context, *agentrunner.ToolContext, struct{}) (any, error) {
			return nil, agentrunner.Question("Which region?")
		}),
	}
}

// Given the earlier requests, calls left out keep their kind and metadata;
// without them they stay pending as approvals.
func TestResumeKeepsKinds(t *testing.T) {
	ctx := t.Context()
	var ran atomic.Int32
	tools := append(jobTools(), deleteCustomerTool(&ran))
	r := newRunner(t, agentrunner.TestModel{CallTools: []string{"run_job", "delete_customer"}}, tools)
	first, err := r.Run(ctx, agentrunner.RunInput{Prompt: "go", AllowPending: true})
	if err != nil {
		t.Fatal(err)
	}
	job := "pyd_ai_tool_call_id__run_job"
	del := "pyd_ai_tool_call_id__delete_customer"
	if got := first.Pending.Kind(job); got != agentrunner.KindExternal {
		t.Fatalf("Kind(run_job): got %q, want external", got)
	}
	answer := results(map[string]agentrunner.ApprovalResult{del: agentrunner.Approve()}, nil)

	withPending, err := r.Run(ctx, agentrunner.RunInput{History: first.Messages, Pending: first.Pending, Results: answer, AllowPending: true})
	if err != nil {
		t.Fatal(err)
	}
	if got := withPending.Pending.Kind(job); got != agentrunner.KindExternal {
		t.Errorf("with Pending: Kind(run_job) got %q, want external", got)
	}
	if diff := cmp.Diff(map[string]map[string]any{job: {"job": "a"}}, withPending.Pending.Metadata); diff != "" {
		t.Errorf("with Pending: metadata (-want +got):\n%s", diff)
	}

	without, err := r.Run(ctx, agentrunner.RunInput{History: first.Messages, Results: answer, AllowPending: true})
	if err != nil {
		t.Fatal(err)
	}
	if got := without.Pending.Kind(job); got != agentrunner.KindApproval {
		t.Errorf("without Pending: Kind(run_job) got %q, want approval (the documented fallback)", got)
	}
}
