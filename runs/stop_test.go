package runs

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/slackapprove/slackbot/agentrunner"
	"github.com/slackapprove/slackbot/approval"
)

// Stop cancels the runs in flight and those started after it: they end
// without reporting anything (they resume elsewhere), and Wait returns.
func TestRunsStopCancelsRuns(t *testing.T) {
	entered := make(chan struct{}, 2)
	var cancelled atomic.Int32
	model := agentrunner.FunctionModel(func(ctx context.Context, _ []agentrunner.Message, _ agentrunner.RequestParams) (agentrunner.Message, error) {
		entered <- struct{}{}
		<-ctx.Done()
		cancelled.Add(1)
		return agentrunner.Message{}, ctx.Err()
	})
	runner, err := agentrunner.NewRunner(model, nil)
	if err != nil {
		t.Fatal(err)
	}
	m := &fakeMetrics{}
	rs := &Runs{Runner: runner, Metrics: m}
	rs.Start("first", approval.Origin{})
	select {
	case <-entered:
	case <-time.After(10 * time.Second):
		t.Fatal("the run never called the model")
	}
	rs.Stop()
	rs.Stop() // idempotent
	rs.Start("after stop", approval.Origin{})
	waited := make(chan struct{})
	go func() { rs.Wait(); close(waited) }()
	select {
	case <-waited:
	case <-time.After(10 * time.Second):
		t.Fatal("Wait did not return after Stop: the runs were not cancelled")
	}
	if cancelled.Load() < 1 {
		t.Error("the running model call did not see its context end")
	}
	if ended, _ := m.got(); len(ended) != 0 {
		t.Errorf("stopped runs reported ends %q, want none (they resume elsewhere)", ended)
	}
}
