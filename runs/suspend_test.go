package runs

import (
	"strings"
	"testing"
	"time"

	"github.com/slackapprove/slackbot/agentrunner"
)

// TestFinishSuspendedRun: a run that suspended on its next token posts
// nothing in the thread and is counted as pending; the token it got past
// has its cards updated and is done with, the one it waits on is not.
func TestFinishSuspendedRun(t *testing.T) {
	w := newWorld()
	deps := &Deps{Origin: testOrigin, runID: "run_1"}
	deps.Asked(testToken, time.Time{})
	next := agentrunner.NewToken()
	deps.Asked(next, time.Time{})
	res := &agentrunner.RunResult{RunID: "run_1", Status: agentrunner.StatusSuspended, Suspended: &agentrunner.Suspension{Token: next},
		Pending: &agentrunner.DeferredToolRequests{}, Messages: refundReturn()}
	if !w.rs.Finish(t.Context(), deps, res, nil) {
		t.Fatal("Finish reported the run as not ended here")
	}
	want := []string{
		"outcome " + testToken + "/" + testCallID + " ran",
		"queue cards " + testToken,
		"done " + testToken,
		"update cards " + testToken,
		"ack 1",
	}
	if got := w.trail.String(); got != strings.Join(want, ", ") {
		t.Errorf("steps:\n got %s\nwant %s", got, strings.Join(want, ", "))
	}
	if ended, _ := w.metrics.got(); len(ended) != 1 || ended[0] != "pending" {
		t.Errorf("runs ended: %q, want [pending]", ended)
	}

	// A first suspension (no earlier token) does nothing but count.
	w.trail.reset()
	first := &Deps{Origin: testOrigin, runID: "run_2"}
	first.Asked(next, time.Time{})
	if !w.rs.Finish(t.Context(), first, res, nil) {
		t.Fatal("Finish reported the run as not ended here")
	}
	if ended, _ := w.metrics.got(); w.trail.String() != "" || len(ended) != 2 {
		t.Errorf("first suspension: steps %q, ended %q; want none, two pendings", w.trail.String(), ended)
	}
}
