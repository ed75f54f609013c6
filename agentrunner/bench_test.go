package agentrunner_test

import (
	"context"
	"runtime"
	"sync"
	"testing"

	"github.com/slackapprove/slackbot/agentrunner"
)

// BenchmarkParkedRuns measures what a run costs while it waits for a
// person: b.N runs park on their resume tokens (AskHandler + MemoryTokens),
// and the heap and stack in use are compared before and after. Run it with
// a fixed count so the figure is per run, not per warm-up:
//
//	go test -run '^$' -bench ParkedRuns -benchtime 10000x ./agentrunner/
func BenchmarkParkedRuns(b *testing.B) {
	ctx := b.Context()
	ev := agentrunner.NewMemoryTokens()
	tokens := make(chan string, b.N)
	h := &agentrunner.AskHandler{Tokens: ev, Ask: func(_ context.Context, _ *agentrunner.RunContext, _ agentrunner.DeferredToolRequests, token string) (*agentrunner.DeferredToolResults, error) {
		tokens <- token
		return nil, nil
	}}
	r, err := agentrunner.NewRunner(agentrunner.TestModel{}, approvalTools("transfer"), agentrunner.WithHandlers(h))
	if err != nil {
		b.Fatal(err)
	}
	parked := make([]string, 0, b.N)
	var wg sync.WaitGroup
	wg.Add(b.N)

	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	b.ResetTimer()
	for range b.N {
		go func() {
			defer wg.Done()
			if _, err := r.Run(ctx, agentrunner.RunInput{Prompt: "transfer"}); err != nil {
				b.Error(err)
			}
		}()
	}
	for range b.N {
		parked = append(parked, <-tokens)
	}
	b.StopTimer()
	runtime.GC()
	runtime.ReadMemStats(&after)
	b.ReportMetric(float64(int64(after.HeapAlloc)-int64(before.HeapAlloc))/float64(b.N), "bytes/run")
	b.ReportMetric(float64(int64(after.StackInuse)-int64(before.StackInuse))/float64(b.N), "stack-bytes/run")

	approve := agentrunner.NewDeferredToolResults()
	approve.Approvals[transferID] = agentrunner.Approve()
	for _, tok := range parked {
		if err := ev.Resolve(ctx, tok, approve); err != nil {
			b.Fatal(err)
		}
	}
	wg.Wait()
}
