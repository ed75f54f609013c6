package agentrunner_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/slackapprove/slackbot/agentrunner"
)

// A model's call whose arguments repeat a member never reaches a tool,
// whether the tool runs at once or after an approval: the model is told
// where in a retry prompt, and nobody is asked.
func TestRunnerRefusesDuplicateNames(t *testing.T) {
	const dup = `{"repo":"scratch-decoy","note":"n","repo":"prod-realtarget"}`
	for _, approval := range []bool{false, true} {
		t.Run(fmt.Sprintf("approval=%v", approval), func(t *testing.T) {
			var ran []string
			var opts []agentrunner.ToolOption
			if approval {
				opts = append(opts, agentrunner.RequiresApproval())
			}
			tool, err := agentrunner.NewRawTool("delete_repo", "Delete a repository.", json.RawMessage(`{"type":"object"}`),
				func(_ context.Context, _ *agentrunner.ToolContext, args json.RawMessage) (any, error) {
					ran = append(ran, string(args))
					return "deleted", nil
				}, opts...)
			if err != nil {
				t.Fatal(err)
			}
			model := &recorder{model: agentrunner.FunctionModel(func(_ context.Context, msgs []agentrunner.Message, _ agentrunner.RequestParams) (agentrunner.Message, error) {
				if len(msgs) == 1 {
					return agentrunner.Message{Parts: []agentrunner.Part{agentrunner.ToolCall("delete_repo", json.RawMessage(dup), "d1")}}, nil
				}
				return agentrunner.Message{Parts: []agentrunner.Part{agentrunner.Text("gave up")}}, nil
			})}
			var asked []agentrunner.DeferredToolRequests
			r := newRunner(t, model, []*agentrunner.Tool{tool}, agentrunner.WithHandlers(approvingAsk(&asked)))
			res, err := r.Run(t.Context(), agentrunner.RunInput{Prompt: "delete"})
			if err != nil {
				t.Fatalf("Run: %v", err)
			}
			if res.Status != agentrunner.StatusComplete || len(asked) != 0 || len(ran) != 0 {
				t.Errorf("status %s, asked %d times, ran %q; want complete, never asked, never ran", res.Status, len(asked), ran)
			}
			parts := model.lastRequest()
			if len(parts) != 1 || parts[0].PartKind != agentrunner.PartRetryPrompt || !strings.Contains(parts[0].Content, `duplicate member "repo" at /`) {
				t.Errorf("last request = %+v, want a retry prompt naming the repeated member", parts)
			}
		})
	}
}

// AskHandler refuses, in place, calls whose arguments read two ways,
// whoever built the requests, and asks about the others.
func TestAskHandlerRefusesDuplicateNames(t *testing.T) {
	var asked []agentrunner.DeferredToolRequests
	h := approvingAsk(&asked)
	req := agentrunner.DeferredToolRequests{
		Approvals: []agentrunner.ToolCallPart{
			{ToolName: "a", Args: json.RawMessage(`{"x":{"repo":1,"\u0072epo":2}}`), ToolCallID: "dup1"},
			{ToolName: "a", Args: json.RawMessage(`{"repo":1}`), ToolCallID: "ok1"},
		},
		Calls: []agentrunner.ToolCallPart{{ToolName: "b", Args: json.RawMessage(`{"n":9007199254740993}`), ToolCallID: "big1"}},
	}
	res, err := h.HandleDeferred(t.Context(), &agentrunner.RunContext{}, req)
	if err != nil {
		t.Fatalf("HandleDeferred: %v", err)
	}
	if len(asked) != 1 || len(asked[0].Approvals) != 1 || asked[0].Approvals[0].ToolCallID != "ok1" || len(asked[0].Calls) != 0 {
		t.Fatalf("asked %+v, want only ok1", asked)
	}
	if r := res.Approvals["dup1"]; r.Approved || !strings.Contains(r.DenialMessage(), `duplicate member "repo" at /x`) {
		t.Errorf("dup1 = %+v, want denied naming the repeated member", r)
	}
	if r := res.Calls["big1"]; !r.Failed || !strings.Contains(r.Message, "number 9007199254740993 at /n") {
		t.Errorf("big1 = %+v, want failed naming the number", r)
	}
}

// approvingAsk is an AskHandler that approves every approval it is asked
// about, in place, and adds what it was asked to asked.
func approvingAsk(asked *[]agentrunner.DeferredToolRequests) *agentrunner.AskHandler {
	return &agentrunner.AskHandler{Tokens: agentrunner.NewMemoryTokens(), Ask: func(_ context.Context, _ *agentrunner.RunContext, req agentrunner.DeferredToolRequests, _ string) (*agentrunner.DeferredToolResults, error) {
		*asked = append(*asked, req)
		res := agentrunner.NewDeferredToolResults()
		for _, c := range req.Approvals {
			res.Approvals[c.ToolCallID] = agentrunner.Approve()
		}
		return res, nil
	}}
}
