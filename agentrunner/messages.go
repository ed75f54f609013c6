package agentrunner

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
)

// MessageKind tells a request to the model from the model's response.
type MessageKind string

// The kinds of message, as in Pydantic AI's message history.
const (
	KindRequest  MessageKind = "request"
	KindResponse MessageKind = "response"
)

// PartKind tells the parts of a message apart.
type PartKind string

// The kinds of part, named as Pydantic AI names them.
const (
	PartSystemPrompt PartKind = "system-prompt"
	PartUserPrompt   PartKind = "user-prompt"
	PartText         PartKind = "text"
	PartThinking     PartKind = "thinking"
	PartToolCall     PartKind = "tool-call"
	PartToolReturn   PartKind = "tool-return"
	PartRetryPrompt  PartKind = "retry-prompt"
)

// Outcome says how a tool return came about.
type Outcome string

// Tool return outcomes; an empty outcome means success.
const (
	OutcomeSuccess Outcome = ""
	OutcomeDenied  Outcome = "denied"
	OutcomeFailed  Outcome = "failed"
)

// Message is one entry of a run's history: a request to the model (user
// prompt, tool returns, retry prompts) or its response (text, tool calls).
// Its JSON follows Pydantic AI's ModelRequest / ModelResponse so a history
// round-trips through Redis and can be resumed by another process.
type Message struct {
	Kind      MessageKind `json:"kind"`
	Parts     []Part      `json:"parts"`
	Timestamp time.Time   `json:"timestamp,omitzero"`
	// ModelName is set on responses.
	ModelName string `json:"model_name,omitempty"`
	// RunID is the run that added the message.
	RunID string `json:"run_id,omitempty"`
}

// Part is one piece of a message. Which fields are set depends on PartKind:
//
//	system-prompt, user-prompt, text, thinking: Content
//	tool-call:    ToolName, Args, ToolCallID
//	tool-return:  ToolName, ToolCallID, Return (JSON), Outcome
//	retry-prompt: Content, ToolName and ToolCallID when about a tool call
//
// A part of any other kind (Pydantic AI has more, e.g. builtin-tool-call or
// file) is kept in Raw and written back unchanged, so a history written by
// Pydantic AI survives a round trip through this package.
type Part struct {
	PartKind   PartKind        `json:"part_kind"`
	Content    string          `json:"-"`
	Return     json.RawMessage `json:"-"`
	ToolName   string          `json:"tool_name,omitempty"`
	Args       json.RawMessage `json:"args,omitempty"`
	ToolCallID string          `json:"tool_call_id,omitempty"`
	Outcome    Outcome         `json:"outcome,omitempty"`
	Timestamp  time.Time       `json:"timestamp,omitzero"`
	// Raw is the JSON of a part whose kind this package does not know.
	Raw json.RawMessage `json:"-"`
}

// MarshalJSON writes a part with its content where Pydantic AI puts it: the
// string for prompts, text and retries, the JSON value for tool returns.
func (p Part) MarshalJSON() ([]byte, error) {
	if len(p.Raw) > 0 {
		return p.Raw, nil
	}
	type plain Part
	var content any
	switch p.PartKind {
	case PartToolReturn:
		if len(p.Return) == 0 {
			content = nil
		} else {
			content = p.Return
		}
	case PartToolCall:
	default:
		content = p.Content
	}
	if p.PartKind == PartToolCall {
		return json.Marshal(plain(p))
	}
	return json.Marshal(struct {
		plain
		Content any `json:"content"`
	}{plain(p), content})
}

// UnmarshalJSON reads a part written by MarshalJSON or by Pydantic AI.
func (p *Part) UnmarshalJSON(b []byte) error {
	var head struct {
		PartKind PartKind `json:"part_kind"`
	}
	if err := json.Unmarshal(b, &head); err != nil {
		return err
	}
	switch head.PartKind {
	case PartSystemPrompt, PartUserPrompt, PartText, PartThinking, PartToolCall, PartToolReturn, PartRetryPrompt:
	case "":
		return errors.New("message part without part_kind")
	default:
		*p = Part{PartKind: head.PartKind, Raw: bytes.Clone(b)}
		return nil
	}
	type plain Part
	var aux struct {
		plain
		Content json.RawMessage `json:"content"`
	}
	if err := json.Unmarshal(b, &aux); err != nil {
		return err
	}
	*p = Part(aux.plain)
	switch p.PartKind {
	case PartToolReturn:
		if len(aux.Content) > 0 {
			p.Return = aux.Content
		}
	case PartSystemPrompt, PartUserPrompt, PartText, PartThinking, PartRetryPrompt:
		if len(aux.Content) > 0 && string(aux.Content) != "null" {
			if aux.Content[0] == '"' {
				if err := json.Unmarshal(aux.Content, &p.Content); err != nil {
					return fmt.Errorf("%s part: content: %w", p.PartKind, err)
				}
			} else {
				// Pydantic AI may carry structured content (e.g. validation
				// errors on a retry); keep it as its JSON text.
				p.Content = string(aux.Content)
			}
		}
	}
	return nil
}

// Call returns a tool-call part as a ToolCallPart.
func (p Part) Call() ToolCallPart {
	return ToolCallPart{ToolName: p.ToolName, Args: p.Args, ToolCallID: p.ToolCallID}
}

// UserPrompt returns a user-prompt part.
func UserPrompt(text string) Part { return Part{PartKind: PartUserPrompt, Content: text} }

// Text returns a text part, as a model writes it.
func Text(text string) Part { return Part{PartKind: PartText, Content: text} }

// ToolCall returns a tool-call part, as a model writes it.
func ToolCall(name string, args json.RawMessage, id string) Part {
	return Part{PartKind: PartToolCall, ToolName: name, Args: args, ToolCallID: id}
}

// ToolReturn returns a tool-return part with the given outcome.
func ToolReturn(name, id string, content json.RawMessage, outcome Outcome) Part {
	return Part{PartKind: PartToolReturn, ToolName: name, ToolCallID: id, Return: content, Outcome: outcome}
}

// RetryPrompt returns a retry-prompt part about a tool call.
func RetryPrompt(name, id, message string) Part {
	return Part{PartKind: PartRetryPrompt, ToolName: name, ToolCallID: id, Content: message}
}

// ReturnText returns a tool return's content as text: a JSON string is
// unquoted, any other value is its JSON.
func (p Part) ReturnText() string {
	var s string
	if len(p.Return) > 0 && p.Return[0] == '"' && json.Unmarshal(p.Return, &s) == nil {
		return s
	}
	return string(p.Return)
}

// ToolCalls returns the tool-call parts of a message.
func (m Message) ToolCalls() []ToolCallPart {
	var calls []ToolCallPart
	for _, p := range m.Parts {
		if p.PartKind == PartToolCall {
			calls = append(calls, p.Call())
		}
	}
	return calls
}

// Text returns the concatenated text parts of a message.
func (m Message) Text() string {
	var s strings.Builder
	for _, p := range m.Parts {
		if p.PartKind == PartText {
			s.WriteString(p.Content)
		}
	}
	return s.String()
}

// CloseUnprocessed returns history with every call of its last response
// that has no result yet answered as denied with reason, so that a history
// a run left pending can be continued with a new prompt: model APIs refuse
// a tool call without its result. A history with no such call is returned
// as it is.
func CloseUnprocessed(history []Message, reason string) []Message {
	pending, _ := unprocessedCalls(history)
	if len(pending) == 0 {
		return history
	}
	now := time.Now().UTC()
	parts := make([]Part, 0, len(pending))
	for _, c := range pending {
		p := ToolReturn(c.ToolName, c.ToolCallID, jsonString(reason), OutcomeDenied)
		p.Timestamp = now
		parts = append(parts, p)
	}
	out := slices.Clone(history)
	if last := &out[len(out)-1]; last.Kind == KindRequest {
		last.Parts = append(slices.Clip(last.Parts), parts...)
		return out
	}
	return append(out, Message{Kind: KindRequest, Parts: parts, Timestamp: now})
}

// unprocessedCalls returns the tool calls of the last response that have no
// return or retry prompt after it, in order, and the ids already answered.
func unprocessedCalls(history []Message) (pending []ToolCallPart, done map[string]bool) {
	last := -1
	for i := len(history) - 1; i >= 0; i-- {
		if history[i].Kind == KindResponse {
			last = i
			break
		}
	}
	done = map[string]bool{}
	if last < 0 {
		return nil, done
	}
	for _, m := range history[last+1:] {
		for _, p := range m.Parts {
			if (p.PartKind == PartToolReturn || p.PartKind == PartRetryPrompt) && p.ToolCallID != "" {
				done[p.ToolCallID] = true
			}
		}
	}
	for _, c := range history[last].ToolCalls() {
		if !done[c.ToolCallID] {
			pending = append(pending, c)
		}
	}
	return pending, done
}
