package agentrunner_test

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/slackapprove/slackbot/agentrunner"
)

// nested returns a JSON object holding n levels of arrays and objects in
// all, alternating, with a value at the bottom.
func nested(n int) string {
	var open, closing strings.Builder
	open.WriteString(`{"a":`)
	closing.WriteString(`}`)
	for i := 1; i < n; i++ {
		if i%2 == 1 {
			open.WriteString(`[`)
			closing.WriteString(`]`)
		} else {
			open.WriteString(`{"k":`)
			closing.WriteString(`}`)
		}
	}
	c := []rune(closing.String())
	for i, j := 0, len(c)-1; i < j; i, j = i+1, j-1 {
		c[i], c[j] = c[j], c[i]
	}
	return open.String() + `1` + string(c)
}

func TestCheckArgsDepth(t *testing.T) {
	quoted := func(s string) string { b, _ := json.Marshal(s); return string(b) }
	tests := []struct {
		name string
		args string
		deep bool
	}{
		{"empty", ``, false},
		{"null", `null`, false},
		{"flat", `{"a":1}`, false},
		{"at the limit", nested(agentrunner.MaxArgsDepth), false},
		{"one level too deep", nested(agentrunner.MaxArgsDepth + 1), true},
		{"bare arrays too deep", strings.Repeat("[", 20000) + strings.Repeat("]", 20000), true},
		{"unbalanced brackets too deep", strings.Repeat("[", 65), true},
		{"string form at the limit", quoted(nested(agentrunner.MaxArgsDepth)), false},
		{"string form too deep", quoted(nested(agentrunner.MaxArgsDepth + 1)), true},
		{"brackets inside strings do not count", `{"a":"` + strings.Repeat("[{", 100) + `"}`, false},
		{"escaped quotes do not end a string", `{"a":"\"` + strings.Repeat("[", 100) + `\\"}`, false},
		{"escaped backslash ends a string", `{"a":"\\"` + `,"b":` + strings.Repeat("[", 65) + strings.Repeat("]", 65) + `}`, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := agentrunner.CheckArgsDepth(json.RawMessage(tt.args))
			if got := errors.Is(err, agentrunner.ErrArgsTooDeep); got != tt.deep {
				t.Errorf("CheckArgsDepth: err = %v, want too deep %v", err, tt.deep)
			}
			part := agentrunner.ToolCallPart{ToolName: "t", Args: json.RawMessage(tt.args), ToolCallID: "c1"}
			if err := part.CheckArgs(); errors.Is(err, agentrunner.ErrArgsTooDeep) != tt.deep || (tt.deep && !strings.Contains(err.Error(), "c1")) {
				t.Errorf("CheckArgs: err = %v, want too deep %v naming c1", err, tt.deep)
			}
		})
	}
}

// ArgsObject, which every reader of a call's arguments goes through,
// refuses over-deep arguments.
func TestArgsObjectRefusesDeepArgs(t *testing.T) {
	part := agentrunner.ToolCallPart{ToolName: "t", Args: json.RawMessage(nested(agentrunner.MaxArgsDepth + 1)), ToolCallID: "c1"}
	if _, err := part.ArgsObject(); !errors.Is(err, agentrunner.ErrArgsTooDeep) {
		t.Errorf("ArgsObject: err = %v, want ErrArgsTooDeep", err)
	}
	part.Args = json.RawMessage(nested(agentrunner.MaxArgsDepth))
	if _, err := part.ArgsObject(); err != nil {
		t.Errorf("ArgsObject at the limit: %v", err)
	}
}

// A model's call with over-deep arguments never reaches the ask function:
// the model is told why in a retry prompt, and the run goes on.
func TestRunnerRefusesDeepArgsBeforeAsking(t *testing.T) {
	deep := `{"customer_id":"a","extra":` + nested(agentrunner.MaxArgsDepth+1) + `}`
	model := &recorder{model: agentrunner.FunctionModel(func(_ context.Context, msgs []agentrunner.Message, _ agentrunner.RequestParams) (agentrunner.Message, error) {
		if len(msgs) == 1 {
			return agentrunner.Message{Parts: []agentrunner.Part{agentrunner.ToolCall("delete_customer", json.RawMessage(deep), "d1")}}, nil
		}
		return agentrunner.Message{Parts: []agentrunner.Part{agentrunner.Text("gave up")}}, nil
	})}
	var asked atomic.Int32
	ask := &agentrunner.AskHandler{Tokens: agentrunner.NewMemoryTokens(), Ask: func(context.Context, *agentrunner.RunContext, agentrunner.DeferredToolRequests, string) (*agentrunner.DeferredToolResults, error) {
		asked.Add(1)
		return agentrunner.NewDeferredToolResults(), nil
	}}
	var ran atomic.Int32
	r := newRunner(t, model, []*agentrunner.Tool{deleteCustomerTool(&ran)}, agentrunner.WithHandlers(ask))
	res, err := r.Run(t.Context(), agentrunner.RunInput{Prompt: "delete"})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if res.Status != agentrunner.StatusComplete || asked.Load() != 0 || ran.Load() != 0 {
		t.Errorf("status %s, asked %d, ran %d; want complete, never asked, never ran", res.Status, asked.Load(), ran.Load())
	}
	parts := model.lastRequest()
	if len(parts) != 1 || parts[0].PartKind != agentrunner.PartRetryPrompt || !strings.Contains(parts[0].Content, "invalid arguments for delete_customer: arguments are nested deeper than 64 levels") {
		t.Errorf("last request = %+v, want a retry prompt saying the arguments are nested too deeply", parts)
	}
}

// AskHandler refuses over-deep calls in place, whoever built the requests,
// and asks about the others.
func TestAskHandlerRefusesDeepArgs(t *testing.T) {
	deep := json.RawMessage(nested(agentrunner.MaxArgsDepth + 1))
	var got []agentrunner.DeferredToolRequests
	h := &agentrunner.AskHandler{Tokens: agentrunner.NewMemoryTokens(), Ask: func(_ context.Context, _ *agentrunner.RunContext, req agentrunner.DeferredToolRequests, _ string) (*agentrunner.DeferredToolResults, error) {
		got = append(got, req)
		res := agentrunner.NewDeferredToolResults()
		for _, c := range req.Approvals {
			res.Approvals[c.ToolCallID] = agentrunner.Approve()
		}
		return res, nil
	}}
	req := agentrunner.DeferredToolRequests{
		Approvals: []agentrunner.ToolCallPart{{ToolName: "a", Args: deep, ToolCallID: "deep1"}, {ToolName: "a", Args: json.RawMessage(`{}`), ToolCallID: "ok1"}},
		Calls:     []agentrunner.ToolCallPart{{ToolName: "b", Args: deep, ToolCallID: "deep2"}},
		Metadata:  map[string]map[string]any{"deep1": {"x": 1}},
	}
	res, err := h.HandleDeferred(t.Context(), &agentrunner.RunContext{}, req)
	if err != nil {
		t.Fatalf("HandleDeferred: %v", err)
	}
	if len(got) != 1 || len(got[0].Approvals) != 1 || got[0].Approvals[0].ToolCallID != "ok1" || len(got[0].Calls) != 0 || len(got[0].Metadata) != 0 {
		t.Fatalf("asked %+v, want only ok1", got)
	}
	if !res.Approvals["ok1"].Approved {
		t.Errorf("ok1 = %+v, want approved", res.Approvals["ok1"])
	}
	if r := res.Approvals["deep1"]; r.Approved || !strings.Contains(r.DenialMessage(), "nested deeper than "+strconv.Itoa(agentrunner.MaxArgsDepth)) {
		t.Errorf("deep1 = %+v, want denied with the reason", r)
	}
	if r := res.Calls["deep2"]; !r.Failed || !strings.Contains(r.Message, "nested deeper") {
		t.Errorf("deep2 = %+v, want failed with the reason", r)
	}

	// Only over-deep calls: nothing is asked at all.
	got = nil
	req.Approvals = req.Approvals[:1]
	res, err = h.HandleDeferred(t.Context(), &agentrunner.RunContext{}, req)
	if err != nil || len(got) != 0 || res.Len() != 2 {
		t.Errorf("HandleDeferred = %d answers, %v; asked %d times; want 2 refusals, nothing asked", res.Len(), err, len(got))
	}
}
