package openai_test

import (
	"encoding/json"

	"github.com/slackapprove/slackbot/agentrunner/internal/providertest"
)

// The fake server is providertest's; this file holds the Chat Completions
// API's shapes it answers with.

// path is where the SDK posts chat completions under a base URL ending in
// /v1.
const path = "/v1/chat/completions"

// reply is one answer of the fake server.
type reply = providertest.Reply

// call is a tool call in a fake completion.
type call struct {
	id, name string
	// args is the JSON of the "arguments" value: usually a JSON string.
	args string
}

// completion returns a reply with a chat completion of one choice.
func completion(content string, calls ...call) reply {
	msg := map[string]any{"role": "assistant", "content": nil, "refusal": nil}
	if content != "" {
		msg["content"] = content
	}
	finish := "stop"
	if len(calls) > 0 {
		finish = "tool_calls"
		var tcs []any
		for _, c := range calls {
			tc := map[string]any{"type": "function", "function": map[string]any{"name": c.name, "arguments": json.RawMessage(c.args)}}
			if c.id != "" {
				tc["id"] = c.id
			}
			tcs = append(tcs, tc)
		}
		msg["tool_calls"] = tcs
	}
	return rawCompletion(map[string]any{"index": 0, "message": msg, "finish_reason": finish, "logprobs": nil})
}

// rawCompletion returns a reply with a chat completion of the given choices.
func rawCompletion(choices ...any) reply {
	return reply{Body: providertest.MustJSON(map[string]any{
		"id": "chatcmpl-1", "object": "chat.completion", "created": 1730000000,
		"model": "gpt-4o-mini-2024-07-18", "choices": append([]any{}, choices...),
		"usage": map[string]any{"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
	})}
}

// apiError returns a reply with an error in OpenAI's shape.
func apiError(status int, message, typ, code string, header map[string]string) reply {
	body := map[string]any{"error": map[string]any{"message": message, "type": typ, "param": nil, "code": code}}
	return reply{Status: status, Header: header, Body: providertest.MustJSON(body)}
}

// quoted returns s as a JSON string, for call.args.
func quoted(s string) string { return providertest.MustJSON(s) }
