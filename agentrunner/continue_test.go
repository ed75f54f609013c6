package agentrunner_test

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/slackapprove/slackbot/agentrunner"
)

// TestContinueFinishedHistory: a run given the history of a finished run
// and a new prompt sends the model the whole earlier conversation, then
// the new prompt, and returns the longer history.
func TestContinueFinishedHistory(t *testing.T) {
	rec := &recorder{model: agentrunner.TestModel{}}
	r := newRunner(t, rec, []*agentrunner.Tool{lookupTool()})
	first, err := r.Run(t.Context(), agentrunner.RunInput{Prompt: "look up C-1"})
	if err != nil || first.Status != agentrunner.StatusComplete {
		t.Fatalf("first run: %v, %+v", err, first)
	}
	asked := rec.requests()
	second, err := r.Run(t.Context(), agentrunner.RunInput{History: first.Messages, Prompt: "and again"})
	if err != nil || second.Status != agentrunner.StatusComplete {
		t.Fatalf("second run: %v, %+v", err, second)
	}
	rec.mu.Lock()
	sent := rec.seen[asked]
	rec.mu.Unlock()
	if diff := cmp.Diff(first.Messages, sent[:len(first.Messages)]); diff != "" {
		t.Errorf("the continued run's first request lost the earlier turn (-want +got):\n%s", diff)
	}
	last := sent[len(sent)-1]
	if len(sent) != len(first.Messages)+1 || last.Kind != agentrunner.KindRequest || len(last.Parts) != 1 ||
		last.Parts[0].PartKind != agentrunner.PartUserPrompt || last.Parts[0].Content != "and again" {
		t.Errorf("the new prompt: got %+v after %d earlier messages", last, len(first.Messages))
	}
	if len(second.Messages) <= len(first.Messages) {
		t.Errorf("the continued history has %d messages, want more than %d", len(second.Messages), len(first.Messages))
	}
}

// TestCloseUnprocessed: a history that ended with calls still pending is
// continued with a new prompt once CloseUnprocessed answered them, and the
// model sees every call with a denied result.
func TestCloseUnprocessed(t *testing.T) {
	risky := agentrunner.NewTool("delete", "Delete a customer.", func(_ context.Context, _ *agentrunner.ToolContext, a customerArgs) (any, error) {
		return "deleted " + a.CustomerID, nil
	}, agentrunner.RequiresApproval())
	rec := &recorder{model: agentrunner.TestModel{}}
	r := newRunner(t, rec, []*agentrunner.Tool{risky, lookupTool()})
	first, err := r.Run(t.Context(), agentrunner.RunInput{Prompt: "go", AllowPending: true})
	if err != nil || first.Status != agentrunner.StatusPending {
		t.Fatalf("first run: %v, %+v", err, first)
	}
	closed := agentrunner.CloseUnprocessed(first.Messages, "No decision was made; the call did not run.")
	if got := agentrunner.CloseUnprocessed(closed, "again"); len(got) != len(closed) {
		t.Errorf("closing a closed history changed it: %d → %d messages", len(closed), len(got))
	}
	asked := rec.requests()
	second, err := r.Run(t.Context(), agentrunner.RunInput{History: closed, Prompt: "what now?"})
	if err != nil || second.Status != agentrunner.StatusComplete {
		t.Fatalf("continued run: %v, %+v", err, second)
	}
	rec.mu.Lock()
	sent := rec.seen[asked]
	rec.mu.Unlock()
	returns := map[string]agentrunner.Part{}
	for _, m := range sent {
		for _, p := range m.Parts {
			if p.PartKind == agentrunner.PartToolReturn {
				returns[p.ToolCallID] = p
			}
		}
	}
	for _, c := range first.Pending.Approvals {
		p, ok := returns[c.ToolCallID]
		if !ok || p.Outcome != agentrunner.OutcomeDenied || p.ReturnText() != "No decision was made; the call did not run." {
			t.Errorf("pending call %s: the model saw %+v, want a denial", c.ToolCallID, p)
		}
	}
	if n := len(first.Pending.Approvals); n == 0 {
		t.Fatal("the first run left nothing pending")
	}
}
