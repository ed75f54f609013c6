package hook

import (
	"encoding/json"
	"slices"
	"strings"
	"time"
)

// Gemini CLI's BeforeTool hook, as documented in the hooks reference that
// @google/gemini-cli 0.61.0 ships (bundle/docs/hooks/reference.md,
// "BeforeTool"; https://geminicli.com/docs/hooks/reference) and as that
// version's bundle implements it (HookRunner, BeforeToolHookOutput,
// evaluateBeforeToolHook):
//
//   - stdin holds session_id, transcript_path, cwd, hook_event_name
//     ("BeforeTool"), timestamp, tool_name, tool_input and, for MCP tools,
//     mcp_context; there is no tool call id.
//   - the hook prints {"decision":"allow"|"deny","reason":…}; a denial's
//     reason goes to the model as the tool's error ("Tool execution
//     blocked: <reason>") and the turn goes on. To run other arguments it
//     adds "hookSpecificOutput":{"tool_input":{…}}.
//   - exit 0: stdout is read as JSON; stdout that is not JSON is taken as
//     "allow". Exit 2: the call is blocked with stderr as the reason. Exit
//     1: a warning, and the call goes on. Any other status with text is a
//     block. A hook that outlives its timeout (settings "timeout", in
//     milliseconds, 60000 by default) is killed and the call goes on.
//
// So the hook must print its JSON and exit 0 before Gemini CLI's timeout:
// without --timeout it waits geminiDefaultWait, inside Gemini CLI's
// default, and the README's settings give it 600000 ms for --timeout 9m.
//
// An allow does not skip Gemini CLI's own policy: the hook runs first, and
// a call the policy would ask about is still asked in the terminal, while
// headless runs (gemini -p) refuse it unless --approval-mode=yolo, where
// the hook is the only gate.

// geminiDefaultWait is the hook's wait without --timeout: below Gemini
// CLI's default hook timeout (60 s), so that a settings.json without a
// "timeout" still gets the hook's denial rather than a killed hook, which
// lets the call run. The hook may take createGrace or cancelTimeout (5 s)
// past its wait to end the request; 45 s leaves room for that.
const geminiDefaultWait = 45 * time.Second

// geminiBeforeTool is Gemini CLI's BeforeTool hook output.
type geminiBeforeTool struct {
	Decision           string                `json:"decision"`
	Reason             string                `json:"reason,omitempty"`
	HookSpecificOutput *geminiBeforeToolSpec `json:"hookSpecificOutput,omitempty"`
}

type geminiBeforeToolSpec struct {
	HookEventName string          `json:"hookEventName"`
	ToolInput     json.RawMessage `json:"tool_input"`
}

func geminiOutput(_ *hookEvent, d hookDecision) any {
	if !d.allow {
		return geminiBeforeTool{Decision: "deny", Reason: d.reason}
	}
	// No reason with an allow: Gemini CLI joins the reasons of every hook
	// of the call, and another hook's denial would carry ours.
	out := geminiBeforeTool{Decision: "allow"}
	if d.edited != nil {
		out.HookSpecificOutput = &geminiBeforeToolSpec{HookEventName: "BeforeTool", ToolInput: d.edited}
	}
	return out
}

// geminiEdit keeps an approval with edited arguments only when Gemini CLI
// will run exactly them. Its reference says the hook's tool_input "merges
// with and overrides" the model's arguments (0.61.0 builds the call from
// the hook's object alone), so an argument the approver removed could
// still run under the merge: such an edit is passed back, as Codex's are,
// as a denial that gives the model the approved arguments.
func geminiEdit(ev *hookEvent, d hookDecision) hookDecision {
	if !d.allow || d.edited == nil {
		return d
	}
	var before, after map[string]json.RawMessage
	if json.Unmarshal(ev.ToolInput, &before) != nil || json.Unmarshal(d.edited, &after) != nil {
		return denyf("%s The edited arguments could not be read, so the call did not run.", d.reason)
	}
	var dropped []string
	for k := range before {
		if _, ok := after[k]; !ok {
			dropped = append(dropped, k)
		}
	}
	if len(dropped) == 0 {
		return d
	}
	slices.Sort(dropped)
	return denyf("%s But the edit removes %s, which a Gemini CLI hook cannot take away (Gemini CLI merges the hook's arguments over the model's), so the call did not run. "+
		"To run it as approved, make the call again with exactly these arguments: %s", d.reason, strings.Join(dropped, ", "), d.edited)
}
