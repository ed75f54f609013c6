package bot

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/slackapprove/slackbot/agentrunner"
	"github.com/slackapprove/slackbot/approval"
)

// TestFinishSuspendedRun: a run that suspended on its next token posts
// nothing in the thread and is counted as pending; the token it got past
// has its cards updated and is done with, the one it waits on is not.
func TestFinishSuspendedRun(t *testing.T) {
	slackAPI := &recordingSlack{}
	approvals := newRecordingApprovals()
	approvals.a.State = approval.StateResolved
	approvals.a.Calls[0].Status = approval.CallApproved
	b := newSocketTestBot(t, slackAPI, approvals, nil, nil)
	f := &recordingFollowups{slack: slackAPI}
	var finished []string
	rs := &Runs{Bot: b, Followups: f, Finished: func(r string) { finished = append(finished, r) }}
	t.Cleanup(rs.Stop)
	deps := &RunDeps{Origin: approvals.a.Origin, runID: "run_1"}
	deps.Asked(approvals.a.Token, time.Time{})
	next := agentrunner.NewToken()
	deps.Asked(next, time.Time{})
	res := &agentrunner.RunResult{RunID: "run_1", Status: agentrunner.StatusSuspended, Suspended: &agentrunner.Suspension{Token: next},
		Pending: &agentrunner.DeferredToolRequests{},
		Messages: []agentrunner.Message{{Kind: agentrunner.KindRequest, Parts: []agentrunner.Part{
			agentrunner.ToolReturn("issue_refund", smCallID, json.RawMessage(`"refunded $50"`), agentrunner.OutcomeSuccess),
		}}}}
	if !rs.Finish(t.Context(), deps, res, nil) {
		t.Fatal("Finish reported the run as not ended here")
	}
	if got, want := strings.Join(f.steps, ","), "queue,done,do"; got != want {
		t.Errorf("steps: got %s, want %s", got, want)
	}
	if f.answer != nil {
		t.Errorf("a suspended run queued an answer: %+v", f.answer)
	}
	if len(f.cards) != 1 || f.cards[0] != approvals.a.Token || len(f.done) != 1 || f.done[0] != approvals.a.Token {
		t.Errorf("queued cards %v, done %v; want only the earlier token in both", f.cards, f.done)
	}
	if len(finished) != 1 || finished[0] != "pending" {
		t.Errorf("Finished told %q, want [pending]", finished)
	}
	if calls := slackAPI.Calls(); len(calls) != 0 {
		t.Errorf("Finish called Slack: %v", calls)
	}

	// A first suspension (no earlier token) does nothing but count.
	f2 := &recordingFollowups{slack: slackAPI}
	rs.Followups = f2
	first := &RunDeps{Origin: approvals.a.Origin, runID: "run_2"}
	first.Asked(next, time.Time{})
	if !rs.Finish(t.Context(), first, res, nil) {
		t.Fatal("Finish reported the run as not ended here")
	}
	if len(f2.steps) != 0 || len(finished) != 2 {
		t.Errorf("first suspension: follow-up steps %q, finished %q; want none, two pendings", f2.steps, finished)
	}
}
