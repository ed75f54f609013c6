package agentrunner_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

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

var _ = errors.Is
var _ = os.Remove
var _ = filepath.Join
var _ = strings.Contains
