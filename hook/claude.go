package hook

import "encoding/json"

// This file is Claude Code's side of the hook: its PreToolUse decision
// output (https://code.claude.com/docs/en/hooks, "PreToolUse decision
// control"; the event it reads is hookEvent in agent.go).

// claudePreToolUse is Claude Code's PreToolUse hookSpecificOutput, which
// Codex's PreToolUse shares (codex.go).
type claudePreToolUse struct {
	HookEventName            string          `json:"hookEventName"`
	PermissionDecision       string          `json:"permissionDecision"`
	PermissionDecisionReason string          `json:"permissionDecisionReason"`
	UpdatedInput             json.RawMessage `json:"updatedInput,omitempty"`
}

// claudeCodeOutput answers ev in its own event's shape: PermissionRequest
// (claude_permission.go) or PreToolUse.
func claudeCodeOutput(ev *hookEvent, d hookDecision) any {
	if isClaudePermissionRequest(ev) {
		return claudePermissionOutput(d)
	}
	out := claudePreToolUse{HookEventName: "PreToolUse", PermissionDecision: "deny", PermissionDecisionReason: d.reason}
	switch {
	case d.allow:
		out.PermissionDecision, out.UpdatedInput = "allow", d.edited
	case d.deferred:
		out.PermissionDecision = "defer"
	}
	return map[string]any{"hookSpecificOutput": out}
}
