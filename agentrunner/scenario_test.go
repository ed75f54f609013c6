package agentrunner_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/slackapprove/slackbot/agentrunner"
)

type customerArgs struct {
	CustomerID string `json:"customer_id" jsonschema:"description=The customer to delete"`
}

func deleteCustomerTool(ran *atomic.Int32) *agentrunner.Tool {
	return agentrunner.NewTool("delete_customer", "Delete a customer.",
		func(_ context.Context, _ *agentrunner.ToolContext, a customerArgs) (any, error) {
			ran.Add(1)
			return "deleted " + a.CustomerID, nil
		}, agentrunner.RequiresApproval())
}

// Scenario (a): a tool that requires approval ends the run pending; a denial
// reaches the model; an approval runs the tool exactly once.
func TestScenarioDeleteCustomer(t *testing.T) {
	ctx := t.Context()
	var ran atomic.Int32
	r, err := agentrunner.NewRunner(agentrunner.TestModel{}, []*agentrunner.Tool{deleteCustomerTool(&ran)})
	if err != nil {
		t.Fatal(err)
	}
	res, err := r.Run(ctx, agentrunner.RunInput{Prompt: "delete customer a", AllowPending: true})
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != agentrunner.StatusPending || res.Pending == nil || len(res.Pending.Approvals) != 1 {
		t.Fatalf("run 1: got status %s pending %+v, want one pending approval", res.Status, res.Pending)
	}
	if ran.Load() != 0 {
		t.Fatalf("tool ran %d times before approval, want 0", ran.Load())
	}
	id := res.Pending.Approvals[0].ToolCallID

	// The history goes through JSON, as it would through Redis.
	hist := roundTripHistory(t, res.Messages)

	denied := agentrunner.NewDeferredToolResults()
	denied.Approvals[id] = agentrunner.Deny("Deleting customers needs a manager.")
	res2, err := r.Run(ctx, agentrunner.RunInput{History: hist, Results: denied})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := res2.Output, `{"delete_customer":"Deleting customers needs a manager."}`; got != want {
		t.Errorf("denied run: got output %s, want %s", got, want)
	}
	if ran.Load() != 0 {
		t.Fatalf("tool ran %d times after denial, want 0", ran.Load())
	}

	approved := agentrunner.NewDeferredToolResults()
	approved.Approvals[id] = agentrunner.Approve()
	res3, err := r.Run(ctx, agentrunner.RunInput{History: hist, Results: approved})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := res3.Output, `{"delete_customer":"deleted a"}`; got != want {
		t.Errorf("approved run: got output %s, want %s", got, want)
	}
	if ran.Load() != 1 {
		t.Errorf("tool ran %d times after approval, want 1", ran.Load())
	}
}

func roundTripHistory(t *testing.T, msgs []agentrunner.Message) []agentrunner.Message {
	t.Helper()
	b, err := json.Marshal(msgs)
	if err != nil {
		t.Fatal(err)
	}
	var out []agentrunner.Message
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatalf("decode history %s: %v", b, err)
	}
	return out
}

type refundArgs struct {
	OrderID string  `json:"order_id"`
	Amount  float64 `json:"amount" jsonschema:"minimum=0"`
}

// refundPolicy approves refunds up to 100 and denies the rest, without
// asking anyone, and says so in answered_by.
var refundPolicy = agentrunner.HandlerFunc(func(_ context.Context, _ *agentrunner.RunContext, req agentrunner.DeferredToolRequests) (*agentrunner.DeferredToolResults, error) {
	res := agentrunner.NewDeferredToolResults()
	for _, c := range req.Approvals {
		if c.ToolName != "issue_refund" {
			continue
		}
		var a refundArgs
		raw, err := c.ArgsObject()
		if err != nil {
			return nil, err
		}
		if err := json.Unmarshal(raw, &a); err != nil {
			return nil, err
		}
		if a.Amount <= 100 {
			res.Approvals[c.ToolCallID] = agentrunner.Approve()
		} else {
			res.Approvals[c.ToolCallID] = agentrunner.Deny("Refunds over $100 need a manager.")
		}
		res.AnsweredBy[c.ToolCallID] = "refund-policy"
	}
	return res, nil
})

// callsThen is a model that makes calls in its first response, then ends the
// turn as TestModel does, with the JSON of tool name → result.
func callsThen(calls ...agentrunner.Part) agentrunner.Model {
	return agentrunner.FunctionModel(func(ctx context.Context, msgs []agentrunner.Message, params agentrunner.RequestParams) (agentrunner.Message, error) {
		for _, m := range msgs {
			if m.Kind == agentrunner.KindResponse {
				return agentrunner.TestModel{}.Request(ctx, msgs, params)
			}
		}
		return agentrunner.Message{Parts: calls}, nil
	})
}

// toolReturns returns the tool-return parts of a history by tool_call_id.
func toolReturns(msgs []agentrunner.Message) map[string]agentrunner.Part {
	out := map[string]agentrunner.Part{}
	for _, m := range msgs {
		for _, p := range m.Parts {
			if p.PartKind == agentrunner.PartToolReturn {
				out[p.ToolCallID] = p
			}
		}
	}
	return out
}

// Scenario (b): a policy handler decides refunds without waiting, and the run
// reports who decided each call.
func TestScenarioRefundPolicy(t *testing.T) {
	var refunded []float64
	refund := agentrunner.NewTool("issue_refund", "Refund an order.",
		func(_ context.Context, _ *agentrunner.ToolContext, a refundArgs) (any, error) {
			refunded = append(refunded, a.Amount)
			return "refunded " + a.OrderID, nil
		}, agentrunner.RequiresApproval())
	model := callsThen(
		agentrunner.ToolCall("issue_refund", json.RawMessage(`{"order_id":"A1","amount":40}`), "call_1"),
		agentrunner.ToolCall("issue_refund", json.RawMessage(`{"order_id":"A2","amount":100}`), "call_2"),
		agentrunner.ToolCall("issue_refund", json.RawMessage(`{"order_id":"A3","amount":250}`), "call_3"),
	)
	r, err := agentrunner.NewRunner(model, []*agentrunner.Tool{refund}, agentrunner.WithHandlers(refundPolicy))
	if err != nil {
		t.Fatal(err)
	}
	res, err := r.Run(t.Context(), agentrunner.RunInput{Prompt: "refund A1, A2 and A3"})
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != agentrunner.StatusComplete {
		t.Fatalf("got status %s, want complete", res.Status)
	}
	if diff := cmp.Diff([]float64{40, 100}, refunded); diff != "" {
		t.Errorf("refunds made (-want +got):\n%s", diff)
	}

	want := agentrunner.NewDeferredToolResults()
	want.Approvals["call_1"] = agentrunner.Approve()
	want.Approvals["call_2"] = agentrunner.Approve()
	want.Approvals["call_3"] = agentrunner.Deny("Refunds over $100 need a manager.")
	for _, id := range []string{"call_1", "call_2", "call_3"} {
		want.AnsweredBy[id] = "refund-policy"
	}
	if diff := cmp.Diff(want, res.Applied); diff != "" {
		t.Errorf("applied results (-want +got):\n%s", diff)
	}

	returns := toolReturns(res.Messages)
	for id, want := range map[string]struct {
		text    string
		outcome agentrunner.Outcome
	}{
		"call_1": {"refunded A1", agentrunner.OutcomeSuccess},
		"call_2": {"refunded A2", agentrunner.OutcomeSuccess},
		"call_3": {"Refunds over $100 need a manager.", agentrunner.OutcomeDenied},
	} {
		got := returns[id]
		if got.ReturnText() != want.text || got.Outcome != want.outcome {
			t.Errorf("%s: got return %q outcome %q, want %q outcome %q", id, got.ReturnText(), got.Outcome, want.text, want.outcome)
		}
	}
}

type fileArgs struct {
	Path string `json:"path" jsonschema:"description=The file to delete"`
}

func deleteFileTool() *agentrunner.Tool {
	return agentrunner.NewTool("delete_file", "Delete a file.",
		func(_ context.Context, _ *agentrunner.ToolContext, a fileArgs) (any, error) {
			if err := os.Remove(a.Path); err != nil {
				return nil, err
			}
			return "deleted " + filepath.Base(a.Path), nil
		},
		agentrunner.RequiresApproval(),
		agentrunner.Confirmation(func(c agentrunner.ToolCallPart) string {
			var a fileArgs
			if raw, err := c.ArgsObject(); err == nil {
				_ = json.Unmarshal(raw, &a)
			}
			return fmt.Sprintf("Delete the file %s? This cannot be undone.", filepath.Base(a.Path))
		}))
}

// deleteFilesModel asks to delete every path, then reports like TestModel.
func deleteFilesModel(paths ...string) agentrunner.Model {
	var calls []agentrunner.Part
	for i, p := range paths {
		args, _ := json.Marshal(fileArgs{Path: p})
		calls = append(calls, agentrunner.ToolCall("delete_file", args, fmt.Sprintf("call_%d", i+1)))
	}
	return callsThen(calls...)
}

// Scenario (c): a confirmation is shown, saved, restored, approved by
// tool_call_id, and the run completes; an answer that leaves a call out is
// rejected and clears the pending state.
func TestScenarioConfirmation(t *testing.T) {
	ctx := t.Context()
	dir := t.TempDir()
	path := filepath.Join(dir, "temp.txt")
	if err := os.WriteFile(path, []byte("scratch"), 0o600); err != nil {
		t.Fatal(err)
	}
	r, err := agentrunner.NewRunner(deleteFilesModel(path), []*agentrunner.Tool{deleteFileTool()})
	if err != nil {
		t.Fatal(err)
	}
	res, err := r.Run(ctx, agentrunner.RunInput{Prompt: "delete temp.txt", AllowPending: true})
	if err != nil {
		t.Fatal(err)
	}
	pending := res.PendingRun()
	if pending == nil {
		t.Fatalf("got status %s, want pending", res.Status)
	}
	calls := pending.Calls(r)
	if len(calls) != 1 {
		t.Fatalf("got %d pending calls, want 1", len(calls))
	}
	if got, want := calls[0].Message, "Delete the file temp.txt? This cannot be undone."; got != want {
		t.Errorf("confirmation: got %q, want %q", got, want)
	}
	if calls[0].Kind != agentrunner.KindApproval {
		t.Errorf("kind: got %q, want approval", calls[0].Kind)
	}

	saved, err := json.Marshal(pending)
	if err != nil {
		t.Fatal(err)
	}
	var restored agentrunner.PendingRun
	if err := json.Unmarshal(saved, &restored); err != nil {
		t.Fatalf("restore %s: %v", saved, err)
	}
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("file gone before approval: %v", err)
	}

	answer := agentrunner.NewDeferredToolResults()
	answer.Approvals[calls[0].Call.ToolCallID] = agentrunner.Approve()
	done, err := restored.Resume(ctx, r, answer)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := done.Output, `{"delete_file":"deleted temp.txt"}`; got != want {
		t.Errorf("output: got %s, want %s", got, want)
	}
	if done.RunID != res.RunID {
		t.Errorf("run id: got %s, want %s", done.RunID, res.RunID)
	}
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("after approval: stat got %v, want not exist", err)
	}
	if restored.Active() {
		t.Error("pending state still active after resume")
	}
	if _, err := restored.Resume(ctx, r, answer); !errors.Is(err, agentrunner.ErrNoPendingRun) {
		t.Errorf("second resume: got %v, want ErrNoPendingRun", err)
	}
}

func TestScenarioConfirmationOmittedCall(t *testing.T) {
	ctx := t.Context()
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a.txt"), filepath.Join(dir, "b.txt")
	for _, p := range []string{a, b} {
		if err := os.WriteFile(p, nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	r, err := agentrunner.NewRunner(deleteFilesModel(a, b), []*agentrunner.Tool{deleteFileTool()})
	if err != nil {
		t.Fatal(err)
	}
	res, err := r.Run(ctx, agentrunner.RunInput{Prompt: "delete a.txt and b.txt", AllowPending: true})
	if err != nil {
		t.Fatal(err)
	}
	pending := res.PendingRun()
	if got := len(pending.Calls(r)); got != 2 {
		t.Fatalf("got %d pending calls, want 2", got)
	}
	answer := agentrunner.NewDeferredToolResults()
	answer.Approvals["call_1"] = agentrunner.Approve()
	_, err = pending.Resume(ctx, r, answer)
	if !errors.Is(err, agentrunner.ErrIncompleteResults) || !strings.Contains(err.Error(), "call_2") {
		t.Fatalf("got error %v, want ErrIncompleteResults naming call_2", err)
	}
	if pending.Active() {
		t.Error("pending state kept after a rejected answer, want cleared")
	}
	for _, p := range []string{a, b} {
		if _, err := os.Stat(p); err != nil {
			t.Errorf("%s: %v, want the file untouched", filepath.Base(p), err)
		}
	}
	if _, err := pending.Resume(ctx, r, answer); !errors.Is(err, agentrunner.ErrNoPendingRun) {
		t.Errorf("resume after rejection: got %v, want ErrNoPendingRun", err)
	}
}
