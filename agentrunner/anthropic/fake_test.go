package anthropic_test

import (
	"encoding/json"

	"github.com/slackapprove/slackbot/agentrunner/internal/providertest"
)

// The fake server is providertest's; this file holds the Messages API's
// shapes it answers with.

// path is where the SDK posts messages under a base URL without a path.
const path = "/v1/messages"

// reply is one answer of the fake server.
type reply = providertest.Reply

// block is a content block of a fake message.
type block map[string]any

func text(s string) block { return block{"type": "text", "text": s} }

func toolUse(id, name, input string) block {
	return block{"type": "tool_use", "id": id, "name": name, "input": json.RawMessage(input)}
}

// message returns a reply with a Messages API message.
func message(blocks ...block) reply {
	stop := "end_turn"
	for _, b := range blocks {
		if b["type"] == "tool_use" {
			stop = "tool_use"
		}
	}
	return messageStop(stop, blocks...)
}

// messageStop returns a reply with a message that stopped for stop.
func messageStop(stop string, blocks ...block) reply {
	return reply{Body: providertest.MustJSON(map[string]any{
		"id": "msg_01", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5-20250929",
		"content": append([]block{}, blocks...), "stop_reason": stop, "stop_sequence": nil,
		"usage": map[string]any{"input_tokens": 10, "output_tokens": 5},
	})}
}

// apiError returns a reply with an error in Anthropic's shape.
func apiError(status int, typ, message string, header map[string]string) reply {
	body := map[string]any{"type": "error", "error": map[string]any{"type": typ, "message": message}, "request_id": "req_011"}
	return reply{Status: status, Header: header, Body: providertest.MustJSON(body)}
}
