package anthropic

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"

	"github.com/slackapprove/slackbot/agentrunner"
	"github.com/slackapprove/slackbot/agentrunner/internal/provider"
)

// turn is one message of the conversation before it becomes a MessageParam.
type turn struct {
	user   bool
	blocks []sdk.ContentBlockParamUnion
}

// toMessages maps the history onto the system prompt and alternating user
// and assistant turns.
func toMessages(history []agentrunner.Message, instructions string) (string, []sdk.MessageParam, error) {
	var system []string
	if instructions != "" {
		system = append(system, instructions)
	}
	var turns []turn
	add := func(user bool, blocks []sdk.ContentBlockParamUnion) {
		if len(blocks) == 0 {
			return // the API refuses a turn without content
		}
		if n := len(turns); n > 0 && turns[n-1].user == user {
			turns[n-1].blocks = append(turns[n-1].blocks, blocks...)
			return
		}
		turns = append(turns, turn{user: user, blocks: blocks})
	}
	for i, msg := range history {
		switch msg.Kind {
		case agentrunner.KindRequest:
			var blocks []sdk.ContentBlockParamUnion
			for _, p := range msg.Parts {
				if p.PartKind == agentrunner.PartSystemPrompt {
					if p.Content != "" {
						system = append(system, p.Content)
					}
					continue
				}
				if b, ok := requestBlock(p); ok {
					blocks = append(blocks, b)
				}
			}
			add(true, blocks)
		case agentrunner.KindResponse:
			add(false, responseBlocks(msg))
		default:
			return "", nil, fmt.Errorf("history message %d: unknown kind %q", i, msg.Kind)
		}
	}
	out := make([]sdk.MessageParam, 0, len(turns))
	for _, t := range turns {
		if !t.user {
			out = append(out, sdk.NewAssistantMessage(t.blocks...))
			continue
		}
		// The API wants a user turn's tool results before its text.
		slices.SortStableFunc(t.blocks, func(a, b sdk.ContentBlockParamUnion) int {
			return rank(a) - rank(b)
		})
		out = append(out, sdk.NewUserMessage(t.blocks...))
	}
	return strings.Join(system, "\n\n"), out, nil
}

func rank(b sdk.ContentBlockParamUnion) int {
	if b.OfToolResult != nil {
		return 0
	}
	return 1
}

// requestBlock maps one part of a request. Parts of kinds the API has no
// place for (Pydantic AI's files, builtin tools) are left out.
func requestBlock(p agentrunner.Part) (sdk.ContentBlockParamUnion, bool) {
	switch p.PartKind {
	case agentrunner.PartUserPrompt:
		if p.Content == "" {
			return sdk.ContentBlockParamUnion{}, false
		}
		return sdk.NewTextBlock(p.Content), true
	case agentrunner.PartToolReturn:
		// A denied call did not fail: a person declined it, and its text
		// says so. A failed one did.
		return toolResult(p.ToolCallID, p.ReturnText(), p.Outcome == agentrunner.OutcomeFailed), true
	case agentrunner.PartRetryPrompt:
		text, aboutCall := provider.RetryText(p)
		if aboutCall {
			return toolResult(p.ToolCallID, text, true), true
		}
		return sdk.NewTextBlock(text), true
	}
	return sdk.ContentBlockParamUnion{}, false
}

// toolResult returns a tool_result block. Empty text is left out, since
// the API refuses empty text blocks.
func toolResult(id, text string, isError bool) sdk.ContentBlockParamUnion {
	r := sdk.ToolResultBlockParam{ToolUseID: id}
	if text != "" {
		r.Content = []sdk.ToolResultBlockParamContentUnion{{OfText: &sdk.TextBlockParam{Text: text}}}
	}
	if isError {
		r.IsError = sdk.Bool(true)
	}
	return sdk.ContentBlockParamUnion{OfToolResult: &r}
}

// responseBlocks maps a response's text and tool calls. Thinking is left
// out: the API accepts it back only with the signature it was sent with.
func responseBlocks(msg agentrunner.Message) []sdk.ContentBlockParamUnion {
	var blocks []sdk.ContentBlockParamUnion
	for _, p := range msg.Parts {
		switch p.PartKind {
		case agentrunner.PartText:
			if p.Content != "" {
				blocks = append(blocks, sdk.NewTextBlock(p.Content))
			}
		case agentrunner.PartToolCall:
			input, err := p.Call().ArgsObject()
			if err != nil {
				// Arguments another model wrote that are not an object;
				// the API takes only objects, and the retry prompt that
				// follows tells the model what was wrong.
				input = json.RawMessage("{}")
			}
			blocks = append(blocks, sdk.NewToolUseBlock(p.ToolCallID, input, p.ToolName))
		}
	}
	return blocks
}

// toTools maps tool definitions onto custom tools.
func toTools(defs []agentrunner.ToolDefinition) ([]sdk.ToolUnionParam, error) {
	if len(defs) == 0 {
		return nil, nil
	}
	tools := make([]sdk.ToolUnionParam, 0, len(defs))
	for _, d := range defs {
		schema, err := inputSchema(d.Parameters)
		if err != nil {
			return nil, fmt.Errorf("tool %s: parameters: %w", d.Name, err)
		}
		t := sdk.ToolParam{Name: d.Name, InputSchema: schema}
		if d.Description != "" {
			t.Description = sdk.String(d.Description)
		}
		tools = append(tools, sdk.ToolUnionParam{OfTool: &t})
	}
	return tools, nil
}

// inputSchema splits a JSON schema into the SDK's fields. Each keyword's
// value stays the JSON the tool wrote, so the schema reaches the API as
// written.
func inputSchema(params json.RawMessage) (sdk.ToolInputSchemaParam, error) {
	var s sdk.ToolInputSchemaParam
	if len(bytes.TrimSpace(params)) == 0 {
		// An empty schema would be left out, and the API requires one.
		s.Properties = map[string]any{}
		return s, nil
	}
	var kw map[string]json.RawMessage
	if err := json.Unmarshal(params, &kw); err != nil {
		return s, err
	}
	for k, v := range kw {
		switch k {
		case "type": // always "object"; the SDK writes it
		case "properties":
			s.Properties = v
		case "required":
			if err := json.Unmarshal(v, &s.Required); err != nil {
				return s, fmt.Errorf("required: %w", err)
			}
		default:
			if s.ExtraFields == nil {
				s.ExtraFields = map[string]any{}
			}
			s.ExtraFields[k] = v
		}
	}
	return s, nil
}

// fromMessage maps the API's message onto a response.
func fromMessage(m *sdk.Message) (agentrunner.Message, error) {
	if m == nil {
		return agentrunner.Message{}, fmt.Errorf("%w: no message", ErrEmptyResponse)
	}
	msg := agentrunner.Message{Kind: agentrunner.KindResponse, ModelName: string(m.Model)}
	answered := false
	for i, b := range m.Content {
		switch b.Type {
		case "text":
			if b.Text != "" {
				msg.Parts = append(msg.Parts, agentrunner.Text(b.Text))
				answered = true
			}
		case "tool_use":
			if b.Name == "" {
				return agentrunner.Message{}, fmt.Errorf("%w: content block %d: tool_use without a name", ErrMalformedResponse, i)
			}
			id := b.ID
			if id == "" {
				id = provider.NewCallID("toolu_")
			}
			msg.Parts = append(msg.Parts, agentrunner.ToolCall(b.Name, toolInput(b.Input), id))
			answered = true
		case "thinking":
			if b.Thinking != "" {
				msg.Parts = append(msg.Parts, agentrunner.Part{PartKind: agentrunner.PartThinking, Content: b.Thinking})
			}
		}
	}
	if !answered {
		return agentrunner.Message{}, fmt.Errorf("%w: no text and no tool calls (stop_reason %q)", ErrEmptyResponse, m.StopReason)
	}
	return msg, nil
}

// toolInput returns a tool_use input as agentrunner keeps arguments: the
// JSON object, compacted; {} when absent.
func toolInput(raw json.RawMessage) json.RawMessage {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return json.RawMessage("{}")
	}
	var buf bytes.Buffer
	if json.Compact(&buf, raw) != nil {
		return raw // the runner's validation will report it to the model
	}
	return buf.Bytes()
}
