package bot

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/slack-go/slack"

	"github.com/slackapprove/slackbot/approval"
)

// The form that edits a coding agent's own tool call: its command or its
// strings, one input each, never its JSON (approval.EditFields), and the
// decision its submission makes (approval.EditAgentArgs).

// Block ids and action ids of the fields of an agent tool's edit form:
// the first field's block is BlockIDEditArgs, so the form's problems show
// under it; each input's action id is editFieldPrefix + its key.
const editFieldPrefix = "field."

// agentEditModal is EditArgsModal for an agent's tool: one input per
// field a person edits (its command, its strings), not its JSON; the
// other arguments are kept as they are. A field longer than a Slack input
// takes is shown, not offered, and kept.
func agentEditModal(c Card, ref approval.MessageRef, current json.RawMessage, w approval.FormWords) (slack.ModalViewRequest, bool) {
	fields := approval.EditFields(c.Change.Agent, c.ToolName, current)
	if len(fields) == 0 {
		return slack.ModalViewRequest{}, false
	}
	view := slack.ModalViewRequest{
		Type:            slack.VTModal,
		CallbackID:      CallbackEditArgs,
		Title:           plain(w.Title, true),
		Close:           plain(w.Cancel, true),
		PrivateMetadata: encodeModalMetadata(c, ref),
	}
	blocks := []slack.Block{slack.NewSectionBlock(plain(fitPlain(approval.AgentEditIntro(c.Change), maxSectionText), false), nil, nil)}
	inputs := 0
	for _, f := range fields {
		if len(blocks) >= maxModalBlocks-1 {
			break
		}
		if n := textLen(f.Value); n > maxInputValue {
			blocks = append(blocks, slack.NewSectionBlock(plain(fmt.Sprintf("%s: %s characters, more than Slack can edit (%s); kept as it is.",
				f.Label, thousands(n), thousands(maxInputValue)), false), nil, nil))
			continue
		}
		input := slack.NewPlainTextInputBlockElement(nil, editFieldPrefix+f.Key).
			WithMultiline(f.Multiline).
			WithMaxLength(maxInputValue).
			WithInitialValue(f.Value)
		blockID := BlockIDEditArgs
		if inputs > 0 {
			blockID += "." + f.Key
		}
		block := slack.NewInputBlock(blockID, plain(f.Label, true), nil, input)
		// A field may be emptied (Edit's new_string): the schema says
		// whether that is allowed.
		block.Optional = true
		blocks = append(blocks, block)
		inputs++
	}
	if inputs > 0 {
		view.Submit = plain(w.Submit, true)
	}
	view.Blocks = slack.Blocks{BlockSet: blocks}
	return view, true
}

// editedFields reads the fields of an agent tool's edit form: key →
// value, nil when the form is not one.
func editedFields(values map[string]map[string]slack.BlockAction) map[string]string {
	var out map[string]string
	for _, actions := range values {
		for id, a := range actions {
			if key, ok := strings.CutPrefix(id, editFieldPrefix); ok {
				if out == nil {
					out = map[string]string{}
				}
				out[key] = a.Value
			}
		}
	}
	return out
}

// editedAgentArgs is the decision of an agent tool's edit form: the
// call's arguments with the fields set (approval.EditAgentArgs, which
// refuses a field the form does not offer), checked by the Service like
// any edit when it decides.
func editedAgentArgs(d approval.Decision, t *clickTarget, fields map[string]string) (approval.Decision, string) {
	call, _ := t.approval.Requests.Call(t.call.ID)
	args, err := call.ArgsObject()
	if err != nil {
		return d, "These arguments cannot be edited: they are not a JSON object."
	}
	edited, err := approval.EditAgentArgs(approval.CallAgent(t.approval, t.call.ID), call.ToolName, args, fields)
	if err != nil {
		return d, approval.ErrorMessage(err)
	}
	d.OverrideArgs = edited
	return d, ""
}
