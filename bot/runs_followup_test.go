package bot

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/slackapprove/slackbot/agentrunner"
	"github.com/slackapprove/slackbot/approval"
)

// recordingFollowups records what Runs.Finish hands to the durable queue,
// in order, and how many Slack calls had been made by then.
type recordingFollowups struct {
	mu     sync.Mutex
	slack  *recordingSlack
	steps  []string
	answer *Answer
	cards  []string
	done   []string
}

func (f *recordingFollowups) Queue(_ context.Context, a *Answer, cards []string) (Queued, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.steps = append(f.steps, "queue")
	if n := len(f.slack.Calls()); n != 0 {
		f.steps = append(f.steps, "slack called before queueing")
	}
	f.answer, f.cards = a, cards
	return queuedFunc(func(context.Context) {
		f.mu.Lock()
		defer f.mu.Unlock()
		f.steps = append(f.steps, "do")
	}), nil
}

func (f *recordingFollowups) Done(_ context.Context, _ string, tokens []string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.steps = append(f.steps, "done")
	f.done = tokens
	return nil
}

type queuedFunc func(context.Context)

func (q queuedFunc) Do(ctx context.Context) { q(ctx) }

// TestFinishQueuesFollowups: with Followups, a finished run's answer and
// its cards' update are queued before any Slack call, the run is marked
// done only after that, and the queued work is then done at once; Finish
// itself posts nothing (a process dying mid-post leaves the job).
func TestFinishQueuesFollowups(t *testing.T) {
	slackAPI := &recordingSlack{}
	approvals := newRecordingApprovals()
	approvals.a.State = approval.StateResolved
	approvals.a.Calls[0].Status = approval.CallApproved
	b := newSocketTestBot(t, slackAPI, approvals, nil, nil)
	f := &recordingFollowups{slack: slackAPI}
	rs := &Runs{Bot: b, Followups: f}
	t.Cleanup(rs.Stop)
	deps := &RunDeps{Origin: approvals.a.Origin, runID: "run_1"}
	deps.Asked(approvals.a.Token, time.Time{})
	res := &agentrunner.RunResult{RunID: "run_1", Status: agentrunner.StatusComplete, Output: "refunded",
		Messages: []agentrunner.Message{{Kind: agentrunner.KindRequest, Parts: []agentrunner.Part{
			agentrunner.ToolReturn("issue_refund", smCallID, json.RawMessage(`"refunded $50"`), agentrunner.OutcomeSuccess),
		}}}}
	if !rs.Finish(t.Context(), deps, res, nil) {
		t.Fatal("Finish reported the run as not ended here")
	}
	if got, want := strings.Join(f.steps, ","), "queue,done,do"; got != want {
		t.Errorf("steps: got %s, want %s", got, want)
	}
	if f.answer == nil || f.answer.Text != "refunded" || f.answer.Channel != "C0SUPPORT" || f.answer.ThreadTS != approvals.a.Origin.ThreadTS ||
		f.answer.Key != "run_1/"+approvals.a.Token+"/complete" {
		t.Errorf("queued answer: %+v", f.answer)
	}
	if len(f.cards) != 1 || f.cards[0] != approvals.a.Token || len(f.done) != 1 || f.done[0] != approvals.a.Token {
		t.Errorf("queued cards %v, done %v; want the run's token in both", f.cards, f.done)
	}
	if calls := slackAPI.Calls(); len(calls) != 0 {
		t.Errorf("Finish called Slack itself: %v", calls)
	}
}
