package hook

import "encoding/json"

// This file is Claude Code's side of the hook: its PreToolUse decision
// output (https://code.claude.com/docs/en/hooks, "PreToolUse decision
// control"; the event it reads is hookEvent in agent.go).

// claudePreToolUse is Claude Code's PreToolUse hookSpecificOutput.
type claudePreToolUse struct {
	HookEventName            string          `json:"hookEventName"`
	PermissionDecision       string          `json:"permissionDecision"`
	PermissionDecisionReason string          `json:"permissionDecisionReason"`
	UpdatedInput             json.RawMessage `json:"updatedInput,omitempty"`
}

func claudeCodeOutput(d hookDecision) any {
	out := claudePreToolUse{HookEventName: "PreToolUse", PermissionDecision: "deny", PermissionDecisionReason: d.reason}
	if d.allow {
		out.PermissionDecision, out.UpdatedInput = "allow", d.edited
	}
	return map[string]any{"hookSpecificOutput": out}
}
