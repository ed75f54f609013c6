package agentrunner_test

import (
	"context"
	"strings"
	"testing"

	"github.com/slackapprove/slackbot/agentrunner"
)

type fixedSource []*agentrunner.Tool

func (s fixedSource) Tools() []*agentrunner.Tool { return s }

func TestToolboxIsSharedWithTheRunner(t *testing.T) {
	mk := func(name string) *agentrunner.Tool {
		return agentrunner.NewTool(name, "test tool", func(context.Context, *agentrunner.ToolContext, struct{}) (any, error) { return name, nil })
	}
	box, err := agentrunner.NewToolbox([]*agentrunner.Tool{mk("a")}, fixedSource{mk("a"), mk("b")})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range box.Tools() {
		names = append(names, tool.Name())
	}
	if got := strings.Join(names, ","); got != "a,b" {
		t.Errorf("toolbox tools = %s, want a,b (a source's tool of a taken name is left out)", got)
	}
	r, err := agentrunner.NewRunner(agentrunner.TestModel{}, nil, agentrunner.WithToolbox(box))
	if err != nil {
		t.Fatal(err)
	}
	if r.Toolbox() != box {
		t.Error("the runner does not run with the toolbox it was given")
	}
	if _, ok := r.Tool("b"); !ok {
		t.Error("the runner does not see the toolbox's source tools")
	}
	if _, err := agentrunner.NewRunner(agentrunner.TestModel{}, []*agentrunner.Tool{mk("c")}, agentrunner.WithToolbox(box)); err == nil {
		t.Error("NewRunner accepted tools besides a toolbox: two places to look for a tool")
	}
	if _, err := agentrunner.NewToolbox([]*agentrunner.Tool{mk("a"), mk("a")}); err == nil {
		t.Error("NewToolbox accepted two tools of one name")
	}
}
