package mcpgateway

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/slackapprove/slackbot/agentrunner"
	"github.com/slackapprove/slackbot/approval"
)

// PromptAgent is the agent approval_prompt speaks for, as cards name it.
const PromptAgent = "Claude Code"

// Field limits of an approval_prompt call.
const (
	maxPromptToolName = 200
	maxToolUseID      = 512
)

// promptInput is the input of approval_prompt: Claude Code's permission
// request for one of its tools.
type promptInput struct {
	ToolName  string          `json:"tool_name"`
	Input     json.RawMessage `json:"input"`
	ToolUseID string          `json:"tool_use_id"`
}

// PromptDecision is the text approval_prompt answers with, as Claude
// Code's --permission-prompt-tool contract has it: behavior "allow" with
// the whole input to run (edited or not), or "deny" with a message.
type PromptDecision struct {
	Behavior     string          `json:"behavior"`
	UpdatedInput json.RawMessage `json:"updatedInput,omitempty"`
	Message      string          `json:"message,omitempty"`
}

func promptTool() *mcp.Tool {
	return &mcp.Tool{
		Name:  PromptToolName,
		Title: "Ask for approval in Slack",
		Description: "Claude Code's permission prompt (--permission-prompt-tool mcp__<server>__approval_prompt): " +
			"asks the people the routing file names, in Slack, whether the tool may run with this input, and waits for their decision.",
		InputSchema: json.RawMessage(`{"type":"object","properties":{` +
			`"tool_name":{"type":"string","description":"The tool Claude Code wants to run: Bash, Edit, mcp__github__create_issue, …"},` +
			`"input":{"type":"object","description":"The tool's input."},` +
			`"tool_use_id":{"type":"string","description":"The tool use's id."}},` +
			`"required":["tool_name","input"]}`),
		Annotations: &mcp.ToolAnnotations{Title: "Ask for approval in Slack", OpenWorldHint: boolPtr(false)},
	}
}

func boolPtr(b bool) *bool { return &b }

// handlePrompt serves approval_prompt: the prompted tool's call is opened
// through the one pipeline under the prompted tool's own name (so routes
// match Bash, Edit, mcp__github__create_issue), waited for, and answered
// with one text item holding the PromptDecision. Every way it can fail
// (bad input, a refusal, no decision) is a deny with the reason, so
// Claude Code never runs a tool nobody approved.
func (h *Handler) handlePrompt(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	ri, ok := infoFrom(ctx)
	if !ok {
		return nil, fmt.Errorf("mcpgateway: request not authenticated")
	}
	in, err := parsePrompt(rawArgs(req))
	if err != nil {
		return promptResult(PromptDecision{Behavior: "deny", Message: "approval_prompt: " + err.Error()}), nil
	}
	call := agentrunner.ToolCallPart{ToolName: in.ToolName, Args: in.Input, ToolCallID: in.ToolUseID}
	if call.ToolCallID == "" {
		call.ToolCallID = "prompt_" + agentrunner.NewToken()[:16]
	}
	key, explicit := "prompt\x00"+in.ToolUseID, true
	if in.ToolUseID == "" {
		if key, explicit, err = idempotencyKey(req, ri, call); err != nil {
			return promptResult(PromptDecision{Behavior: "deny", Message: err.Error()}), nil
		}
	}
	d := h.decide(ctx, ask{
		client: ri.client, shown: shownName(req, ri), call: call, key: key, explicit: explicit, req: req,
		meta: map[string]any{approval.MetaPermissionPrompt: PromptAgent},
	})
	if d.failed != nil {
		return promptResult(PromptDecision{Behavior: "deny", Message: resultText(d.failed)}), nil
	}
	approved, args, reason := outcome(d.rec, d.call)
	if !approved {
		return promptResult(PromptDecision{Behavior: "deny", Message: reason}), nil
	}
	res := promptResult(PromptDecision{Behavior: "allow", UpdatedInput: args})
	attachReceipt(res, h.receiptMeta(d.rec, d.call.ID))
	return res, nil
}

// parsePrompt checks approval_prompt's input: a tool name, an input
// object and an optional tool_use_id, all of it read one way
// (agentrunner.CheckArgs: nested no deeper than MaxArgsDepth, no member
// named twice, Unicode text, exact numbers), so that the card, the
// policies and the updatedInput Claude Code runs are one reading.
func parsePrompt(args json.RawMessage) (promptInput, error) {
	var in promptInput
	if err := agentrunner.CheckArgs(args); err != nil {
		return in, err
	}
	if err := json.Unmarshal(args, &in); err != nil {
		return in, fmt.Errorf("the input must be {tool_name, input, tool_use_id}: %v", err)
	}
	in.ToolName = strings.TrimSpace(in.ToolName)
	input := bytes.TrimSpace(in.Input)
	switch {
	case in.ToolName == "":
		return in, fmt.Errorf("tool_name is required")
	case len(in.ToolName) > maxPromptToolName:
		return in, fmt.Errorf("tool_name is longer than %d bytes", maxPromptToolName)
	case len(in.ToolUseID) > maxToolUseID:
		return in, fmt.Errorf("tool_use_id is longer than %d bytes", maxToolUseID)
	case len(input) == 0 || input[0] != '{':
		return in, fmt.Errorf("input must be the tool's input object")
	}
	var compact bytes.Buffer
	if err := json.Compact(&compact, input); err != nil {
		return in, fmt.Errorf("input: %v", err)
	}
	in.Input = compact.Bytes()
	return in, nil
}

// promptResult is the one text item holding the decision.
func promptResult(d PromptDecision) *mcp.CallToolResult {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(d) // strings and valid JSON only
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: strings.TrimSuffix(b.String(), "\n")}}}
}

func resultText(res *mcp.CallToolResult) string {
	var parts []string
	for _, c := range res.Content {
		if t, ok := c.(*mcp.TextContent); ok {
			parts = append(parts, t.Text)
		}
	}
	return strings.Join(parts, "\n")
}
