package agentrunner_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"

	"github.com/slackapprove/slackbot/agentrunner"
)

type observedKey struct{}

// The tool observer is told of each tool as it runs, the tool runs in the
// context the observer returns, and the observer is told how it ended.
func TestToolObserver(t *testing.T) {
	var (
		mu   sync.Mutex
		seen []string
	)
	inside := map[string]bool{}
	tool := func(name string, err error) *agentrunner.Tool {
		return agentrunner.NewTool(name, "", func(ctx context.Context, _ *agentrunner.ToolContext, _ struct{}) (any, error) {
			mu.Lock()
			defer mu.Unlock()
			inside[name] = ctx.Value(observedKey{}) == name
			return "ok", err
		})
	}
	observe := func(ctx context.Context, tc *agentrunner.ToolContext) (context.Context, func(error)) {
		mu.Lock()
		defer mu.Unlock()
		seen = append(seen, "start "+tc.ToolName)
		return context.WithValue(ctx, observedKey{}, tc.ToolName), func(err error) {
			mu.Lock()
			defer mu.Unlock()
			seen = append(seen, "end "+tc.ToolName+" "+errText(err))
		}
	}
	r := newRunner(t, agentrunner.TestModel{}, []*agentrunner.Tool{tool("fine", nil), tool("broken", errors.New("disk full"))},
		agentrunner.WithToolObserver(observe))
	res, err := r.Run(t.Context(), agentrunner.RunInput{Prompt: "go"})
	if err != nil {
		t.Fatal(err)
	}
	if res.Output == "" {
		t.Errorf("the run ended without output: %+v", res)
	}
	want := []string{"start fine", "end fine ", "start broken", "end broken disk full"}
	if !slices.Equal(seen, want) {
		t.Errorf("observed: got %q, want %q", seen, want)
	}
	if !inside["fine"] || !inside["broken"] {
		t.Errorf("tools ran in the observer's context: got %v, want both", inside)
	}
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
