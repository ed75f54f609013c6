package demotools_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/slackapprove/slackbot/agentrunner"
	"github.com/slackapprove/slackbot/agentrunner/demotools"
)

func newDemo(t *testing.T) (*demotools.Demo, *agentrunner.Runner) {
	t.Helper()
	return newDemoWith(t, agentrunner.TestModel{})
}

// newDemoWith returns the demo tools' state and a runner of model with them.
func newDemoWith(t *testing.T, model agentrunner.Model) (*demotools.Demo, *agentrunner.Runner) {
	t.Helper()
	d, err := demotools.New(filepath.Join(t.TempDir(), "sandbox"))
	if err != nil {
		t.Fatal(err)
	}
	r, err := agentrunner.NewRunner(model, d.Tools())
	if err != nil {
		t.Fatal(err)
	}
	return d, r
}

func call(name, args string) agentrunner.ToolCallPart {
	return agentrunner.ToolCallPart{ToolName: name, Args: json.RawMessage(args), ToolCallID: "c1"}
}

// runOne runs the test model calling only tool, approving or denying what
// needs approval, and returns the final output and what was pending.
func runOne(t *testing.T, r *agentrunner.Runner, tool string, approve bool) (string, *agentrunner.DeferredToolRequests) {
	t.Helper()
	r2, err := agentrunner.NewRunner(agentrunner.TestModel{CallTools: []string{tool}}, r.Tools())
	if err != nil {
		t.Fatal(err)
	}
	res, err := r2.Run(t.Context(), agentrunner.RunInput{Prompt: "go", AllowPending: true})
	if err != nil {
		t.Fatal(err)
	}
	if res.Status == agentrunner.StatusComplete {
		return res.Output, nil
	}
	pending := res.Pending
	results := agentrunner.NewDeferredToolResults()
	for _, c := range pending.Approvals {
		if approve {
			results.Approvals[c.ToolCallID] = agentrunner.Approve()
		} else {
			results.Approvals[c.ToolCallID] = agentrunner.Deny("")
		}
	}
	res, err = r2.Run(t.Context(), agentrunner.RunInput{History: res.Messages, Results: results})
	if err != nil {
		t.Fatal(err)
	}
	return res.Output, pending
}

func TestDeleteCustomerNeedsApproval(t *testing.T) {
	d, r := newDemo(t)
	out, pending := runOne(t, r, "delete_customer", false)
	if pending == nil || len(pending.Approvals) != 1 {
		t.Fatalf("got pending %+v, want one approval", pending)
	}
	if !d.HasCustomer("a") {
		t.Fatal("customer deleted after a denial")
	}
	if want := `{"delete_customer":"The tool call was denied."}`; out != want {
		t.Errorf("got %s, want %s", out, want)
	}
	out, _ = runOne(t, r, "delete_customer", true)
	if want := `{"delete_customer":"deleted a"}`; out != want {
		t.Errorf("got %s, want %s", out, want)
	}
	if d.HasCustomer("a") {
		t.Error("customer still there after approval")
	}
}

func TestDeleteFileStaysInSandbox(t *testing.T) {
	d, r := newDemo(t)
	tool, _ := r.Tool("delete_file")
	if got := tool.Confirm(call("delete_file", `{"path":"temp.txt"}`)); !strings.Contains(got, "temp.txt") || !strings.Contains(got, "cannot be undone") {
		t.Errorf("confirmation %q does not name the file and warn", got)
	}
	for _, p := range []string{"../outside.txt", "/etc/passwd", "..", "a/../../b"} {
		results := agentrunner.NewDeferredToolResults()
		results.Approvals["c1"] = agentrunner.Approve()
		hist := []agentrunner.Message{{Kind: agentrunner.KindResponse, Parts: []agentrunner.Part{
			agentrunner.ToolCall("delete_file", json.RawMessage(`{"path":`+jsonString(p)+`}`), "c1")}}}
		res, err := r.Run(t.Context(), agentrunner.RunInput{History: hist, Results: results})
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(res.Output, "deleted") {
			t.Errorf("path %q: got %s, want a refusal", p, res.Output)
		}
	}
	if !slices.Contains(d.Files(), "temp.txt") {
		t.Fatal("temp.txt missing before approval")
	}
	out, _ := runOne(t, r, "delete_file", true)
	// The test model's generated path is "a", which does not exist.
	if !strings.Contains(out, "does not exist") {
		t.Errorf("got %s, want a failure for a missing file", out)
	}
}

func jsonString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

func TestIssueRefundApprovalByAmount(t *testing.T) {
	d, r := newDemo(t)
	tool, _ := r.Tool("issue_refund")
	if tool.NeedsApproval() {
		t.Fatal("issue_refund must ask by argument, not always")
	}
	run := func(args string, approve bool) (string, bool) {
		hist := []agentrunner.Message{{Kind: agentrunner.KindResponse, Parts: []agentrunner.Part{
			agentrunner.ToolCall("issue_refund", json.RawMessage(args), "c1")}}}
		// Re-run the call as a fresh model response would: approve it
		// directly when asked to, else let the run decide.
		results := agentrunner.NewDeferredToolResults()
		if approve {
			results.Approvals["c1"] = agentrunner.Approve()
		} else {
			results.Calls["c1"] = agentrunner.CallResult{Value: json.RawMessage(`"skipped"`)}
		}
		res, err := r.Run(t.Context(), agentrunner.RunInput{History: hist, Results: results})
		if err != nil {
			t.Fatal(err)
		}
		return res.Output, approve
	}
	out, _ := run(`{"order_id":"A-1002","amount":150}`, true)
	if !strings.Contains(out, "refunded $150.00 on order A-1002") {
		t.Errorf("approved refund: got %s", out)
	}
	if got := d.Refunds(); len(got) != 1 || got[0].Amount != 150 {
		t.Errorf("refunds %+v, want one of 150", got)
	}

	// Small refunds run without approval; large ones wait.
	r2, _ := agentrunner.NewRunner(agentrunner.FunctionModel(refundModel(50)), r.Tools())
	res, err := r2.Run(t.Context(), agentrunner.RunInput{Prompt: "refund", AllowPending: true})
	if err != nil || res.Status != agentrunner.StatusComplete {
		t.Fatalf("refund 50: got %+v, %v; want complete", res, err)
	}
	r3, _ := agentrunner.NewRunner(agentrunner.FunctionModel(refundModel(500)), r.Tools())
	res, err = r3.Run(t.Context(), agentrunner.RunInput{Prompt: "refund", AllowPending: true})
	if err != nil || res.Status != agentrunner.StatusPending {
		t.Fatalf("refund 500: got %+v, %v; want pending", res, err)
	}
	if md := res.Pending.Metadata[res.Pending.Approvals[0].ToolCallID]; md["reason"] == nil {
		t.Errorf("pending refund metadata %v has no reason", md)
	}
}

func refundModel(amount float64) agentrunner.FunctionModel {
	return func(_ context.Context, msgs []agentrunner.Message, _ agentrunner.RequestParams) (agentrunner.Message, error) {
		if len(msgs[len(msgs)-1].Parts) > 0 && msgs[len(msgs)-1].Parts[0].PartKind == agentrunner.PartToolReturn {
			return agentrunner.Message{Parts: []agentrunner.Part{agentrunner.Text(msgs[len(msgs)-1].Parts[0].ReturnText())}}, nil
		}
		args, _ := json.Marshal(map[string]any{"order_id": "A-1002", "amount": amount})
		return agentrunner.Message{Parts: []agentrunner.Part{agentrunner.ToolCall("issue_refund", args, "r1")}}, nil
	}
}

func TestLookupOrderIsReadOnly(t *testing.T) {
	_, r := newDemo(t)
	tool, _ := r.Tool("lookup_order")
	if !tool.IsReadOnly() || tool.NeedsApproval() {
		t.Fatal("lookup_order must be read-only and need no approval")
	}
	out, pending := runOne(t, r, "lookup_order", false)
	if pending != nil {
		t.Fatalf("lookup_order was deferred: %+v", pending)
	}
	if !strings.Contains(out, `"order_id":"a"`) {
		t.Errorf("got %s, want order a", out)
	}
}
