package approval_test

import (
	"context"
	"sync"
	"testing"

	"github.com/slackapprove/slackbot/agentrunner"
	"github.com/slackapprove/slackbot/approval"
)

// resumedPort records what Config.Resumed is told.
type resumedPort struct {
	mu   sync.Mutex
	runs []string // token/run
}

func (p *resumedPort) resumed(_ context.Context, token, runID string) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.runs = append(p.runs, token+"/"+runID)
	return nil
}

func (p *resumedPort) got() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.runs...)
}

// The decision that resolves a run's request, and a failure, hand the run
// to the Resumed port once; a vote that resolves nothing does not.
func TestEndOfARunsRequestResumesItHere(t *testing.T) {
	f := newFixture(t)
	port := &resumedPort{}
	f.Svc = approval.New(approval.Config{
		Store: f.Store, Poster: f.Poster, Directory: directory{}, Routes: f.Svc.Routes(), Resumed: port.resumed,
	})
	r := f.Open(t, "UERIN", call("c1", "deploy", `{"env":"staging"}`))
	if _, err := f.Click(t, r, "UALICE", "c1", approval.ActionApprove); err != nil {
		t.Fatal(err)
	}
	f.Svc.Close()
	if got := port.got(); len(got) != 0 {
		t.Fatalf("after one vote of two: resumed %q, want nothing", got)
	}
	if _, err := f.Click(t, r, "UBOB", "c1", approval.ActionApprove); err != nil {
		t.Fatal(err)
	}
	if _, err := f.Click(t, r, "UCAROL", "c1", approval.ActionApprove); err == nil {
		t.Fatal("a click after the resolution succeeded")
	}
	f.Svc.Close()
	want := r.Token + "/" + r.RunID
	if got := port.got(); len(got) != 1 || got[0] != want {
		t.Fatalf("after the resolving vote: resumed %q, want [%s]", got, want)
	}

	r2 := f.Open(t, "UERIN", call("c2", "deploy", `{"env":"staging"}`))
	if _, err := f.Svc.Fail(t.Context(), r2.Token, "asking failed"); err != nil {
		t.Fatal(err)
	}
	f.Svc.Close()
	if got := port.got(); len(got) != 2 || got[1] != r2.Token+"/"+r2.RunID {
		t.Fatalf("after Fail: resumed %q, want the failed run last", got)
	}

	// A call no route matches is denied in the ask: that resolves the
	// request at once, and the run continues here too.
	token := agentrunner.NewToken()
	rc := &agentrunner.RunContext{RunID: "run-unrouted", Deps: &approval.Origin{Team: "T1", Channel: "CGENERAL", User: "UERIN"}}
	if _, err := f.Svc.Ask(nil)(t.Context(), rc, agentrunner.DeferredToolRequests{Approvals: []agentrunner.ToolCallPart{call("c3", "rm", `{}`)}}, token); err != nil {
		t.Fatal(err)
	}
	f.Svc.Close()
	if got := port.got(); len(got) != 3 || got[2] != token+"/run-unrouted" {
		t.Fatalf("after an unrouted ask: resumed %q, want the run last", got)
	}
}
