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
