package hook

import (
	"encoding/json"
	"errors"
	"slices"
	"strings"
)

// Codex's hook contracts. Codex (https://developers.openai.com/codex/hooks)
// fires two hook events slackbot answers, and which one fires depends on
// how Codex runs:
//
//   - PreToolUse runs before every matched tool call, in `codex exec`
//     (headless, CI) as in the interactive CLI. Observed with codex-cli
//     0.171.0 (cmd/slackbot/agents_codex_test.go, against a fake Responses
//     API): stdin holds session_id, turn_id, transcript_path, cwd,
//     hook_event_name, model, permission_mode, tool_name, tool_input and
//     tool_use_id (the model's call_id). The shell tool (exec_command) is
//     sent as tool_name "Bash" with tool_input {"command": …}, the patch
//     tool as "apply_patch" with the patch in {"command": …}, an MCP tool
//     as "mcp__<server>__<tool>" with its arguments.
//   - PermissionRequest runs only when Codex is about to ask a person for
//     approval, so never in `codex exec`, whose approval policy is
//     "never" (observed: 0.171.0 fired no PermissionRequest there). Input
//     as PreToolUse without tool_use_id; output
//     {"hookSpecificOutput":{"hookEventName":"PermissionRequest",
//     "decision":{"behavior":"allow"|"deny","message":…}}} (schema in
//     openai/codex codex-rs/hooks/schema/generated/
//     permission-request.command.*.schema.json). Codex fails the hook when
//     the decision holds updatedInput, so an approval with edited
//     arguments is passed back as a denial that gives the model the
//     approved arguments to call with.
//
// PreToolUse's output, as 0.171.0 reads it (observed, and its messages in
// the binary): {"hookSpecificOutput":{"hookEventName":"PreToolUse",
// "permissionDecision":"allow"|"deny","permissionDecisionReason":…,
// "updatedInput":…}}. Codex counts the hook as failed, and runs the call,
// when the hook answers a bare "allow" ("unsupported
// permissionDecision:allow"), a "deny" without a non-empty reason, an
// exit status other than 0 and 2, or nothing before its timeout, or when
// it cannot start. So the hook always denies with a reason, and allows
// with updatedInput: the input as approved (the event's own, or an
// approver's edit, which Codex supports since openai/codex#20527), which
// Codex then runs. For Bash and apply_patch, updatedInput must hold a
// string "command" (else Codex refuses: "hook returned updatedInput
// without string field `command`"); other members are ignored. Exit 2
// with the reason on stderr blocks the call too, for either event.

// Codex's hook events.
const (
	codexEventPreToolUse        = "PreToolUse"
	codexEventPermissionRequest = "PermissionRequest"
)

var codexAgent = &hookAgent{
	name:    "codex",
	product: "Codex",
	events:  []string{codexEventPreToolUse, codexEventPermissionRequest},
	editable: func(ev *hookEvent) bool {
		return ev.HookEventName == codexEventPreToolUse
	},
	checkEdit: codexCheckEdit,
	output:    codexOutput,
}

// codexCommandTools are the tools whose hook input Codex reads back as
// {"command": string}: its shell tools, all named Bash in hooks, and
// apply_patch.
var codexCommandTools = []string{"Bash", "apply_patch"}

// codexCheckEdit refuses edited arguments Codex would not run for ev's
// tool: a shell command or a patch needs a string "command".
func codexCheckEdit(ev *hookEvent, edited json.RawMessage) error {
	if !slices.Contains(codexCommandTools, ev.ToolName) {
		return nil
	}
	var in struct {
		Command *string `json:"command"`
	}
	if err := json.Unmarshal(edited, &in); err != nil || in.Command == nil || strings.TrimSpace(*in.Command) == "" {
		return errors.New(`a ` + ev.ToolName + ` call needs a non-empty string "command"`)
	}
	return nil
}

func codexOutput(ev *hookEvent, d hookDecision) any {
	if ev == nil {
		return nil
	}
	switch ev.HookEventName {
	case codexEventPreToolUse:
		return map[string]any{"hookSpecificOutput": codexPreToolUseOutput(ev, d)}
	case codexEventPermissionRequest:
		return map[string]any{"hookSpecificOutput": codexPermissionRequestOutput(d)}
	}
	return nil
}

// codexPreToolUseOutput is Codex's PreToolUse hookSpecificOutput, the
// same shape as Claude Code's (claude.go), which Codex copied.
func codexPreToolUseOutput(ev *hookEvent, d hookDecision) claudePreToolUse {
	out := claudePreToolUse{HookEventName: codexEventPreToolUse, PermissionDecision: "deny", PermissionDecisionReason: codexReason(d)}
	if d.allow {
		out.PermissionDecision, out.UpdatedInput = "allow", d.edited
		if len(out.UpdatedInput) == 0 {
			out.UpdatedInput = ev.ToolInput
		}
	}
	return out
}

// codexPermissionRequestDecision is Codex's PermissionRequest
// hookSpecificOutput.
type codexPermissionRequestDecision struct {
	HookEventName string `json:"hookEventName"`
	Decision      struct {
		Behavior string `json:"behavior"`
		Message  string `json:"message,omitempty"`
	} `json:"decision"`
}

func codexPermissionRequestOutput(d hookDecision) codexPermissionRequestDecision {
	out := codexPermissionRequestDecision{HookEventName: codexEventPermissionRequest}
	out.Decision.Behavior, out.Decision.Message = "deny", codexReason(d)
	if d.allow {
		out.Decision.Behavior, out.Decision.Message = "allow", ""
	}
	return out
}

// codexReason is d's reason, never empty: Codex lets a call run when a
// PreToolUse denial has no reason.
func codexReason(d hookDecision) string {
	if strings.TrimSpace(d.reason) == "" {
		if d.allow {
			return "Approved through slackbot."
		}
		return "The tool call was denied through slackbot."
	}
	return d.reason
}
