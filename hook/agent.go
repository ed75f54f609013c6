package hook

import (
	"encoding/json"
	"strings"

	"github.com/slackapprove/slackbot/agentrunner"
	"github.com/slackapprove/slackbot/client"
)

// This file holds what the hook knows of each agent: the event it reads
// on stdin and the decision JSON it prints. The shapes are the agents'
// documented hook contracts:
//
//   - Claude Code, PreToolUse (https://code.claude.com/docs/en/hooks,
//     "PreToolUse input" and "PreToolUse decision control"): stdin holds
//     session_id, transcript_path, cwd, permission_mode, hook_event_name,
//     tool_name, tool_input and tool_use_id; the hook prints
//     {"hookSpecificOutput":{"hookEventName":"PreToolUse",
//     "permissionDecision":"allow"|"deny","permissionDecisionReason":…}}
//     and, to run edited arguments, "updatedInput": the whole input, which
//     replaces the tool's input object.
//   - Codex, PermissionRequest (https://developers.openai.com/codex/hooks,
//     "PermissionRequest"; schema in openai/codex
//     codex-rs/hooks/schema/generated/permission-request.command.*.schema.json):
//     it runs when Codex is about to ask for approval; stdin holds
//     session_id, turn_id, transcript_path, cwd, hook_event_name, model,
//     permission_mode, tool_name and tool_input (no tool use id); the hook
//     prints {"hookSpecificOutput":{"hookEventName":"PermissionRequest",
//     "decision":{"behavior":"allow"|"deny","message":…}}}. Codex fails
//     the hook when the decision holds updatedInput, so an approval with
//     edited arguments is passed back as a denial that gives the model the
//     approved arguments to call with.

// hookEvent is the hook input of either agent; fields one agent does not
// send stay empty.
type hookEvent struct {
	SessionID      string          `json:"session_id"`
	TurnID         string          `json:"turn_id"`
	Cwd            string          `json:"cwd"`
	HookEventName  string          `json:"hook_event_name"`
	PermissionMode string          `json:"permission_mode"`
	Model          string          `json:"model"`
	ToolName       string          `json:"tool_name"`
	ToolInput      json.RawMessage `json:"tool_input"`
	ToolUseID      string          `json:"tool_use_id"`
	// localDiff is a Write's diff against the file here (cards.go).
	localDiff string
}

// hookAgent is one agent's hook contract.
type hookAgent struct {
	name    string // the command's argument
	product string // as people know it, on the card
	event   string // the hook event it reads
	// editable: the agent can run edited arguments in place of its own.
	editable bool
	output   func(hookDecision) any
}

var hookAgents = map[string]*hookAgent{
	"claude-code": {name: "claude-code", product: "Claude Code", event: "PreToolUse", editable: true, output: claudeCodeOutput},
	"codex":       {name: "codex", product: "Codex", event: "PermissionRequest", output: codexOutput},
}

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

// codexPermissionRequest is Codex's PermissionRequest hookSpecificOutput.
type codexPermissionRequest struct {
	HookEventName string `json:"hookEventName"`
	Decision      struct {
		Behavior string `json:"behavior"`
		Message  string `json:"message,omitempty"`
	} `json:"decision"`
}

func codexOutput(d hookDecision) any {
	out := codexPermissionRequest{HookEventName: "PermissionRequest"}
	out.Decision.Behavior, out.Decision.Message = "deny", d.reason
	if d.allow {
		out.Decision.Behavior, out.Decision.Message = "allow", ""
	}
	return map[string]any{"hookSpecificOutput": out}
}

// request is the approval request for ev's tool call: the card shows the
// agent, where it runs and why it asks.
func (a *hookAgent) request(ev *hookEvent, callID string) client.CreateRequest {
	return client.CreateRequest{
		Approvals: []agentrunner.ToolCallPart{{ToolName: ev.ToolName, Args: ev.ToolInput, ToolCallID: callID}},
		Metadata:  a.metadata(ev, callID),
		Requester: a.requester(ev),
		Context:   a.context(ev),
	}
}

// requester is "Claude Code (/home/me/app)", within the API's 200 bytes:
// the agent and where it works, which the card names and a grant on the
// card covers (every session in that directory; the context names the
// session).
func (a *hookAgent) requester(ev *hookEvent) string {
	if ev.Cwd == "" {
		return a.product
	}
	return shorten(a.product+" ("+shortenLeft(ev.Cwd, 120)+")", 200)
}

// context says what the agent is doing, within the API's 2000 bytes.
func (a *hookAgent) context(ev *hookEvent) string {
	first := a.product + " asks to run " + ev.ToolName
	if ev.Cwd != "" {
		first += " in " + ev.Cwd
	}
	lines := []string{first + "."}
	var in struct {
		Description string `json:"description"`
	}
	if json.Unmarshal(ev.ToolInput, &in) == nil && in.Description != "" {
		lines = append(lines, "Its reason: "+in.Description)
	}
	var about []string
	for _, f := range []struct{ name, value string }{
		{"session", ev.SessionID}, {"turn", ev.TurnID}, {"model", ev.Model}, {"permission mode", ev.PermissionMode},
	} {
		if f.value != "" {
			about = append(about, f.name+" "+f.value)
		}
	}
	if len(about) > 0 {
		lines = append(lines, strings.Join(about, ", ")+".")
	}
	return shorten(strings.Join(lines, "\n"), 2000)
}

// decision reads how the request ended for the call callID.
func (a *hookAgent) decision(st *client.Approval, callID string) hookDecision {
	if st.Results != nil {
		if ans, ok := st.Results.Approvals[callID]; ok {
			if call, _ := st.Call(callID); ans.Approved && call.ByClient {
				// The hook's key is the agent's: its own approval (on a
				// route that lets it approve at /v1) is no one else's
				// agreement, so the agent does not act on it.
				return denyf("The API key that asked (%s) approved this call itself; the hook runs only a call a person, a policy or a grant approved in slackbot.",
					st.Results.AnsweredBy[callID])
			}
			return a.answer(ans, st.Results.AnsweredBy[callID])
		}
	}
	switch st.Status {
	case client.StatusExpired:
		return noDecision(agentrunner.ReasonExpired)
	case client.StatusCancelled:
		return noDecision("the request was cancelled")
	case client.StatusFailed:
		return noDecision("slackbot could not ask for a decision")
	}
	return denyf("slackbot ended the request (%s) without a decision on this call", st.Status)
}

// answer turns a decision on the call into the agent's terms.
func (a *hookAgent) answer(ans agentrunner.ApprovalResult, by string) hookDecision {
	if !ans.Approved {
		return hookDecision{reason: ans.DenialMessage()}
	}
	reason := "Approved through slackbot"
	if by != "" {
		reason += " by " + by
	}
	if len(ans.OverrideArgs) == 0 {
		return hookDecision{allow: true, reason: reason + "."}
	}
	if !a.editable {
		return denyf("%s only with changed arguments, which a %s hook cannot pass on, so the call did not run. "+
			"To run it as approved, make the call again with exactly these arguments: %s", reason, a.product, ans.OverrideArgs)
	}
	return hookDecision{allow: true, reason: reason + ", with edited arguments.", edited: ans.OverrideArgs}
}

// shortenLeft cuts s to at most n bytes from the left, marking the cut:
// the end of a path says most.
func shortenLeft(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := len(s) - (n - len("…"))
	for cut < len(s) && (s[cut]&0xC0) == 0x80 {
		cut++
	}
	return "…" + s[cut:]
}
