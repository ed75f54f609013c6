package agentrunner

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
)

// Model answers a request: given the history, it returns a response message
// with text, tool calls or both.
type Model interface {
	Request(ctx context.Context, messages []Message, params RequestParams) (Message, error)
}

// RequestParams is what a model needs besides the history.
type RequestParams struct {
	// Instructions is the system prompt.
	Instructions string
	// Tools are the tools the model may call.
	Tools []ToolDefinition
}

// FunctionModel is a model driven by a Go function, for tests.
type FunctionModel func(ctx context.Context, messages []Message, params RequestParams) (Message, error)

// Request calls f and marks the answer as a response.
func (f FunctionModel) Request(ctx context.Context, messages []Message, params RequestParams) (Message, error) {
	m, err := f(ctx, messages, params)
	if err != nil {
		return Message{}, err
	}
	m.Kind = KindResponse
	if m.ModelName == "" {
		m.ModelName = "function"
	}
	return m, nil
}

// TestModel is a deterministic model without a network, like Pydantic AI's
// TestModel. At the start of a turn it calls every tool it is offered once
// (or only those named in CallTools), with arguments generated from each
// tool's JSON schema: strings "a", numbers 0, booleans false, arrays empty,
// the first value of an enum. When the tools have answered it ends the turn
// with a text that is the JSON object of tool name → tool result. A retry
// prompt makes it call that tool again with the same arguments.
type TestModel struct {
	// CallTools limits the tools called; empty means all.
	CallTools []string
}

// Request implements Model.
func (m TestModel) Request(_ context.Context, messages []Message, params RequestParams) (Message, error) {
	resp := Message{Kind: KindResponse, ModelName: "test"}
	turn := turnStart(messages)

	// Retry prompts name tools to call again.
	if n := len(messages); n > 0 && messages[n-1].Kind == KindRequest {
		var retries []Part
		for _, p := range messages[n-1].Parts {
			if p.PartKind == PartRetryPrompt && p.ToolName != "" {
				call, ok := findCall(messages[turn:], p.ToolCallID)
				if !ok {
					continue
				}
				retries = append(retries, ToolCall(call.ToolName, call.Args, call.ToolCallID+"_retry"))
			}
		}
		if len(retries) > 0 {
			resp.Parts = retries
			return resp, nil
		}
	}

	called := false
	for _, msg := range messages[turn:] {
		if msg.Kind == KindResponse && len(msg.ToolCalls()) > 0 {
			called = true
		}
	}
	if !called {
		for _, td := range params.Tools {
			if len(m.CallTools) > 0 && !slices.Contains(m.CallTools, td.Name) {
				continue
			}
			args, err := GenerateArgs(td.Parameters)
			if err != nil {
				return Message{}, fmt.Errorf("test model: tool %s: %w", td.Name, err)
			}
			resp.Parts = append(resp.Parts, ToolCall(td.Name, args, "pyd_ai_tool_call_id__"+td.Name))
		}
		if len(resp.Parts) > 0 {
			return resp, nil
		}
	}

	// Report every tool return of the turn, by tool name.
	results := map[string]json.RawMessage{}
	for _, msg := range messages[turn:] {
		for _, p := range msg.Parts {
			if p.PartKind == PartToolReturn {
				v := p.Return
				if len(v) == 0 {
					v = json.RawMessage("null")
				}
				results[p.ToolName] = v
			}
		}
	}
	if len(results) == 0 && !called {
		resp.Parts = []Part{Text("success (no tool calls)")}
		return resp, nil
	}
	text, err := json.Marshal(results)
	if err != nil {
		return Message{}, fmt.Errorf("test model: %w", err)
	}
	resp.Parts = []Part{Text(string(text))}
	return resp, nil
}

// turnStart returns the index of the first message of the current turn: the
// one after the last response that made no tool calls.
func turnStart(messages []Message) int {
	for i := len(messages) - 1; i >= 0; i-- {
		if messages[i].Kind == KindResponse && len(messages[i].ToolCalls()) == 0 {
			return i + 1
		}
	}
	return 0
}

func findCall(messages []Message, id string) (ToolCallPart, bool) {
	for i := len(messages) - 1; i >= 0; i-- {
		for _, c := range messages[i].ToolCalls() {
			if c.ToolCallID == id {
				return c, true
			}
		}
	}
	return ToolCallPart{}, false
}

// GenerateArgs returns arguments that fit a JSON schema of an object, as
// TestModel makes them: every required property (or, when none is required,
// every property) gets a simple value of its type.
func GenerateArgs(schema json.RawMessage) (json.RawMessage, error) {
	var s map[string]any
	if len(schema) == 0 {
		return json.RawMessage("{}"), nil
	}
	if err := json.Unmarshal(schema, &s); err != nil {
		return nil, fmt.Errorf("schema: %w", err)
	}
	v := genValue(s, 0)
	if _, ok := v.(map[string]any); !ok {
		v = map[string]any{}
	}
	return json.Marshal(v)
}

func genValue(s map[string]any, depth int) any {
	if depth > 8 {
		return nil
	}
	if c, ok := s["const"]; ok {
		return c
	}
	if e, ok := s["enum"].([]any); ok && len(e) > 0 {
		return e[0]
	}
	if d, ok := s["default"]; ok {
		return d
	}
	for _, k := range []string{"anyOf", "oneOf", "allOf"} {
		if alts, ok := s[k].([]any); ok {
			for _, a := range alts {
				if am, ok := a.(map[string]any); ok && am["type"] != "null" {
					return genValue(am, depth+1)
				}
			}
		}
	}
	typ := ""
	switch t := s["type"].(type) {
	case string:
		typ = t
	case []any:
		for _, x := range t {
			if xs, ok := x.(string); ok && xs != "null" {
				typ = xs
				break
			}
		}
	}
	switch typ {
	case "string":
		return "a"
	case "integer", "number":
		if min, ok := s["minimum"].(float64); ok && min > 0 {
			return min
		}
		return 0
	case "boolean":
		return false
	case "array":
		return []any{}
	case "null":
		return nil
	case "object", "":
		props, _ := s["properties"].(map[string]any)
		names := make([]string, 0, len(props))
		if req, ok := s["required"].([]any); ok && len(req) > 0 {
			for _, r := range req {
				if n, ok := r.(string); ok {
					names = append(names, n)
				}
			}
		} else {
			for n := range props {
				names = append(names, n)
			}
		}
		sort.Strings(names)
		obj := map[string]any{}
		for _, n := range names {
			ps, _ := props[n].(map[string]any)
			if ps == nil {
				ps = map[string]any{}
			}
			obj[n] = genValue(ps, depth+1)
		}
		return obj
	}
	return nil
}
