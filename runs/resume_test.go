package runs

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/slackapprove/slackbot/agentrunner"
)

// resumeWorld is a world whose run "run_1" hibernated on testToken after
// calling issue_refund, and whose token resolved with the call approved.
func resumeWorld(t *testing.T) (*world, chan string) {
	t.Helper()
	w := newWorld()
	ran := make(chan string, 4)
	refund := agentrunner.NewTool("issue_refund", "Refunds an order.",
		func(context.Context, *agentrunner.ToolContext, struct{}) (any, error) {
			ran <- "issue_refund"
			return "refunded", nil
		}, agentrunner.RequiresApproval())
	model := agentrunner.FunctionModel(func(context.Context, []agentrunner.Message, agentrunner.RequestParams) (agentrunner.Message, error) {
		return agentrunner.Message{Parts: []agentrunner.Part{agentrunner.Text("refunded it")}}, nil
	})
	runner, err := agentrunner.NewRunner(model, []*agentrunner.Tool{refund})
	if err != nil {
		t.Fatal(err)
	}
	w.rs.Runner = runner
	call := agentrunner.ToolCall("issue_refund", json.RawMessage(`{}`), testCallID)
	w.state.saved["run_1"] = &Saved{RunID: "run_1", Token: testToken, Origin: testOrigin,
		Messages: []agentrunner.Message{
			{Kind: agentrunner.KindRequest, Parts: []agentrunner.Part{agentrunner.UserPrompt("refund A-1")}},
			{Kind: agentrunner.KindResponse, Parts: []agentrunner.Part{call}},
		},
		Pending: agentrunner.DeferredToolRequests{Approvals: []agentrunner.ToolCallPart{{ToolName: "issue_refund", Args: json.RawMessage(`{}`), ToolCallID: testCallID}}}}
	return w, ran
}

// TestResumeDirect: the process that ended a token claims the run,
// resumes it from its saved state with the token's results, and, once
// the run ended (its tool ran, its answer posted once), deletes the
// state and takes the token's resume job off the queue; a run the claim
// is refused for is left alone.
func TestResumeDirect(t *testing.T) {
	w, ran := resumeWorld(t)
	if err := w.rs.ResumeDirect(t.Context(), testToken, "run_1"); err != nil {
		t.Fatal(err)
	}
	w.rs.Wait()
	select {
	case <-ran:
	default:
		t.Fatal("the approved tool did not run")
	}
	want := []string{
		"claim " + testToken + " for proc1/direct",
		"outcome " + testToken + "/" + testCallID + " ran",
		"queue answer",
		"queue cards " + testToken,
		"done " + testToken,
		"answer run_1/" + testToken + "/complete look=false",
		"ack 1",
		"update cards " + testToken,
		"ack 2",
		"delete run run_1",
		"done " + testToken,
	}
	if got := w.trail.String(); got != strings.Join(want, ", ") {
		t.Errorf("steps:\n got %s\nwant %s", got, strings.Join(want, ", "))
	}
	if _, resumed := w.metrics.got(); fmt.Sprint(resumed) != "[direct]" {
		t.Errorf("resumes counted: %v, want [direct]", resumed)
	}

	w.trail.reset()
	w.state.refused = true
	if err := w.rs.ResumeDirect(t.Context(), testToken, "run_1"); err != nil {
		t.Fatal(err)
	}
	w.rs.Wait()
	if got, want := w.trail.String(), "claim "+testToken+" for proc1/direct"; got != want {
		t.Errorf("a run another process holds: got %s, want only %s", got, want)
	}
}

// TestResumeQueued: a queue job younger than DirectFirst is left to the
// process that ended its token; an older one is claimed under the
// queue's name and acknowledged by its id once the run ended; a job
// whose run moved on past its token, or has no saved state, is only
// taken off the queue. Its answer looks in the thread first.
func TestResumeQueued(t *testing.T) {
	w, ran := resumeWorld(t)
	young := fmt.Sprintf("%d-0", time.Now().UnixMilli())
	w.rs.ResumeQueued(t.Context(), ResumeJob{ID: young, Token: testToken, RunID: "run_1"})
	if got := w.trail.String(); got != "" {
		t.Errorf("a young job: %s, want nothing done", got)
	}
	w.rs.ResumeQueued(t.Context(), ResumeJob{ID: "1-0", Token: testToken, RunID: "run_1"})
	w.rs.Wait()
	if len(ran) != 1 {
		t.Fatalf("the approved tool ran %d times, want once", len(ran))
	}
	steps := w.trail.String()
	if !strings.HasPrefix(steps, "claim "+testToken+" for proc1/queue, ") || !strings.HasSuffix(steps, ", delete run run_1, ack resume job 1-0") {
		t.Errorf("steps: %s", steps)
	}
	// A queued resume may follow one that died after posting the answer
	// with no record of it (Redis unreachable): it looks in the thread
	// first (a chaos soak under load saw a thread answered twice).
	if !strings.Contains(steps, "answer run_1/"+testToken+"/complete look=true") {
		t.Errorf("a queued resume posts its answer without looking for an earlier post: %s", steps)
	}

	w.trail.reset()
	w.state.saved["run_1"].Token = "tok_later"
	w.rs.ResumeQueued(t.Context(), ResumeJob{ID: "2-0", Token: testToken, RunID: "run_1"})
	if got, want := w.trail.String(), "claim "+testToken+" for proc1/queue, done "+testToken+", ack resume job 2-0"; got != want {
		t.Errorf("a run that moved on: got %s, want %s", got, want)
	}
	w.trail.reset()
	w.rs.ResumeQueued(t.Context(), ResumeJob{ID: "3-0", Token: testToken, RunID: "run_gone"})
	if got, want := w.trail.String(), "claim "+testToken+" for proc1/queue, ack resume job 3-0"; got != want {
		t.Errorf("a run with no saved state: got %s, want %s", got, want)
	}
	if len(ran) != 1 {
		t.Errorf("the tool ran again")
	}
}

// TestResumeGivesTheClaimBack: when the saved run cannot be read for a
// passing reason, nothing runs, the claim is given back and the job stays
// on the queue for a retry; a direct resume (after a click or the expiry,
// through approval's Resumed port) gives it back the same way.
func TestResumeGivesTheClaimBack(t *testing.T) {
	w, ran := resumeWorld(t)
	w.state.loadErr = errDown
	w.rs.ResumeQueued(t.Context(), ResumeJob{ID: "1-0", Token: testToken, RunID: "run_1"})
	w.rs.Wait()
	if got, want := w.trail.String(), "claim "+testToken+" for proc1/queue, release "+testToken; got != want {
		t.Errorf("got %s, want %s", got, want)
	}
	w.trail.reset()
	if err := w.rs.ResumeDirect(t.Context(), testToken, "run_1"); err != nil {
		t.Fatal(err)
	}
	w.rs.Wait()
	if got, want := w.trail.String(), "claim "+testToken+" for proc1/direct, release "+testToken; got != want {
		t.Errorf("direct: got %s, want %s", got, want)
	}
	if len(ran) != 0 {
		t.Errorf("the tool ran")
	}
}
