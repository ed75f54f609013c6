package agentrunner_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/slackapprove/slackbot/agentrunner"
)

type customer struct {
	CustomerID string `json:"customer_id" jsonschema:"description=The customer to delete"`
}

func exampleDeleteCustomer() *agentrunner.Tool {
	return agentrunner.NewTool("delete_customer", "Delete a customer.",
		func(_ context.Context, _ *agentrunner.ToolContext, a customer) (any, error) {
			return "deleted " + a.CustomerID, nil
		}, agentrunner.RequiresApproval())
}

// A run stops on a call that needs approval (stop-the-world); a second run
// with the history and the decision continues it.
func ExampleRunner_Run() {
	ctx := context.Background()
	r, err := agentrunner.NewRunner(agentrunner.TestModel{}, []*agentrunner.Tool{exampleDeleteCustomer()})
	if err != nil {
		panic(err)
	}
	res, err := r.Run(ctx, agentrunner.RunInput{Prompt: "Delete customer a.", AllowPending: true})
	if err != nil {
		panic(err)
	}
	fmt.Println(res.Status)
	for _, p := range r.PendingCalls(*res.Pending) {
		fmt.Println(p.Kind, p.Call.ToolCallID, p.Message)
	}

	answer := agentrunner.NewDeferredToolResults()
	answer.Approvals["pyd_ai_tool_call_id__delete_customer"] = agentrunner.Approve()
	answer.AnsweredBy["pyd_ai_tool_call_id__delete_customer"] = "U0ALICE"
	res, err = r.Run(ctx, agentrunner.RunInput{History: res.Messages, Pending: res.Pending, Results: answer})
	if err != nil {
		panic(err)
	}
	fmt.Println(res.Status, res.Output)
	fmt.Println("approved by", res.Applied.AnsweredBy["pyd_ai_tool_call_id__delete_customer"])
	// Output:
	// pending
	// approval pyd_ai_tool_call_id__delete_customer Run delete_customer({"customer_id":"a"})?
	// complete {"delete_customer":"deleted a"}
	// approved by U0ALICE
}

type refund struct {
	OrderID string  `json:"order_id"`
	Amount  float64 `json:"amount" jsonschema:"minimum=0"`
}

// A tool's argument schema comes from its args struct; arguments are
// validated against it before the tool runs.
func ExampleNewTool() {
	tool := agentrunner.NewTool("issue_refund", "Refund an order.",
		func(_ context.Context, tc *agentrunner.ToolContext, a refund) (any, error) {
			if a.Amount > 100 && !tc.Approved {
				// Ask for approval for this call only; the tool runs again,
				// with tc.Approved set, once approved.
				return nil, agentrunner.RequireApproval(map[string]any{"reason": "over $100"})
			}
			return fmt.Sprintf("refunded %.2f", a.Amount), nil
		})
	fmt.Println(string(tool.Schema()))
	_, err := tool.ValidateArgs(json.RawMessage(`{"order_id":"A1","amount":"ten"}`))
	fmt.Println(err)
	// Output:
	// {"properties":{"order_id":{"type":"string"},"amount":{"type":"number","minimum":0}},"additionalProperties":false,"type":"object","required":["order_id","amount"]}
	// invalid arguments for issue_refund: at /amount: got string, want number
}

// DeferredToolResults reads and writes Pydantic AI's wire format.
func ExampleDeferredToolResults() {
	var res agentrunner.DeferredToolResults
	err := json.Unmarshal([]byte(`{
		"approvals": {
			"call_1": true,
			"call_2": false,
			"call_3": {"kind": "tool-approved", "override_args": {"amount": 50}}
		},
		"calls": {"call_4": {"kind": "tool-failed", "message": "worker crashed"}, "call_5": "eu-west"}
	}`), &res)
	if err != nil {
		panic(err)
	}
	fmt.Println(res.Approvals["call_2"].DenialMessage())
	fmt.Println(string(res.Approvals["call_3"].OverrideArgs))
	fmt.Println(res.Calls["call_4"].Failed, string(res.Calls["call_5"].Value))

	out := agentrunner.NewDeferredToolResults()
	out.Approvals["call_1"] = agentrunner.Approve()
	out.Approvals["call_3"] = agentrunner.Deny("Refunds over $100 need a manager.")
	b, _ := json.Marshal(out)
	fmt.Println(string(b))
	// Output:
	// The tool call was denied.
	// {"amount": 50}
	// true "eu-west"
	// {"calls":{},"approvals":{"call_1":true,"call_3":{"message":"Refunds over $100 need a manager.","kind":"tool-denied"}},"metadata":{},"answered_by":{}}
}

// BuildResults refuses answers to calls that are not pending, naming them;
// Remaining says what is still to decide.
func ExampleDeferredToolRequests_BuildResults() {
	req := agentrunner.DeferredToolRequests{
		Approvals: []agentrunner.ToolCallPart{
			{ToolName: "issue_refund", Args: json.RawMessage(`{"amount":40}`), ToolCallID: "call_1"},
			{ToolName: "issue_refund", Args: json.RawMessage(`{"amount":400}`), ToolCallID: "call_2"},
		},
		Calls:    []agentrunner.ToolCallPart{{ToolName: "ask_user", ToolCallID: "call_3"}},
		Metadata: map[string]map[string]any{"call_3": {"question": "Which region?"}},
	}
	fmt.Println(req.Kind("call_1"), req.Kind("call_3"))

	_, err := req.BuildResults(map[string]agentrunner.ApprovalResult{"call_1": agentrunner.Approve(), "call_9": agentrunner.Approve()}, nil, false)
	fmt.Println(err)

	res, _ := req.BuildResults(map[string]agentrunner.ApprovalResult{"call_1": agentrunner.Approve()}, nil, false)
	fmt.Println(req.Remaining(res).IDs())
	// Output:
	// approval question
	// answer names tool calls that are not pending: approval call_9
	// [call_2 call_3]
}

// A policy handler decides some calls at once (here: read-only tools);
// the AskHandler innermost asks a person about the rest and waits.
func ExampleAskHandler() {
	ctx := context.Background()
	readOnly := agentrunner.HandlerFunc(func(_ context.Context, rc *agentrunner.RunContext, req agentrunner.DeferredToolRequests) (*agentrunner.DeferredToolResults, error) {
		res := agentrunner.NewDeferredToolResults()
		for _, c := range req.Approvals {
			if t, ok := rc.Runner.Tool(c.ToolName); ok && t.IsReadOnly() {
				res.Approvals[c.ToolCallID] = agentrunner.Approve()
				res.AnsweredBy[c.ToolCallID] = "policy:read-only"
			}
		}
		return res, nil
	})

	mem := agentrunner.NewMemoryTokens()
	tokens := make(chan string, 1)
	ask := &agentrunner.AskHandler{
		Tokens:  mem,
		Timeout: time.Hour,
		Ask: func(_ context.Context, rc *agentrunner.RunContext, req agentrunner.DeferredToolRequests, token string) (*agentrunner.DeferredToolResults, error) {
			// slackbot posts one message per call here; the buttons carry token.
			for _, p := range rc.Runner.PendingCalls(req) {
				fmt.Println("asking:", p.Message)
			}
			tokens <- token
			return nil, nil // wait for the token to be resolved
		},
	}
	// Elsewhere, a click resolves the token.
	go func() {
		token := <-tokens
		answer := agentrunner.NewDeferredToolResults()
		answer.Approvals["pyd_ai_tool_call_id__delete_customer"] = agentrunner.Deny("Deleting customers needs a manager.")
		answer.AnsweredBy["pyd_ai_tool_call_id__delete_customer"] = "U0ALICE"
		if err := mem.Resolve(ctx, token, answer); err != nil {
			panic(err)
		}
	}()

	lookup := agentrunner.NewTool("lookup_customer", "Look a customer up.",
		func(_ context.Context, _ *agentrunner.ToolContext, a customer) (any, error) {
			return "customer " + a.CustomerID, nil
		}, agentrunner.RequiresApproval(), agentrunner.ReadOnly())
	r, err := agentrunner.NewRunner(agentrunner.TestModel{}, []*agentrunner.Tool{lookup, exampleDeleteCustomer()},
		agentrunner.WithHandlers(readOnly, ask))
	if err != nil {
		panic(err)
	}
	res, err := r.Run(ctx, agentrunner.RunInput{Prompt: "Look up customer a, then delete them."})
	if err != nil {
		panic(err)
	}
	fmt.Println(res.Output)
	fmt.Println(res.Applied.AnsweredBy)
	// Output:
	// asking: Run delete_customer({"customer_id":"a"})?
	// {"delete_customer":"Deleting customers needs a manager.","lookup_customer":"customer a"}
	// map[pyd_ai_tool_call_id__delete_customer:U0ALICE pyd_ai_tool_call_id__lookup_customer:policy:read-only]
}

type path struct {
	Path string `json:"path"`
}

// A PendingRun keeps a stopped run for a chat UI: save it, show its calls,
// and resume it with the person's answer.
func ExamplePendingRun() {
	ctx := context.Background()
	deleteFile := agentrunner.NewTool("delete_file", "Delete a file.",
		func(_ context.Context, _ *agentrunner.ToolContext, a path) (any, error) {
			return "deleted " + a.Path, nil
		},
		agentrunner.RequiresApproval(),
		agentrunner.Confirmation(func(c agentrunner.ToolCallPart) string {
			var a path
			raw, _ := c.ArgsObject()
			_ = json.Unmarshal(raw, &a)
			return "Delete " + a.Path + "? This cannot be undone."
		}))
	r, err := agentrunner.NewRunner(agentrunner.TestModel{}, []*agentrunner.Tool{deleteFile})
	if err != nil {
		panic(err)
	}
	res, err := r.Run(ctx, agentrunner.RunInput{Prompt: "Delete the file.", AllowPending: true})
	if err != nil {
		panic(err)
	}
	saved, _ := json.Marshal(res.PendingRun())

	var pending agentrunner.PendingRun
	if err := json.Unmarshal(saved, &pending); err != nil {
		panic(err)
	}
	calls := pending.Calls(r)
	fmt.Println(calls[0].Message)

	answer := agentrunner.NewDeferredToolResults()
	answer.Approvals[calls[0].Call.ToolCallID] = agentrunner.Approve()
	done, err := pending.Resume(ctx, r, answer)
	if err != nil {
		panic(err)
	}
	fmt.Println(done.Output)
	_, err = pending.Resume(ctx, r, answer)
	fmt.Println(errors.Is(err, agentrunner.ErrNoPendingRun))
	// Output:
	// Delete a? This cannot be undone.
	// {"delete_file":"deleted a"}
	// true
}

// A FunctionModel scripts the model in tests.
func ExampleFunctionModel() {
	model := agentrunner.FunctionModel(func(_ context.Context, msgs []agentrunner.Message, _ agentrunner.RequestParams) (agentrunner.Message, error) {
		last := msgs[len(msgs)-1]
		for _, p := range last.Parts {
			if p.PartKind == agentrunner.PartToolReturn {
				return agentrunner.Message{Parts: []agentrunner.Part{agentrunner.Text("The tool said: " + p.ReturnText())}}, nil
			}
		}
		return agentrunner.Message{Parts: []agentrunner.Part{
			agentrunner.ToolCall("lookup_customer", json.RawMessage(`{"customer_id":"c42"}`), "call_1"),
		}}, nil
	})
	lookup := agentrunner.NewTool("lookup_customer", "Look a customer up.",
		func(_ context.Context, _ *agentrunner.ToolContext, a customer) (any, error) {
			return "customer " + a.CustomerID + " is active", nil
		})
	r, err := agentrunner.NewRunner(model, []*agentrunner.Tool{lookup})
	if err != nil {
		panic(err)
	}
	res, err := r.Run(context.Background(), agentrunner.RunInput{Prompt: "Is c42 active?"})
	if err != nil {
		panic(err)
	}
	fmt.Println(res.Output)
	// Output:
	// The tool said: customer c42 is active
}

// GenerateArgs makes the arguments TestModel sends.
func ExampleGenerateArgs() {
	args, err := agentrunner.GenerateArgs(json.RawMessage(`{"type":"object","properties":{
		"path":{"type":"string"},"force":{"type":"boolean"},"retries":{"type":"integer"},"tags":{"type":"array"}}}`))
	if err != nil {
		panic(err)
	}
	fmt.Println(string(args))
	// Output:
	// {"force":false,"path":"a","retries":0,"tags":[]}
}

// Answering a token that is no longer open says why.
func ExampleMemoryTokens() {
	ctx := context.Background()
	tokens := agentrunner.NewMemoryTokens()
	token := agentrunner.NewToken()
	if err := tokens.Open(ctx, token, time.Now().Add(time.Hour)); err != nil {
		panic(err)
	}
	fmt.Println(tokens.Resolve(ctx, token, agentrunner.NewDeferredToolResults()))
	fmt.Println(tokens.Resolve(ctx, token, agentrunner.NewDeferredToolResults()))
	fmt.Println(tokens.Resolve(ctx, "unknown", nil))
	// Output:
	// <nil>
	// resume token already resolved
	// resume token not found
}

// A run that hands its call to people suspends instead of waiting
// (AskHandler.Suspend): it returns with the token, and nothing of it keeps
// running. The state is saved wherever it must outlive the process (here a
// map); when the answer arrives, Run resumes the run from that state.
func ExampleAskHandler_suspend() {
	ctx := context.Background()
	tokens := agentrunner.NewMemoryTokens()
	saved := map[string]*agentrunner.RunResult{} // the "durable" store, by token
	ask := &agentrunner.AskHandler{
		Tokens:  tokens,
		Suspend: true,
		Ask: func(_ context.Context, _ *agentrunner.RunContext, req agentrunner.DeferredToolRequests, token string) (*agentrunner.DeferredToolResults, error) {
			fmt.Println("asking a person about", req.IDs())
			return nil, nil // handed out: the answer comes later
		},
	}
	r, err := agentrunner.NewRunner(agentrunner.TestModel{}, []*agentrunner.Tool{exampleDeleteCustomer()}, agentrunner.WithHandlers(ask))
	if err != nil {
		panic(err)
	}
	res, err := r.Run(ctx, agentrunner.RunInput{Prompt: "Delete customer a."})
	if err != nil {
		panic(err)
	}
	fmt.Println(res.Status)
	saved[res.Suspended.Token] = res

	// Later, maybe in another process: the person approves.
	token := res.Suspended.Token
	answer := agentrunner.NewDeferredToolResults()
	answer.Approvals["pyd_ai_tool_call_id__delete_customer"] = agentrunner.Approve()
	if err := tokens.Resolve(ctx, token, answer); err != nil {
		panic(err)
	}
	s := saved[token]
	res, err = r.Run(ctx, agentrunner.RunInput{RunID: s.RunID, History: s.Messages, Pending: s.Pending, Results: answer})
	if err != nil {
		panic(err)
	}
	fmt.Println(res.Status, res.Output)
	// Output:
	// asking a person about [pyd_ai_tool_call_id__delete_customer]
	// suspended
	// complete {"delete_customer":"deleted a"}
}
