package hook

import (
	"encoding/json"
	"strings"
	"time"

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
//   - Codex: its PreToolUse and PermissionRequest hooks, in codex.go.

// Gemini CLI's BeforeTool contract is in gemini.go.

// hookEvent is the hook input of any of the agents; fields one agent does not
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
	// PromptID is Claude Code's id of the prompt a run answers: the same
	// for every call of the run (claude_run.go).
	PromptID string `json:"prompt_id"`
	// PermissionSuggestions are Claude Code's PermissionRequest
	// suggestions (claude_permission.go).
	PermissionSuggestions json.RawMessage `json:"permission_suggestions"`

	// offered is the always-allow rule the hook offered slackbot, and
	// offeredRaw that rule as the agent wrote it.
	offered    *agentrunner.AlwaysAllow
	offeredRaw json.RawMessage
	// localDiff is a Write's diff against the file here (cards.go).
	localDiff string
}

// hookAgent is one agent's hook contract.
type hookAgent struct {
	name    string   // the command's argument
	product string   // as people know it, on the card
	events  []string // the hook events it reads
	// editable: the agent can run edited arguments in place of its own
	// when it sent ev.
	editable func(ev *hookEvent) bool
	// checkEdit, when set, refuses edited arguments the agent would not
	// run for ev.
	checkEdit func(ev *hookEvent, edited json.RawMessage) error
	// output is the JSON to print for d in answer to ev, the event as far
	// as it was read: nil when stdin held none, and possibly one whose
	// reading was refused (another event's name). It returns nil when the
	// agent has no JSON for ev; the command then exits ExitBlock.
	output func(ev *hookEvent, d hookDecision) any
	// wait, when set, is the wait without --timeout, if the agent kills
	// its hooks before DefaultTimeout.
	wait time.Duration
	// vet, when set, checks a decision against what the agent will do
	// with it (gemini.go: an edit Gemini CLI cannot run exactly).
	vet func(*hookEvent, hookDecision) hookDecision
	// offersRules, when set, says whether ev offers always-allow rules,
	// which the hook passes to slackbot and back (claude_permission.go).
	offersRules func(ev *hookEvent) bool
}

var hookAgents = map[string]*hookAgent{
	"claude-code": {name: "claude-code", product: "Claude Code", events: []string{"PreToolUse", claudeEventPermissionRequest},
		editable: func(*hookEvent) bool { return true }, output: claudeCodeOutput, offersRules: isClaudePermissionRequest},
	"codex": codexAgent,
	"gemini": {name: "gemini", product: "Gemini CLI", events: []string{"BeforeTool"},
		editable: func(*hookEvent) bool { return true }, output: geminiOutput, wait: geminiDefaultWait, vet: geminiEdit},
}

// defaultWait is the hook's wait without --timeout.
func (a *hookAgent) defaultWait() time.Duration {
	if a.wait > 0 {
		return a.wait
	}
	return DefaultTimeout
}

// request is the approval request for ev's tool call: the card shows the
// agent, where it runs and why it asks.
func (a *hookAgent) request(ev *hookEvent, callID string) client.CreateRequest {
	req := client.CreateRequest{
		Approvals: []agentrunner.ToolCallPart{{ToolName: ev.ToolName, Args: ev.ToolInput, ToolCallID: callID}},
		Metadata:  a.metadata(ev, callID),
		Requester: a.requester(ev),
		Context:   a.context(ev),
	}
	if a.offersRules != nil && a.offersRules(ev) {
		offerRule(ev, req.Metadata[callID])
	}
	return req
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
	// The call's own description is not repeated here: the card shows it
	// with the change (a command's "The agent's description") or among
	// the arguments.
	lines := []string{first + "."}
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

// decision reads how the request ended for the call callID of ev.
func (a *hookAgent) decision(ev *hookEvent, st *client.Approval, callID string) hookDecision {
	if st.Results != nil {
		if ans, ok := st.Results.Approvals[callID]; ok {
			if call, _ := st.Call(callID); ans.Approved && call.ByClient {
				// The hook's key is the agent's: its own approval (on a
				// route that lets it approve at /v1) is no one else's
				// agreement, so the agent does not act on it.
				return denyf("The API key that asked (%s) approved this call itself; the hook runs only a call a person, a policy or a grant approved in slackbot.",
					st.Results.AnsweredBy[callID])
			}
			return a.answer(ev, ans, st.Results.AnsweredBy[callID])
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

// answer turns a decision on ev's call into the agent's terms.
func (a *hookAgent) answer(ev *hookEvent, ans agentrunner.ApprovalResult, by string) hookDecision {
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
	if !a.editable(ev) {
		return denyf("%s only with changed arguments, which a %s %s hook cannot pass on, so the call did not run. "+
			"To run it as approved, make the call again with exactly these arguments: %s", reason, a.product, ev.HookEventName, ans.OverrideArgs)
	}
	if a.checkEdit != nil {
		if err := a.checkEdit(ev, ans.OverrideArgs); err != nil {
			return denyf("%s only with changed arguments that %s cannot run (%v), so the call did not run.", reason, a.product, err)
		}
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
