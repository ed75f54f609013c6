package runs

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/slackapprove/slackbot/agentrunner"
)

// TestFinishQueuesFollowups: with Jobs, a finished run's answer and its
// cards' update are queued before any chat call, the run is marked done
// only after that, and the queued work is then done at once (the answer
// posted once, the jobs acknowledged).
func TestFinishQueuesFollowups(t *testing.T) {
	w := newWorld()
	deps := &Deps{Origin: testOrigin, runID: "run_1"}
	deps.Asked(testToken, time.Time{})
	res := &agentrunner.RunResult{RunID: "run_1", Status: agentrunner.StatusComplete, Output: "refunded <@U0ALL>", Messages: refundReturn()}
	if !w.rs.Finish(t.Context(), deps, res, nil) {
		t.Fatal("Finish reported the run as not ended here")
	}
	want := []string{
		"outcome " + testToken + "/" + testCallID + " ran",
		"queue answer",
		"queue cards " + testToken,
		"done " + testToken,
		"answer run_1/" + testToken + "/complete look=false",
		"ack 1",
		"update cards " + testToken,
		"ack 2",
	}
	if got := w.trail.String(); got != strings.Join(want, ", ") {
		t.Errorf("steps:\n got %s\nwant %s", got, strings.Join(want, ", "))
	}
	var ans Answer
	if err := json.Unmarshal([]byte(w.jobs.data["1"]), &ans); err != nil {
		t.Fatal(err)
	}
	if want := (Answer{Key: "run_1/" + testToken + "/complete", Channel: testOrigin.Channel, ThreadTS: testOrigin.ThreadTS, Text: "refunded &lt;@U0ALL>"}); ans != want {
		t.Errorf("queued answer: got %+v, want %+v (escaped)", ans, want)
	}
	if ended, _ := w.metrics.got(); len(ended) != 1 || ended[0] != "complete" {
		t.Errorf("runs ended: %q, want [complete]", ended)
	}
	// The job queue's retry of the same answer posts nothing more.
	w.trail.reset()
	if err := w.rs.AnswerJob(t.Context(), w.jobs.data["1"]); err != nil {
		t.Fatal(err)
	}
	if got := w.trail.String(); got != "" {
		t.Errorf("an answer posted once was posted again: %s", got)
	}
}

// TestPostAnswerAfterAnUncertainAttempt: after an attempt that may have
// posted the answer, the next one looks for it first; while a live
// process posts it, ErrAnswerBusy; a malformed job is ErrMalformedJob.
func TestPostAnswerAfterAnUncertainAttempt(t *testing.T) {
	w := newWorld()
	ans := Answer{Key: "run_2/tok/complete", Channel: "C1", Text: "done"}
	w.answers.marks = map[string]string{ans.Key: "posting dead/attempt", "busy/key": "busy proc2/x"}
	if err := w.rs.PostAnswer(t.Context(), ans); err != nil {
		t.Fatal(err)
	}
	if got, want := w.trail.String(), "answer run_2/tok/complete look=true"; got != want {
		t.Errorf("got %s, want %s", got, want)
	}
	if err := w.rs.PostAnswer(t.Context(), Answer{Key: "busy/key", Channel: "C1"}); !errors.Is(err, ErrAnswerBusy) {
		t.Errorf("an answer a live process posts: got %v, want ErrAnswerBusy", err)
	}
	for _, data := range []string{"{", `{"channel":"C1"}`, `{"key":"k"}`} {
		if err := w.rs.AnswerJob(t.Context(), data); !errors.Is(err, ErrMalformedJob) {
			t.Errorf("job %s: got %v, want ErrMalformedJob", data, err)
		}
	}
}
