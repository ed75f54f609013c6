package approval

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"
)

// What a person must see of a coding agent's tool call is the change it
// makes, not its JSON: the command a Bash call runs, the unified diff of an
// Edit, the content a Write puts in a file, the patch Codex applies. The
// Change of a CallView is built here from the call's arguments — the same
// arguments that run, so what the card shows is what runs — and a surface
// lays it out (bot: as code blocks, cut to Slack's limits, with the whole
// text a click away).

// MetaAgent is the member of a call's request metadata
// (DeferredToolRequests.metadata[tool_call_id]) in which a coding agent's
// hook names the agent whose tool the call is: "claude-code", "codex" or
// "gemini" (the hook command's names). With it, the card shows the call's
// Change and an approver can edit its command or strings against the
// tool's built-in schema (AgentSchema). It is the API client's word, like
// its requester: it chooses how the arguments are shown and checked, never
// what runs, and every argument the Change does not lead with is still
// shown (Change.Rest).
const MetaAgent = "slackbot_agent"

// MetaLocalDiff is the member of a call's request metadata in which a
// hook sends a Write's diff against the file as it is on the agent's
// machine, computed there (the server cannot read that file). The card
// shows it marked as computed on the agent's machine; nothing trusts it:
// what runs is the call's content, which the card shows above it.
const MetaLocalDiff = "slackbot_local_diff"

// The agents MetaAgent names.
const (
	AgentClaudeCode = "claude-code"
	AgentCodex      = "codex"
	AgentGemini     = "gemini"
)

// ChangeKind says what a Change's Text is.
type ChangeKind string

// The kinds of change.
const (
	// ChangeCommand: a shell command, as the agent's shell runs it.
	ChangeCommand ChangeKind = "command"
	// ChangeDiff: a unified diff of the strings an edit replaces (Edit,
	// MultiEdit, Gemini CLI's replace), made here from old → new.
	ChangeDiff ChangeKind = "diff"
	// ChangeContent: the whole content a file is written with.
	ChangeContent ChangeKind = "content"
	// ChangePatch: a patch as the agent applies it (Codex's apply_patch).
	ChangePatch ChangeKind = "patch"
)

// MaxChangeText bounds a Change's Text, in bytes: more than a Slack modal
// shows (about 280,000 characters), so the cut is a surface's, except for
// arguments larger than any surface could show.
const MaxChangeText = 320 << 10

// Change is what a coding agent's tool call changes, as a person must see
// it to decide.
type Change struct {
	// Agent is the MetaAgent the call came with ("claude-code").
	Agent string     `json:"agent"`
	Kind  ChangeKind `json:"kind"`
	// Path is the file an edit, a write or a diff is about; empty for a
	// command or a patch (a patch names its files itself).
	Path string `json:"path,omitempty"`
	// Text is the command, the unified diff, the content or the patch: at
	// most MaxChangeText bytes, cut at a line end; Cut says it was.
	Text string `json:"text"`
	Cut  bool   `json:"cut,omitempty"`
	// Description is the agent's own words for the call (Bash's
	// description): shown as the agent's, never as what runs.
	Description string `json:"description,omitempty"`
	// LocalDiff is a Write's diff against the file on the agent's machine,
	// as the hook computed it there (MetaLocalDiff); LocalDiffCut says it
	// was cut to MaxChangeText.
	LocalDiff    string `json:"local_diff,omitempty"`
	LocalDiffCut bool   `json:"local_diff_cut,omitempty"`
	// Rest are the call's other arguments (a Bash timeout, an Edit's
	// replace_all, anything the agent added), as a compact JSON object;
	// nil when there are none. They run too, so they are shown too.
	Rest json.RawMessage `json:"rest,omitempty"`
}

// Lead is the sentence a card leads with for a change:
// "Claude Code wants to run a command".
func (ch *Change) Lead() string {
	who := AgentName(ch.Agent)
	switch ch.Kind {
	case ChangeCommand:
		return who + " wants to run a command"
	case ChangeDiff:
		return who + " wants to edit " + ch.Path
	case ChangeContent:
		return who + " wants to write " + ch.Path
	default:
		return who + " wants to apply a patch"
	}
}

// Label names a change's text on a card: "Command", "Diff", "Content",
// "Patch".
func (ch *Change) Label() string {
	switch ch.Kind {
	case ChangeCommand:
		return "Command"
	case ChangeDiff:
		return "Diff"
	case ChangeContent:
		return "Content"
	default:
		return "Patch"
	}
}

// LocalDiffLabel is what a card says of a Write's LocalDiff: where it was
// computed, and that it is not what runs.
const LocalDiffLabel = "Diff against the file now, computed on the agent's machine by its hook (for reading only: what runs is the content above)"

// AgentName is how people know an agent: "Claude Code" for "claude-code".
func AgentName(agent string) string {
	switch agent {
	case AgentClaudeCode:
		return "Claude Code"
	case AgentCodex:
		return "Codex"
	case AgentGemini:
		return "Gemini CLI"
	}
	return "The agent"
}

// CallAgent is the coding agent whose tool call id of r is: the MetaAgent
// its hook sent, or Claude Code for a permission prompt of Claude Code
// (MetaPermissionPrompt, through the MCP gateway's approval_prompt); ""
// for any other call.
func CallAgent(r *Request, id string) string {
	md := r.Requests.Metadata[id]
	if agent, _ := md[MetaAgent].(string); agent != "" {
		return agent
	}
	if prompt, _ := md[MetaPermissionPrompt].(string); prompt == "Claude Code" {
		return AgentClaudeCode
	}
	return ""
}

// BuildChange is the Change of a call of tool by agent with args (a JSON
// object), or nil when the agent's tool is not one whose change slackbot
// knows how to show or args are not as the tool takes them (a member of
// the wrong type): the card then shows the arguments as JSON, as for any
// tool. md is the call's request metadata (for MetaLocalDiff).
func BuildChange(agent, tool string, args json.RawMessage, md map[string]any) *Change {
	t := agentTool(agent, tool)
	if t == nil {
		return nil
	}
	in, ok := decodeObject(args)
	if !ok {
		return nil
	}
	ch := t.change(in)
	if ch == nil {
		return nil
	}
	ch.Agent = agent
	if ch.Kind == ChangeContent {
		if local, _ := md[MetaLocalDiff].(string); local != "" {
			ch.LocalDiff, ch.LocalDiffCut = capText(local)
		}
	}
	rest := map[string]json.RawMessage{}
	for k, v := range in {
		if !slices.Contains(t.shown, k) {
			rest[k] = v
		}
	}
	if len(rest) > 0 {
		ch.Rest, _ = json.Marshal(rest) // sorted keys; raw values as they came
	}
	return ch
}

// decodeObject reads args as a JSON object of members; ok is false for
// anything else.
func decodeObject(args json.RawMessage) (map[string]json.RawMessage, bool) {
	var in map[string]json.RawMessage
	if err := json.Unmarshal(args, &in); err != nil || in == nil {
		return nil, false
	}
	return in, true
}

// str reads member k of in as a string; ok is false when it is missing or
// not a string.
func str(in map[string]json.RawMessage, k string) (string, bool) {
	raw, present := in[k]
	if !present {
		return "", false
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return "", false
	}
	return s, true
}

// optStr reads an optional string member: ok is false only when it is
// present and not a string.
func optStr(in map[string]json.RawMessage, k string) (string, bool) {
	raw, present := in[k]
	if !present || bytes.Equal(bytes.TrimSpace(raw), []byte("null")) {
		return "", true
	}
	return str(in, k)
}

// commandChange is a shell command's change: command, with the agent's
// description beside it.
func commandChange(in map[string]json.RawMessage) *Change {
	cmd, ok := str(in, "command")
	desc, okDesc := optStr(in, "description")
	if !ok || !okDesc {
		return nil
	}
	text, cut := capText(cmd)
	return &Change{Kind: ChangeCommand, Text: text, Cut: cut, Description: desc}
}

// patchChange is Codex's apply_patch, whose hook input holds the patch in
// "command" (codex-rs ApplyPatchHandler: tool_input {"command": patch}).
func patchChange(in map[string]json.RawMessage) *Change {
	patch, ok := str(in, "command")
	if !ok {
		return nil
	}
	text, cut := capText(patch)
	return &Change{Kind: ChangePatch, Text: text, Cut: cut}
}

// contentChange is a write: the file and the content it is written with.
func contentChange(in map[string]json.RawMessage) *Change {
	path, okPath := str(in, "file_path")
	content, ok := str(in, "content")
	if !okPath || !ok {
		return nil
	}
	text, cut := capText(content)
	return &Change{Kind: ChangeContent, Path: path, Text: text, Cut: cut}
}

// editChange is one replacement of old_string by new_string in file_path
// (Claude Code's Edit; Gemini CLI's replace, whose "all occurrences" flag
// is allMember) as a unified diff.
func editChange(allMember string) func(map[string]json.RawMessage) *Change {
	return func(in map[string]json.RawMessage) *Change {
		path, okPath := str(in, "file_path")
		old, okOld := str(in, "old_string")
		repl, okNew := str(in, "new_string")
		if !okPath || !okOld || !okNew {
			return nil
		}
		var all bool
		if raw, present := in[allMember]; present && json.Unmarshal(raw, &all) != nil {
			return nil
		}
		text, cut := capText(unifiedDiff(path, editLabel(0, 1, all), old, repl))
		return &Change{Kind: ChangeDiff, Path: path, Text: text, Cut: cut}
	}
}

// maxEdits bounds the edits of a MultiEdit shown as diffs; more are in
// Rest's place: the card says how many were left out.
const maxEdits = 100

// multiEditChange is Claude Code's MultiEdit: one diff per edit, in order,
// each applied to the file as the ones before it left it.
func multiEditChange(in map[string]json.RawMessage) *Change {
	path, okPath := str(in, "file_path")
	var edits []map[string]json.RawMessage
	if !okPath || json.Unmarshal(in["edits"], &edits) != nil || len(edits) == 0 {
		return nil
	}
	var b strings.Builder
	for i, e := range edits {
		if i == maxEdits {
			fmt.Fprintf(&b, "# … and %d more edits, not shown here\n", len(edits)-maxEdits)
			break
		}
		old, okOld := str(e, "old_string")
		repl, okNew := str(e, "new_string")
		var all bool
		if raw, present := e["replace_all"]; present && json.Unmarshal(raw, &all) != nil {
			return nil
		}
		if !okOld || !okNew {
			return nil
		}
		b.WriteString(unifiedDiff(path, editLabel(i, len(edits), all), old, repl))
		if b.Len() > MaxChangeText {
			break
		}
	}
	text, cut := capText(b.String())
	return &Change{Kind: ChangeDiff, Path: path, Text: text, Cut: cut}
}

// editLabel says which edit a diff is and whether it replaces every
// occurrence.
func editLabel(i, n int, all bool) string {
	var parts []string
	if n > 1 {
		parts = append(parts, fmt.Sprintf("edit %d of %d", i+1, n))
	}
	if all {
		parts = append(parts, "every occurrence")
	}
	return strings.Join(parts, ", ")
}

// capText cuts s to MaxChangeText bytes, at the last line end before the
// limit when there is one, on a rune boundary otherwise; cut reports it
// was cut.
func capText(s string) (text string, cut bool) {
	if len(s) <= MaxChangeText {
		return s, false
	}
	n := MaxChangeText
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	if nl := strings.LastIndexByte(s[:n], '\n'); nl > n/2 {
		n = nl + 1
	}
	return s[:n], true
}

// DescriptionLabel comes before an agent's own description of its call,
// which is its words, not what runs.
const DescriptionLabel = "The agent's description: "

// RestLabel comes before a change's other arguments.
const RestLabel = "Other arguments: "

// ChangeCutWords says that a change is longer than slackbot shows, and
// that all of it runs.
func ChangeCutWords(ch *Change) string {
	return fmt.Sprintf("This %s is longer than %d KiB: slackbot shows its start only, and the whole of it runs. Deny it unless you know the rest.",
		strings.ToLower(ch.Label()), MaxChangeText>>10)
}

// AgentEditIntro is the first line of the form that edits an agent's
// tool call.
func AgentEditIntro(ch *Change) string {
	return ch.Lead() + ". Edit what it runs, then approve: the other arguments stay as they are, and the edit is checked against the tool's schema and the route's policy."
}
