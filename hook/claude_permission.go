package hook

import (
	"bytes"
	"encoding/json"

	"github.com/slackapprove/slackbot/agentrunner"
	"github.com/slackapprove/slackbot/client"
)

// Claude Code's PermissionRequest hook (https://code.claude.com/docs/en/hooks,
// "PermissionRequest"; checked against Claude Code 2.1.332's own schema
// of the hook's input and output, which its binary embeds). It fires only
// when Claude Code would ask the user (a call its rules allow, such as
// `ls` or Read, never reaches it), with no tool_use_id; stdin holds
// session_id, transcript_path, cwd, permission_mode, hook_event_name,
// tool_name, tool_input and permission_suggestions: the permission
// updates Claude Code's own prompt would offer as "Yes, and don't ask
// again" ({"type":"addRules","rules":[{"toolName":"Bash",
// "ruleContent":"npm test:*"}],"behavior":"allow","destination":
// "localSettings"}, among others). The hook prints
// {"hookSpecificOutput":{"hookEventName":"PermissionRequest","decision":
// {"behavior":"allow","updatedInput":…,"updatedPermissions":[…]}}} or
// {"behavior":"deny","message":…}. It never sets "interrupt": a denial
// tells the model why and lets Claude Code go on, as the PreToolUse
// denial does.
//
// The first always-allow rule among the suggestions (agentrunner.
// AlwaysAllow) goes to slackbot with the call; a route with
// offer_always_allow shows it on the card as "Approve and always allow
// <rule>", and only when slackbot hands back exactly that rule does the
// hook return it in updatedPermissions.

// claudeEventPermissionRequest is the hook_event_name of Claude Code's
// PermissionRequest.
const claudeEventPermissionRequest = "PermissionRequest"

// isClaudePermissionRequest reports whether ev is Claude Code's
// PermissionRequest, which offers always-allow rules and has no defer.
func isClaudePermissionRequest(ev *hookEvent) bool {
	return ev != nil && ev.HookEventName == claudeEventPermissionRequest
}

// claudePermissionRequest is Claude Code's PermissionRequest
// hookSpecificOutput.
type claudePermissionRequest struct {
	HookEventName string `json:"hookEventName"`
	Decision      struct {
		Behavior           string            `json:"behavior"`
		UpdatedInput       json.RawMessage   `json:"updatedInput,omitempty"`
		UpdatedPermissions []json.RawMessage `json:"updatedPermissions,omitempty"`
		Message            string            `json:"message,omitempty"`
	} `json:"decision"`
}

func claudePermissionOutput(d hookDecision) any {
	out := claudePermissionRequest{HookEventName: "PermissionRequest"}
	out.Decision.Behavior, out.Decision.Message = "deny", d.reason
	if d.allow {
		out.Decision.Behavior, out.Decision.Message, out.Decision.UpdatedInput = "allow", "", d.edited
		if len(d.rule) > 0 {
			out.Decision.UpdatedPermissions = []json.RawMessage{d.rule}
		}
	}
	return map[string]any{"hookSpecificOutput": out}
}

// offerRule puts the first always-allow rule among ev's
// permission_suggestions, as Claude Code wrote it, in md, the metadata of
// the call, with the session it comes from (the audit stream names
// it); suggestions that are no always-allow rule are not offered.
func offerRule(ev *hookEvent, md map[string]any) {
	var suggestions []json.RawMessage
	if json.Unmarshal(ev.PermissionSuggestions, &suggestions) != nil {
		return
	}
	for _, s := range suggestions {
		a, err := agentrunner.ParseAlwaysAllow(s)
		if err != nil {
			continue
		}
		ev.offered, ev.offeredRaw = a, bytes.TrimSpace(s)
		md[agentrunner.MetaAlwaysAllow] = ev.offeredRaw
		if ev.SessionID != "" {
			md[agentrunner.MetaAgentSession] = shorten(ev.SessionID, 200)
		}
		return
	}
}

// withRule adds to d, an approval of call callID, the rule an approver
// chose for it: slackbot's results carry it only when someone chose
// "Approve and always allow", and the hook returns it only when it is
// the rule the hook offered, as Claude Code wrote it. Any other rule
// denies the call: a rule this hook did not offer is never passed on.
func withRule(d hookDecision, st *client.Approval, callID string, ev *hookEvent) hookDecision {
	if !d.allow || st.Results == nil {
		return d
	}
	v, ok := st.Results.Metadata[callID][agentrunner.MetaAlwaysAllow]
	if !ok {
		return d
	}
	got, err := agentrunner.AlwaysAllowFrom(v)
	if err != nil || !got.Equal(ev.offered) {
		return denyf("slackbot approved this call with an always-allow rule this hook did not offer, so the call did not run.")
	}
	d.rule = ev.offeredRaw
	d.reason = d.reason + " Always allowed: " + got.Rule() + "."
	return d
}
