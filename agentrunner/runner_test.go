package agentrunner_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/slackapprove/slackbot/agentrunner"
)

// recorder wraps a model and keeps every history it was sent.
type recorder struct {
	model agentrunner.Model
	mu    sync.Mutex
	seen  [][]agentrunner.Message
}

func (r *recorder) Request(ctx context.Context, msgs []agentrunner.Message, params agentrunner.RequestParams) (agentrunner.Message, error) {
	r.mu.Lock()
	r.seen = append(r.seen, slices.Clone(msgs))
	r.mu.Unlock()
	return r.model.Request(ctx, msgs, params)
}

// lastRequest returns the parts of the last request the model was sent.
func (r *recorder) lastRequest() []agentrunner.Part {
	r.mu.Lock()
	defer r.mu.Unlock()
	msgs := r.seen[len(r.seen)-1]
	return msgs[len(msgs)-1].Parts
}

func (r *recorder) requests() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.seen)
}

func newRunner(t *testing.T, model agentrunner.Model, tools []*agentrunner.Tool, opts ...agentrunner.Option) *agentrunner.Runner {
	t.Helper()
	r, err := agentrunner.NewRunner(model, tools, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func lookupTool() *agentrunner.Tool {
	return agentrunner.NewTool("lookup", "Look a customer up.", func(_ context.Context, _ *agentrunner.ToolContext, a customerArgs) (any, error) {
		return "found " + a.CustomerID, nil
	})
}

func results(approvals map[string]agentrunner.ApprovalResult, calls map[string]agentrunner.CallResult) *agentrunner.DeferredToolResults {
	r := agentrunner.NewDeferredToolResults()
	for id, a := range approvals {
		r.Approvals[id] = a
	}
	for id, c := range calls {
		r.Calls[id] = c
	}
	return r
}

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

func TestMaxRetries(t *testing.T) {
	tests := []struct {
		name         string
		opts         []agentrunner.Option
		wantRequests int
	}{
		{"default", nil, 2},
		{"three", []agentrunner.Option{agentrunner.WithMaxRetries(3)}, 4},
		{"none", []agentrunner.Option{agentrunner.WithMaxRetries(0)}, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// The model never learns: it sends a string for a number.
			rec := &recorder{model: agentrunner.FunctionModel(func(context.Context, []agentrunner.Message, agentrunner.RequestParams) (agentrunner.Message, error) {
				return agentrunner.Message{Parts: []agentrunner.Part{agentrunner.ToolCall("issue_refund", mustArgs(`{"order_id":"A1","amount":"lots"}`), "c")}}, nil
			})}
			refund := agentrunner.NewTool("issue_refund", "", func(context.Context, *agentrunner.ToolContext, refundArgs) (any, error) {
				t.Error("tool ran with invalid arguments")
				return nil, nil
			})
			r := newRunner(t, rec, []*agentrunner.Tool{refund}, tt.opts...)
			_, err := r.Run(t.Context(), agentrunner.RunInput{Prompt: "refund"})
			if !errors.Is(err, agentrunner.ErrMaxRetries) {
				t.Fatalf("got error %v, want ErrMaxRetries", err)
			}
			if got := rec.requests(); got != tt.wantRequests {
				t.Errorf("got %d model requests, want %d", got, tt.wantRequests)
			}
		})
	}
}

func TestMaxSteps(t *testing.T) {
	loop := agentrunner.FunctionModel(func(context.Context, []agentrunner.Message, agentrunner.RequestParams) (agentrunner.Message, error) {
		return agentrunner.Message{Parts: []agentrunner.Part{agentrunner.ToolCall("lookup", mustArgs(`{"customer_id":"a"}`), agentrunner.NewToken())}}, nil
	})
	r := newRunner(t, loop, []*agentrunner.Tool{lookupTool()}, agentrunner.WithMaxSteps(3))
	if _, err := r.Run(t.Context(), agentrunner.RunInput{Prompt: "go"}); !errors.Is(err, agentrunner.ErrMaxSteps) {
		t.Errorf("got error %v, want ErrMaxSteps", err)
	}
}

func TestRunInputErrors(t *testing.T) {
	r := newRunner(t, agentrunner.TestModel{}, nil)
	if _, err := r.Run(t.Context(), agentrunner.RunInput{}); !errors.Is(err, agentrunner.ErrNoPrompt) {
		t.Errorf("empty input: got %v, want ErrNoPrompt", err)
	}
	boom := errors.New("provider down")
	failing := newRunner(t, agentrunner.FunctionModel(func(context.Context, []agentrunner.Message, agentrunner.RequestParams) (agentrunner.Message, error) {
		return agentrunner.Message{}, boom
	}), nil)
	if _, err := failing.Run(t.Context(), agentrunner.RunInput{Prompt: "hi"}); !errors.Is(err, boom) {
		t.Errorf("model error: got %v, want it wrapped", err)
	}
}

// An unknown tool name goes back to the model as a retry prompt listing the
// tools it may call.
func TestUnknownTool(t *testing.T) {
	rec := &recorder{model: agentrunner.FunctionModel(func(_ context.Context, msgs []agentrunner.Message, _ agentrunner.RequestParams) (agentrunner.Message, error) {
		if len(msgs) == 1 {
			return agentrunner.Message{Parts: []agentrunner.Part{agentrunner.ToolCall("drop_database", nil, "c1")}}, nil
		}
		return agentrunner.Message{Parts: []agentrunner.Part{agentrunner.Text("Sorry.")}}, nil
	})}
	var ran atomic.Int32
	r := newRunner(t, rec, []*agentrunner.Tool{lookupTool(), deleteCustomerTool(&ran)})
	res, err := r.Run(t.Context(), agentrunner.RunInput{Prompt: "go"})
	if err != nil {
		t.Fatal(err)
	}
	if res.Output != "Sorry." {
		t.Errorf("output: got %q, want Sorry.", res.Output)
	}
	want := agentrunner.RetryPrompt("drop_database", "c1", `Unknown tool name: "drop_database". Available tools: lookup, delete_customer`)
	got := rec.lastRequest()[0]
	got.Timestamp = want.Timestamp
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("retry prompt (-want +got):\n%s", diff)
	}
}

// override_args replace the model's arguments and are validated again;
// invalid ones reach the model as a retry prompt and the tool does not run.
func TestOverrideArgs(t *testing.T) {
	tests := []struct {
		name       string
		override   string
		wantOutput string
		wantRan    int32
		wantRetry  string
	}{
		{"valid", `{"customer_id":"b"}`, `{"delete_customer":"deleted b"}`, 1, ""},
		{"string form", `"{\"customer_id\":\"c\"}"`, `{"delete_customer":"deleted c"}`, 1, ""},
		{"invalid", `{"customer_id":5}`, "", 0, "The arguments the approver gave instead do not fit the tool: invalid arguments for delete_customer: at /customer_id"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := t.Context()
			var ran atomic.Int32
			r := newRunner(t, agentrunner.TestModel{}, []*agentrunner.Tool{deleteCustomerTool(&ran)})
			first, err := r.Run(ctx, agentrunner.RunInput{Prompt: "go", AllowPending: true})
			if err != nil {
				t.Fatal(err)
			}
			id := first.Pending.IDs()[0]
			var answer agentrunner.DeferredToolResults
			if err := json.Unmarshal([]byte(`{"approvals":{"`+id+`":{"kind":"tool-approved","override_args":`+tt.override+`}}}`), &answer); err != nil {
				t.Fatal(err)
			}
			res, err := r.Run(ctx, agentrunner.RunInput{History: first.Messages, Results: &answer, AllowPending: true})
			if err != nil {
				t.Fatal(err)
			}
			if got := ran.Load(); got != tt.wantRan {
				t.Errorf("tool ran %d times, want %d", got, tt.wantRan)
			}
			if tt.wantRetry == "" {
				if res.Output != tt.wantOutput {
					t.Errorf("output: got %s, want %s", res.Output, tt.wantOutput)
				}
				return
			}
			var retry *agentrunner.Part
			for _, m := range res.Messages {
				for i, p := range m.Parts {
					if p.PartKind == agentrunner.PartRetryPrompt && p.ToolCallID == id {
						retry = &m.Parts[i]
					}
				}
			}
			if retry == nil || !strings.Contains(retry.Content, tt.wantRetry) {
				t.Fatalf("got retry prompt %+v, want one containing %q", retry, tt.wantRetry)
			}
			// TestModel tries the call again, which needs approval again.
			if res.Status != agentrunner.StatusPending || len(res.Pending.Approvals) != 1 {
				t.Errorf("got status %s pending %+v, want the retried call pending", res.Status, res.Pending)
			}
		})
	}
}

// A tool asks for approval depending on its arguments, with metadata; on
// the second pass it sees that it was approved and the answer's metadata.
func TestApprovalRequiredByArgs(t *testing.T) {
	ctx := t.Context()
	type pass struct {
		amount   float64
		approved bool
		metadata map[string]any
	}
	var passes []pass
	refund := agentrunner.NewTool("issue_refund", "Refund an order.", func(_ context.Context, tc *agentrunner.ToolContext, a refundArgs) (any, error) {
		passes = append(passes, pass{a.Amount, tc.Approved, tc.Metadata})
		if a.Amount > 100 && !tc.Approved {
			return nil, agentrunner.RequireApproval(map[string]any{"reason": "over the limit"})
		}
		return "refunded " + a.OrderID, nil
	})
	model := callsThen(
		agentrunner.ToolCall("issue_refund", mustArgs(`{"order_id":"A1","amount":50}`), "c1"),
		agentrunner.ToolCall("issue_refund", mustArgs(`{"order_id":"A2","amount":250}`), "c2"),
	)
	r := newRunner(t, model, []*agentrunner.Tool{refund})
	first, err := r.Run(ctx, agentrunner.RunInput{Prompt: "refund", AllowPending: true})
	if err != nil {
		t.Fatal(err)
	}
	wantPending := &agentrunner.DeferredToolRequests{
		Approvals: []agentrunner.ToolCallPart{{ToolName: "issue_refund", Args: mustArgs(`{"order_id":"A2","amount":250}`), ToolCallID: "c2"}},
		Metadata:  map[string]map[string]any{"c2": {"reason": "over the limit"}},
	}
	if diff := cmp.Diff(wantPending, first.Pending, cmp.Comparer(jsonEqual)); diff != "" {
		t.Errorf("pending (-want +got):\n%s", diff)
	}
	answer := results(map[string]agentrunner.ApprovalResult{"c2": agentrunner.Approve()}, nil)
	answer.Metadata["c2"] = map[string]any{"ticket": "T-9"}
	answer.AnsweredBy["c2"] = "U0MANAGER"
	res, err := r.Run(ctx, agentrunner.RunInput{History: first.Messages, Pending: first.Pending, Results: answer})
	if err != nil {
		t.Fatal(err)
	}
	want := []pass{{50, false, nil}, {250, false, nil}, {250, true, map[string]any{"ticket": "T-9"}}}
	if diff := cmp.Diff(want, passes, cmp.AllowUnexported(pass{})); diff != "" {
		t.Errorf("tool passes (-want +got):\n%s", diff)
	}
	if got := toolReturns(res.Messages)["c2"].ReturnText(); got != "refunded A2" {
		t.Errorf("c2 return: got %q, want refunded A2", got)
	}
	if got := res.Applied.AnsweredBy["c2"]; got != "U0MANAGER" {
		t.Errorf("applied answered_by: got %q, want U0MANAGER", got)
	}
}

// A tool that defers its call waits for an external result; one that asks a
// question waits for an answer. Both fill in the tool's result.
func TestCallDeferredAndQuestion(t *testing.T) {
	ctx := t.Context()
	r := newRunner(t, agentrunner.TestModel{}, jobTools())
	first, err := r.Run(ctx, agentrunner.RunInput{Prompt: "go", AllowPending: true})
	if err != nil {
		t.Fatal(err)
	}
	job, region := "pyd_ai_tool_call_id__run_job", "pyd_ai_tool_call_id__ask_region"
	if len(first.Pending.Approvals) != 0 || len(first.Pending.Calls) != 2 {
		t.Fatalf("got pending %+v, want two calls", first.Pending)
	}
	got := map[string]agentrunner.PendingToolCall{}
	for _, p := range r.PendingCalls(*first.Pending) {
		got[p.Call.ToolCallID] = p
	}
	if p := got[job]; p.Kind != agentrunner.KindExternal || p.Message != `Run run_job({"job":"a"})?` {
		t.Errorf("run_job: got kind %q message %q", p.Kind, p.Message)
	}
	if p := got[region]; p.Kind != agentrunner.KindQuestion || p.Message != "Which region?" {
		t.Errorf("ask_region: got kind %q message %q", p.Kind, p.Message)
	}
	var answer agentrunner.DeferredToolResults
	if err := json.Unmarshal([]byte(`{"calls":{"`+job+`":{"status":"done"},"`+region+`":"eu-west"}}`), &answer); err != nil {
		t.Fatal(err)
	}
	res, err := r.Run(ctx, agentrunner.RunInput{History: first.Messages, Pending: first.Pending, Results: &answer})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := res.Output, `{"ask_region":"eu-west","run_job":{"status":"done"}}`; got != want {
		t.Errorf("output: got %s, want %s", got, want)
	}
}

// tool-failed and model-retry results reach the model as a failed tool
// return and a retry prompt.
func TestFailureAndRetryReachModel(t *testing.T) {
	ctx := t.Context()
	rec := &recorder{model: agentrunner.FunctionModel(func(ctx context.Context, msgs []agentrunner.Message, params agentrunner.RequestParams) (agentrunner.Message, error) {
		if len(msgs) == 1 {
			return agentrunner.TestModel{}.Request(ctx, msgs, params)
		}
		return agentrunner.Message{Parts: []agentrunner.Part{agentrunner.Text("I could not finish.")}}, nil
	})}
	r := newRunner(t, rec, jobTools())
	first, err := r.Run(ctx, agentrunner.RunInput{Prompt: "go", AllowPending: true})
	if err != nil {
		t.Fatal(err)
	}
	job, region := "pyd_ai_tool_call_id__run_job", "pyd_ai_tool_call_id__ask_region"
	answer := results(nil, map[string]agentrunner.CallResult{
		job:    agentrunner.Fail("worker crashed"),
		region: agentrunner.RetryWith("Ask which continent first."),
	})
	if _, err := r.Run(ctx, agentrunner.RunInput{History: first.Messages, Pending: first.Pending, Results: answer}); err != nil {
		t.Fatal(err)
	}
	got := rec.lastRequest()
	for i := range got {
		got[i].Timestamp = got[0].Timestamp
	}
	ts := got[0].Timestamp
	want := []agentrunner.Part{
		{PartKind: agentrunner.PartToolReturn, ToolName: "run_job", ToolCallID: job, Return: mustArgs(`"worker crashed"`), Outcome: agentrunner.OutcomeFailed, Timestamp: ts},
		{PartKind: agentrunner.PartRetryPrompt, ToolName: "ask_region", ToolCallID: region, Content: "Ask which continent first.", Timestamp: ts},
	}
	if diff := cmp.Diff(want, got, cmp.Comparer(jsonEqual)); diff != "" {
		t.Errorf("parts the model saw (-want +got):\n%s", diff)
	}
}

// A tool's error is reported to the model as a failed return.
func TestToolError(t *testing.T) {
	broken := agentrunner.NewTool("broken", "", func(context.Context, *agentrunner.ToolContext, struct{}) (any, error) {
		return nil, errors.New("disk full")
	})
	res, err := newRunner(t, agentrunner.TestModel{}, []*agentrunner.Tool{broken}).Run(t.Context(), agentrunner.RunInput{Prompt: "go"})
	if err != nil {
		t.Fatal(err)
	}
	got := toolReturns(res.Messages)["pyd_ai_tool_call_id__broken"]
	if got.ReturnText() != "Tool failed: disk full" || got.Outcome != agentrunner.OutcomeFailed {
		t.Errorf("got %q outcome %q, want a failed return", got.ReturnText(), got.Outcome)
	}
}

func approvalTools(names ...string) []*agentrunner.Tool {
	var tools []*agentrunner.Tool
	for _, n := range names {
		tools = append(tools, agentrunner.NewTool(n, "", func(_ context.Context, tc *agentrunner.ToolContext, a nameArgs) (any, error) {
			return tc.ToolName + " " + a.Name, nil
		}, agentrunner.RequiresApproval()))
	}
	return tools
}

// chainHandler records the tools it was offered and decides some of them.
type chainHandler struct {
	name   string
	decide func(call agentrunner.ToolCallPart) (agentrunner.ApprovalResult, bool)
	seen   []string
	rc     *agentrunner.RunContext
}

func (h *chainHandler) HandleDeferred(_ context.Context, rc *agentrunner.RunContext, req agentrunner.DeferredToolRequests) (*agentrunner.DeferredToolResults, error) {
	h.rc = rc
	res := agentrunner.NewDeferredToolResults()
	for _, c := range req.Approvals {
		h.seen = append(h.seen, c.ToolName)
		if a, ok := h.decide(c); ok {
			res.Approvals[c.ToolCallID] = a
			res.AnsweredBy[c.ToolCallID] = h.name
		}
	}
	return res, nil
}

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
