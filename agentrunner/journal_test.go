package agentrunner_test

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/slackapprove/slackbot/agentrunner"
)

// memJournal is a Journal in memory, as a store would keep it.
type memJournal struct {
	mu      sync.Mutex
	started map[string]bool
	rets    map[string]agentrunner.Part
	cps     map[string][]byte // the run's last checkpoint, as JSON
	begins  int
}

func newMemJournal() *memJournal {
	return &memJournal{started: map[string]bool{}, rets: map[string]agentrunner.Part{}, cps: map[string][]byte{}}
}

func (j *memJournal) Begin(_ context.Context, runID string, c agentrunner.ToolCallPart, at agentrunner.Checkpoint) (agentrunner.Begun, error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.begins++
	var at64 []byte
	if at.Messages != nil {
		at64, _ = json.Marshal(at.Messages)
	}
	var cp []agentrunner.Message
	if b := j.cps[runID]; b != nil {
		if err := json.Unmarshal(b, &cp); err != nil {
			return agentrunner.Begun{}, err
		}
	}
	if len(cp) > at.Step || (at64 != nil && len(cp) == at.Step && string(at64) != string(j.cps[runID])) {
		return agentrunner.Begun{Progress: cp}, nil
	}
	if at64 != nil && len(cp) < at.Step {
		j.cps[runID] = at64
	}
	k := runID + "/" + c.ToolCallID
	if p, ok := j.rets[k]; ok {
		return agentrunner.Begun{Return: &p}, nil
	}
	if j.started[k] {
		return agentrunner.Begun{}, agentrunner.ErrOutcomeLost
	}
	j.started[k] = true
	return agentrunner.Begun{}, nil
}

func (j *memJournal) End(_ context.Context, runID string, c agentrunner.ToolCallPart, ret *agentrunner.Part) error {
	j.mu.Lock()
	defer j.mu.Unlock()
	k := runID + "/" + c.ToolCallID
	if ret == nil {
		delete(j.started, k)
		return nil
	}
	j.rets[k] = *ret
	return nil
}

// TestJournalRunsApprovedToolOnce: an approved call resumed twice (a
// second process took the run over after the first ran the tool) runs its
// tool once, and the second resume gets the recorded return; a call
// started but never recorded is not run, and the model hears that its
// outcome was lost.
func TestJournalRunsApprovedToolOnce(t *testing.T) {
	var ran atomic.Int32
	risky := agentrunner.NewTool("delete", "Delete a customer.", func(_ context.Context, _ *agentrunner.ToolContext, a customerArgs) (any, error) {
		ran.Add(1)
		return "deleted " + a.CustomerID, nil
	}, agentrunner.RequiresApproval())
	j := newMemJournal()
	r := newRunner(t, agentrunner.TestModel{}, []*agentrunner.Tool{risky}, agentrunner.WithJournal(j))
	first, err := r.Run(t.Context(), agentrunner.RunInput{RunID: "run-1", Prompt: "go", AllowPending: true})
	if err != nil || first.Status != agentrunner.StatusPending || len(first.Pending.Approvals) != 1 {
		t.Fatalf("first run: %v, %+v", err, first)
	}
	id := first.Pending.Approvals[0].ToolCallID
	in := agentrunner.RunInput{RunID: "run-1", History: first.Messages, Pending: first.Pending,
		Results: results(map[string]agentrunner.ApprovalResult{id: agentrunner.Approve()}, nil)}
	var outs []string
	for range 2 {
		res, err := r.Run(t.Context(), in)
		if err != nil || res.Status != agentrunner.StatusComplete {
			t.Fatalf("resume: %v, %+v", err, res)
		}
		outs = append(outs, toolReturn(res.Messages, id).ReturnText())
	}
	if got := ran.Load(); got != 1 {
		t.Errorf("the tool ran %d times across two resumes, want 1", got)
	}
	if outs[0] != outs[1] || !strings.HasPrefix(outs[0], "deleted ") {
		t.Errorf("returns of the two resumes: %q, want the same tool return twice", outs)
	}

	// Started, never recorded: the process died while the tool ran.
	lost := newMemJournal()
	lost.started["run-2/"+id] = true
	r2 := newRunner(t, agentrunner.TestModel{}, []*agentrunner.Tool{risky}, agentrunner.WithJournal(lost))
	in.RunID = "run-2"
	res, err := r2.Run(t.Context(), in)
	if err != nil || res.Status != agentrunner.StatusComplete {
		t.Fatalf("resume after a lost outcome: %v, %+v", err, res)
	}
	p := toolReturn(res.Messages, id)
	if p.Outcome != agentrunner.OutcomeFailed || p.ReturnText() != agentrunner.OutcomeLostText {
		t.Errorf("lost outcome: the model got %+v, want a failed return %q", p, agentrunner.OutcomeLostText)
	}
	if got := ran.Load(); got != 1 {
		t.Errorf("the tool ran %d times, want still 1: a started call is not run again", got)
	}
}

func toolReturn(msgs []agentrunner.Message, id string) agentrunner.Part {
	for _, m := range msgs {
		for _, p := range m.Parts {
			if p.PartKind == agentrunner.PartToolReturn && p.ToolCallID == id {
				return p
			}
		}
	}
	return agentrunner.Part{}
}
