package agentrunner_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/slackapprove/slackbot/agentrunner"
)

type nameArgs struct {
	Name string `json:"name"`
}

func echoTool(name string) *agentrunner.Tool {
	return agentrunner.NewTool(name, "Echo.", func(_ context.Context, tc *agentrunner.ToolContext, a nameArgs) (any, error) {
		return tc.ToolName + " " + a.Name, nil
	})
}

func TestTestModel(t *testing.T) {
	tools := []*agentrunner.Tool{echoTool("one"), echoTool("two"), echoTool("three")}
	tests := []struct {
		name  string
		model agentrunner.TestModel
		tools []*agentrunner.Tool
		want  string
	}{
		{"all tools", agentrunner.TestModel{}, tools, `{"one":"one a","three":"three a","two":"two a"}`},
		{"some tools", agentrunner.TestModel{CallTools: []string{"two"}}, tools, `{"two":"two a"}`},
		{"no tools", agentrunner.TestModel{}, nil, `success (no tool calls)`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := agentrunner.NewRunner(tt.model, tt.tools)
			if err != nil {
				t.Fatal(err)
			}
			res, err := r.Run(t.Context(), agentrunner.RunInput{Prompt: "go"})
			if err != nil {
				t.Fatal(err)
			}
			if res.Output != tt.want {
				t.Errorf("got %s, want %s", res.Output, tt.want)
			}
		})
	}
}

// A new prompt after a final answer starts a new turn: the tools are called
// again, with ids unique in the history.
func TestTestModelTurns(t *testing.T) {
	r, err := agentrunner.NewRunner(agentrunner.TestModel{}, []*agentrunner.Tool{echoTool("one")})
	if err != nil {
		t.Fatal(err)
	}
	first, err := r.Run(t.Context(), agentrunner.RunInput{Prompt: "go"})
	if err != nil {
		t.Fatal(err)
	}
	second, err := r.Run(t.Context(), agentrunner.RunInput{Prompt: "again", History: first.Messages})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := second.Output, `{"one":"one a"}`; got != want {
		t.Errorf("second turn output: got %s, want %s", got, want)
	}
	seen := map[string]bool{}
	for _, m := range second.Messages {
		for _, c := range m.ToolCalls() {
			if seen[c.ToolCallID] {
				t.Errorf("tool call id %s used twice", c.ToolCallID)
			}
			seen[c.ToolCallID] = true
		}
	}
	if len(seen) != 2 {
		t.Errorf("got %d tool calls over two turns, want 2", len(seen))
	}
}

// A retry prompt makes TestModel call the tool again; the tool sees the
// retry count.
func TestTestModelRetry(t *testing.T) {
	flaky := agentrunner.NewTool("flaky", "Fails once.", func(_ context.Context, tc *agentrunner.ToolContext, a nameArgs) (any, error) {
		if tc.Retry == 0 {
			return nil, agentrunner.Retry("try again")
		}
		return "ok after " + a.Name, nil
	})
	r, err := agentrunner.NewRunner(agentrunner.TestModel{}, []*agentrunner.Tool{flaky, echoTool("steady")})
	if err != nil {
		t.Fatal(err)
	}
	res, err := r.Run(t.Context(), agentrunner.RunInput{Prompt: "go"})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := res.Output, `{"flaky":"ok after a","steady":"steady a"}`; got != want {
		t.Errorf("output: got %s, want %s", got, want)
	}
	var retried bool
	for _, m := range res.Messages {
		for _, c := range m.ToolCalls() {
			retried = retried || strings.HasSuffix(c.ToolCallID, "_retry")
		}
	}
	if !retried {
		t.Error("no retried tool call in the history")
	}
}

func TestGenerateArgs(t *testing.T) {
	tests := []struct {
		name, schema, want string
	}{
		{"empty", ``, `{}`},
		{"scalars", `{"type":"object","properties":{"s":{"type":"string"},"n":{"type":"number"},"i":{"type":"integer"},"b":{"type":"boolean"},"a":{"type":"array","items":{"type":"string"}},"z":{"type":"null"}}}`,
			`{"a":[],"b":false,"i":0,"n":0,"s":"a","z":null}`},
		{"required only", `{"type":"object","properties":{"s":{"type":"string"},"opt":{"type":"string"}},"required":["s"]}`, `{"s":"a"}`},
		{"enum const default", `{"type":"object","properties":{"e":{"enum":["x","y"]},"c":{"const":7},"d":{"type":"string","default":"dd"}}}`, `{"c":7,"d":"dd","e":"x"}`},
		{"bounds", `{"type":"object","properties":{"lo":{"type":"integer","minimum":3},"ex":{"type":"number","exclusiveMinimum":0},"hi":{"type":"integer","maximum":-2},"s":{"type":"string","minLength":3},"a":{"type":"array","minItems":2,"items":{"type":"boolean"}}}}`,
			`{"a":[false,false],"ex":1,"hi":-2,"lo":3,"s":"aaa"}`},
		{"nested and nullable", `{"type":"object","properties":{"o":{"type":"object","properties":{"x":{"type":["null","string"]}}},"u":{"anyOf":[{"type":"null"},{"type":"integer"}]}}}`,
			`{"o":{"x":"a"},"u":0}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := agentrunner.GenerateArgs(json.RawMessage(tt.schema))
			if err != nil {
				t.Fatal(err)
			}
			if !jsonEqual(got, json.RawMessage(tt.want)) {
				t.Errorf("got %s, want %s", got, tt.want)
			}
		})
	}
	if _, err := agentrunner.GenerateArgs(json.RawMessage(`{`)); err == nil {
		t.Error("bad schema: got no error, want one")
	}
}

// Arguments TestModel generates pass the tool's own validation.
func TestGenerateArgsValidate(t *testing.T) {
	type args struct {
		Name   string   `json:"name" jsonschema:"minLength=2"`
		Amount float64  `json:"amount" jsonschema:"minimum=1,maximum=500"`
		Mode   string   `json:"mode" jsonschema:"enum=fast,enum=slow"`
		Tags   []string `json:"tags" jsonschema:"minItems=1"`
		Note   string   `json:"note,omitempty"`
	}
	tool := agentrunner.NewTool("t", "", func(context.Context, *agentrunner.ToolContext, args) (any, error) { return nil, nil })
	gen, err := agentrunner.GenerateArgs(tool.Schema())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tool.ValidateArgs(gen); err != nil {
		t.Errorf("generated %s: %v", gen, err)
	}
}
