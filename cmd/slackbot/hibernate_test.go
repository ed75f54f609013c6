package main

import (
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/slackapprove/slackbot/approval"
	"github.com/slackapprove/slackbot/bot"
	"github.com/slackapprove/slackbot/internal/approvaltest"
	"github.com/slackapprove/slackbot/internal/slackfake"
	"github.com/slackapprove/slackbot/runs"
)

const deletedAnswer = `{"delete_customer":"deleted a"}`

// resumed returns a's resumes by path.
func resumed(t *testing.T, a *app, path string) float64 {
	t.Helper()
	return counterValue(t, a.metrics.resumes.WithLabelValues(path))
}

// approveThrough clicks Approve on card through base as alice and waits
// for the answer in thread.
func (e *env) approveThrough(base string, card slackfake.Message, thread string) string {
	e.t.Helper()
	postSigned(e.t, base+"/slack/interactivity", "application/x-www-form-urlencoded", e.clickPayload(alice, testTeam, card, bot.ActionIDApprove))
	return e.waitReply(general, thread)
}

// A Slack-started run whose call waits for a person leaves nothing
// running: once its cards are posted, the goroutines are back to what
// they were before it (polled to a bound), and Runs holds nothing.
//
// Not parallel: it counts the process's goroutines, which tests running
// beside it would add to.
func TestSlackRunHibernatesWhileItWaits(t *testing.T) {
	e := newEnv(t, envOptions{})
	// A first run, to the end, opens the connections later runs reuse.
	thread := e.mention(carol, general, "delete customer a")
	if got := e.approveThrough(e.srv.URL, e.waitCards(1)[0], thread); got != deletedAnswer {
		t.Fatalf("first run: answer %q", got)
	}
	time.Sleep(200 * time.Millisecond)
	before := runtime.NumGoroutine()
	pending := counterValue(t, e.app.metrics.runs.WithLabelValues("pending"))

	const n = 20
	threads := make([]string, n)
	for i := range threads {
		threads[i] = e.mention(carol, general, "delete customer a")
	}
	cards := e.waitCards(1 + n)
	e.waitFor("the runs to suspend", func() bool { return counterValue(t, e.app.metrics.runs.WithLabelValues("pending")) == pending+n })
	// A parked run held about three goroutines (the run, its context's
	// watcher, its wait): n of them would be far above this bound.
	deadline := time.Now().Add(10 * time.Second)
	for runtime.NumGoroutine() > before+n/4 {
		if time.Now().After(deadline) {
			t.Fatalf("%d goroutines with %d runs waiting, %d before: the runs are parked, not suspended", runtime.NumGoroutine(), n, before)
		}
		time.Sleep(20 * time.Millisecond)
	}
	idle := make(chan struct{})
	go func() { e.app.runs.Wait(); close(idle) }()
	select {
	case <-idle:
	case <-time.After(5 * time.Second):
		t.Fatal("Runs still holds runs while they wait for people")
	}
	if got := e.replies(general, threads[0]); len(got) != 0 {
		t.Errorf("a suspended run answered in its thread: %q", got)
	}
	// Each still resumes, directly, on a click (cards and threads need
	// not be in the same order).
	postSigned(t, e.srv.URL+"/slack/interactivity", "application/x-www-form-urlencoded", e.clickPayload(alice, testTeam, cards[1], bot.ActionIDApprove))
	var answers []string
	e.waitFor("the clicked run's answer", func() bool {
		answers = nil
		for _, th := range threads {
			answers = append(answers, e.replies(general, th)...)
		}
		return len(answers) > 0
	})
	if len(answers) != 1 || answers[0] != deletedAnswer {
		t.Errorf("answers after one click: %q, want one %q", answers, deletedAnswer)
	}
}

// The click on the replica that started the run resumes it there, at
// once, without the resume queue.
func TestClickResumesTheRunDirectly(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{})
	thread := e.mention(carol, general, "delete customer a")
	if got := e.approveThrough(e.srv.URL, e.waitCards(1)[0], thread); got != deletedAnswer {
		t.Fatalf("answer %q, want %q", got, deletedAnswer)
	}
	if d, q := resumed(t, e.app, "direct"), resumed(t, e.app, "queue"); d != 1 || q != 0 {
		t.Errorf("resumes: %v direct, %v by the queue; want 1, 0", d, q)
	}
	if n := len(e.tools.Runs("delete_customer")); n != 1 {
		t.Errorf("the tool ran %d times, want 1", n)
	}
}

// A click on replica B, for a run A started, resumes the run on B; A does
// nothing.
func TestClickOnAnotherReplicaResumesThere(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{})
	b, bURL := e.replica("replica-b")
	thread := e.mention(carol, general, "delete customer a")
	if got := e.approveThrough(bURL, e.waitCards(1)[0], thread); got != deletedAnswer {
		t.Fatalf("answer %q, want %q", got, deletedAnswer)
	}
	time.Sleep(runs.DirectFirst + 500*time.Millisecond) // a queue resume would show by now
	if d := resumed(t, b, "direct"); d != 1 {
		t.Errorf("B resumed %v runs directly, want 1", d)
	}
	for name, a := range map[string]*app{"A": e.app, "B": b} {
		if q := resumed(t, a, "queue"); q != 0 {
			t.Errorf("%s resumed %v runs from the queue, want 0", name, q)
		}
	}
	if d := resumed(t, e.app, "direct"); d != 0 {
		t.Errorf("A resumed %v runs directly, want 0", d)
	}
	if got := e.replies(general, thread); len(got) != 1 {
		t.Errorf("answers: %q, want one", got)
	}
}

// A decision recorded by a process that dies before it resumes the run
// (here: a Service without the Resumed port, as that process was) leaves
// the run to the resume queue, which resumes it once.
func TestDecisionWithoutDirectResumeGoesThroughTheQueue(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{})
	thread := e.mention(carol, general, "delete customer a")
	e.waitCards(1)
	e.waitFor("the run to suspend", func() bool { return counterValue(t, e.app.metrics.runs.WithLabelValues("pending")) == 1 })
	r := e.pendingRequest()
	dead := approval.New(approval.Config{Store: e.app.store, Poster: approvaltest.NewPoster(), Routes: e.app.deps.Routes})
	c := r.Calls[0]
	_, err := dead.Decide(t.Context(), r.Token, approval.Decider{User: alice, Message: c.Message},
		approval.Decision{CallID: c.ID, By: alice, Action: approval.ActionApprove})
	if err != nil {
		t.Fatal(err)
	}
	dead.Close()
	deadline := time.Now().Add(runs.DirectFirst + 3*runs.ResumeReclaimIdle)
	for len(e.replies(general, thread)) == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the queue did not resume the run")
		}
		time.Sleep(50 * time.Millisecond)
	}
	if got := e.replies(general, thread); len(got) != 1 || got[0] != deletedAnswer {
		t.Errorf("answers %q, want one %q", got, deletedAnswer)
	}
	if d, q := resumed(t, e.app, "direct"), resumed(t, e.app, "queue"); d != 0 || q != 1 {
		t.Errorf("resumes: %v direct, %v by the queue; want 0, 1", d, q)
	}
}

// The expiry sweep of this process resumes the run at once with the
// timeout denial; the tool never runs.
func TestExpiryResumesTheRunWithTheDenial(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{})
	thread := e.mention(carol, general, "delete customer a")
	e.waitCards(1)
	e.waitFor("the run to suspend", func() bool { return counterValue(t, e.app.metrics.runs.WithLabelValues("pending")) == 1 })
	e.clock.Add(31 * time.Minute)
	got := e.waitReply(general, thread)
	if want := "No decision on this tool call arrived: the request expired"; !strings.Contains(got, want) {
		t.Errorf("answer %q, want it to contain %q", got, want)
	}
	if d := resumed(t, e.app, "direct"); d != 1 {
		t.Errorf("resumed %v runs directly, want 1", d)
	}
	if n := len(e.tools.Runs("delete_customer")); n != 0 {
		t.Errorf("the tool ran %d times without approval", n)
	}
}

// pendingRequest returns the one open request of the test's run.
func (e *env) pendingRequest() *approval.Request {
	e.t.Helper()
	tokens, err := e.app.deps.Redis.ZRange(e.t.Context(), e.prefix+"deadlines", 0, -1).Result()
	if err != nil || len(tokens) != 1 {
		e.t.Fatalf("open tokens: %q, %v; want one", tokens, err)
	}
	r, err := e.app.store.Get(e.t.Context(), tokens[0])
	if err != nil {
		e.t.Fatal(err)
	}
	return r
}

// Approvals racing on two replicas for a call that needs one: one of them
// resolves the request, and its replica alone resumes the run, once.
func TestRacingDecisionsOnTwoReplicasResumeOnce(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{})
	b, bURL := e.replica("replica-b")
	thread := e.mention(carol, general, "delete customer a")
	card := e.waitCards(1)[0]
	done := make(chan struct{})
	for _, c := range []struct{ base, user string }{{e.srv.URL, alice}, {bURL, bob}} {
		go func() {
			defer func() { done <- struct{}{} }()
			postSigned(t, c.base+"/slack/interactivity", "application/x-www-form-urlencoded", e.clickPayload(c.user, testTeam, card, bot.ActionIDApprove))
		}()
	}
	<-done
	<-done
	if got := e.waitReply(general, thread); got != deletedAnswer {
		t.Errorf("answer %q, want %q", got, deletedAnswer)
	}
	time.Sleep(runs.DirectFirst + 500*time.Millisecond) // a second resume would show by now
	direct := resumed(t, e.app, "direct") + resumed(t, b, "direct")
	queued := resumed(t, e.app, "queue") + resumed(t, b, "queue")
	if direct != 1 || queued != 0 {
		t.Errorf("resumes across the replicas: %v direct, %v by the queue; want 1, 0", direct, queued)
	}
	if got := e.replies(general, thread); len(got) != 1 {
		t.Errorf("answers %q, want one", got)
	}
	if n := len(e.tools.Runs("delete_customer")); n != 1 {
		t.Errorf("the tool ran %d times, want 1", n)
	}
}
