package bot

import (
	"bytes"
	"encoding/json"
	"strings"
)

// promptFields are the input fields that say what a coding agent's tool
// will do, in the order a card leads with them: Bash's command, the file
// of Edit, Write and Read, a notebook, WebFetch's url, a search pattern.
var promptFields = []string{"command", "file_path", "notebook_path", "path", "url", "pattern", "query"}

// Limits of a permission-prompt card's confirmation text.
const (
	maxPromptLead = 1500
	maxPromptRest = 300
)

// unsetConfirmation is the confirmation of a card that sets none: a
// permission prompt's, else agentrunner's default.
func unsetConfirmation(c Card) string {
	if c.PromptAgent != "" {
		return promptConfirmation(c.PromptAgent, c.ToolLabel, c.Args)
	}
	return defaultConfirmation(c.ToolLabel, c.Args)
}

// defaultConfirmation is agentrunner.DefaultConfirmation, e.g.
// `Run delete_file({"path":"temp.txt"})?`, made only as long as a card can
// show: long arguments show their start and their end, never compacted
// whole.
func defaultConfirmation(tool string, args json.RawMessage) string {
	text, _ := compactEnds(args, maxSectionText)
	return "Run " + tool + "(" + text + ")?"
}

// promptConfirmation is the text a card shows for a coding agent's
// permission prompt (approval.MetaPermissionPrompt): what the tool will do
// first — "Claude Code wants to run `Bash`: `rm -rf build/`" — then the
// rest of its input, compact and cut short in its middle (the arguments
// block below shows it all).
func promptConfirmation(agent, tool string, args json.RawMessage) string {
	var input map[string]json.RawMessage
	_ = json.Unmarshal(args, &input) // not an object: no lead, the rest shows it
	lead, leadKey := "", ""
	for _, k := range promptFields {
		var s string
		if json.Unmarshal(input[k], &s) == nil && strings.TrimSpace(s) != "" {
			lead, leadKey = s, k
			break
		}
	}
	var b strings.Builder
	b.WriteString(agent + " wants to run `" + tool + "`")
	if lead != "" {
		// Its end shows however long or padded it is (see fitEnds).
		b.WriteString(": `" + fitEnds(lead, maxPromptLead, asIs) + "`")
	}
	rest := args
	if leadKey != "" {
		delete(input, leadKey)
		if len(input) == 0 {
			return b.String()
		}
		rest, _ = json.Marshal(input)
	}
	if len(bytes.TrimSpace(rest)) == 0 || string(bytes.TrimSpace(rest)) == "{}" {
		return b.String()
	}
	text, _ := compactEnds(rest, maxPromptRest)
	b.WriteString(", with " + text)
	return b.String()
}
