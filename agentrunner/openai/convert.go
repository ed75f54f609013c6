package openai

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	sdk "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/shared"

	"github.com/slackapprove/slackbot/agentrunner"
	"github.com/slackapprove/slackbot/agentrunner/internal/provider"
)

// toMessages maps the history onto chat messages, the instructions first.
func toMessages(history []agentrunner.Message, instructions string) ([]sdk.ChatCompletionMessageParamUnion, error) {
	var out []sdk.ChatCompletionMessageParamUnion
	if instructions != "" {
		out = append(out, sdk.SystemMessage(instructions))
	}
	for i, msg := range history {
		switch msg.Kind {
		case agentrunner.KindRequest:
			for _, p := range msg.Parts {
				if m, ok := requestPart(p); ok {
					out = append(out, m)
				}
			}
		case agentrunner.KindResponse:
			if m, ok := assistantMessage(msg); ok {
				out = append(out, m)
			}
		default:
			return nil, fmt.Errorf("history message %d: unknown kind %q", i, msg.Kind)
		}
	}
	return out, nil
}

// requestPart maps one part of a request. Parts of kinds the API has no
// place for (Pydantic AI's files, builtin tools) are left out.
func requestPart(p agentrunner.Part) (sdk.ChatCompletionMessageParamUnion, bool) {
	switch p.PartKind {
	case agentrunner.PartSystemPrompt:
		return sdk.SystemMessage(p.Content), true
	case agentrunner.PartUserPrompt:
		return sdk.UserMessage(p.Content), true
	case agentrunner.PartToolReturn:
		// A denial or failure is a return whose text says so; the model
		// reads it like any result.
		return sdk.ToolMessage(p.ReturnText(), p.ToolCallID), true
	case agentrunner.PartRetryPrompt:
		text, aboutCall := provider.RetryText(p)
		if aboutCall {
			return sdk.ToolMessage(text, p.ToolCallID), true
		}
		return sdk.UserMessage(text), true
	}
	return sdk.ChatCompletionMessageParamUnion{}, false
}

// assistantMessage maps a response: its text and its tool calls. Thinking
// is not sent back; the API has no place for it. A response with neither
// text nor calls is left out, since the API refuses an empty assistant
// message.
func assistantMessage(msg agentrunner.Message) (sdk.ChatCompletionMessageParamUnion, bool) {
	var (
		texts []string
		calls []sdk.ChatCompletionMessageToolCallUnionParam
	)
	for _, p := range msg.Parts {
		switch p.PartKind {
		case agentrunner.PartText:
			if p.Content != "" {
				texts = append(texts, p.Content)
			}
		case agentrunner.PartToolCall:
			calls = append(calls, sdk.ChatCompletionMessageToolCallUnionParam{
				OfFunction: &sdk.ChatCompletionMessageFunctionToolCallParam{
					ID: p.ToolCallID,
					Function: sdk.ChatCompletionMessageFunctionToolCallFunctionParam{
						Name:      p.ToolName,
						Arguments: argumentsString(p.Args),
					},
				},
			})
		}
	}
	if len(texts) == 0 && len(calls) == 0 {
		return sdk.ChatCompletionMessageParamUnion{}, false
	}
	var a sdk.ChatCompletionAssistantMessageParam
	if len(texts) > 0 {
		a.Content.OfString = sdk.String(strings.Join(texts, "\n\n"))
	}
	a.ToolCalls = calls
	return sdk.ChatCompletionMessageParamUnion{OfAssistant: &a}, true
}

// argumentsString returns a call's arguments as the API carries them: a
// string holding a JSON object. Arguments that are not an object (a model's
// malformed output, kept so the model sees what it sent) go back as they
// came.
func argumentsString(args json.RawMessage) string {
	obj, err := agentrunner.ToolCallPart{Args: args}.ArgsObject()
	if err == nil {
		return string(obj)
	}
	var s string
	if json.Unmarshal(args, &s) == nil {
		return s
	}
	return string(args)
}

// toTools maps tool definitions onto function tools.
func toTools(defs []agentrunner.ToolDefinition) ([]sdk.ChatCompletionToolUnionParam, error) {
	if len(defs) == 0 {
		return nil, nil
	}
	tools := make([]sdk.ChatCompletionToolUnionParam, 0, len(defs))
	for _, d := range defs {
		params := shared.FunctionParameters{"type": "object", "properties": map[string]any{}}
		if len(bytes.TrimSpace(d.Parameters)) > 0 {
			// Each keyword's value stays the JSON the tool wrote, so the
			// schema reaches the server as written (numbers included).
			var kw map[string]json.RawMessage
			if err := json.Unmarshal(d.Parameters, &kw); err != nil {
				return nil, fmt.Errorf("tool %s: parameters: %w", d.Name, err)
			}
			params = make(shared.FunctionParameters, len(kw))
			for k, v := range kw {
				params[k] = v
			}
		}
		fn := shared.FunctionDefinitionParam{Name: d.Name, Parameters: params}
		if d.Description != "" {
			fn.Description = sdk.String(d.Description)
		}
		tools = append(tools, sdk.ChatCompletionFunctionTool(fn))
	}
	return tools, nil
}

// fromCompletion maps the first choice of a completion onto a response.
func fromCompletion(c *sdk.ChatCompletion) (agentrunner.Message, error) {
	if c == nil {
		return agentrunner.Message{}, fmt.Errorf("%w: no choices", ErrEmptyResponse)
	}
	if len(c.Choices) == 0 {
		// Some proxies answer 200 with an error body.
		if msg := bodyMessage([]byte(c.RawJSON())); msg != "" {
			return agentrunner.Message{}, fmt.Errorf("%w: no choices: %s", ErrEmptyResponse, provider.ServerMessage(msg, nil))
		}
		return agentrunner.Message{}, fmt.Errorf("%w: no choices", ErrEmptyResponse)
	}
	choice := c.Choices[0]
	msg := agentrunner.Message{Kind: agentrunner.KindResponse, ModelName: c.Model}
	switch {
	case choice.Message.Content != "":
		msg.Parts = append(msg.Parts, agentrunner.Text(choice.Message.Content))
	case choice.Message.Refusal != "":
		// The person who asked should read why the model declined.
		msg.Parts = append(msg.Parts, agentrunner.Text(choice.Message.Refusal))
	}
	for i, tc := range choice.Message.ToolCalls {
		if tc.Type == "custom" {
			return agentrunner.Message{}, fmt.Errorf("%w: tool call %d is a custom tool call, and only function tools are offered", ErrMalformedResponse, i)
		}
		name := tc.Function.Name
		if name == "" {
			return agentrunner.Message{}, fmt.Errorf("%w: tool call %d has no function name", ErrMalformedResponse, i)
		}
		id := tc.ID
		if id == "" {
			id = provider.NewCallID("call_")
		}
		msg.Parts = append(msg.Parts, agentrunner.ToolCall(name, callArgs(tc.Function), id))
	}
	if len(msg.Parts) == 0 {
		return agentrunner.Message{}, fmt.Errorf("%w: no text and no tool calls (finish_reason %q)", ErrEmptyResponse, choice.FinishReason)
	}
	return msg, nil
}

// callArgs returns the arguments of a tool call as agentrunner keeps them:
// the JSON object, compacted, when the string holds one; the string itself
// (a JSON string) when it does not, so that validation reports it to the
// model as a retry. Some compatible servers send the arguments as an object
// rather than a string; that works too.
func callArgs(fn sdk.ChatCompletionMessageFunctionToolCallFunction) json.RawMessage {
	s := fn.Arguments
	if raw := strings.TrimSpace(fn.JSON.Arguments.Raw()); strings.HasPrefix(raw, "{") {
		s = raw
	}
	s = strings.TrimSpace(s)
	if s == "" {
		return json.RawMessage("{}")
	}
	var buf bytes.Buffer
	if json.Valid([]byte(s)) && json.Compact(&buf, []byte(s)) == nil {
		return buf.Bytes()
	}
	b, _ := json.Marshal(s)
	return b
}
