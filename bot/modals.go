package bot

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/slack-go/slack"

	"github.com/slackapprove/slackbot/approval"
)

// ModalMetadata is what a modal's private_metadata carries back in its
// view_submission: the call it is about and the message to update.
type ModalMetadata struct {
	// Token is the resume token.
	Token string
	// CallID is the tool_call_id or, for an id too long to carry, a
	// reference that ResolveCallID maps to it.
	CallID string
	// Message is the approval message the modal was opened from; empty for
	// ArgsModal.
	Message approval.MessageRef
}

// ErrInvalidModalMetadata is returned by DecodeModalMetadata for
// private_metadata that the modals of this package did not write.
var ErrInvalidModalMetadata = errors.New("invalid modal metadata")

// The callback_id of each modal.
const (
	CallbackViewArgs   = "view_args"   // ArgsModal: read-only, never submitted
	CallbackDenyReason = "deny_reason" // DenyReasonModal
	CallbackEditArgs   = "edit_args"   // EditArgsModal
	CallbackAnswer     = "answer"      // AnswerModal
)

// The block_id and action_id of each modal's input, where a view_submission
// finds the value: view.state.values[BlockID…][ActionID…Input].
const (
	BlockIDDenyReason       = "deny_reason"
	ActionIDDenyReasonInput = "reason"
	BlockIDEditArgs         = "edit_args"
	ActionIDEditArgsInput   = "args"
	BlockIDAnswer           = "answer"
	ActionIDAnswerInput     = "answer_text"
)

// Slack's limits on modals, in characters.
const (
	maxModalTitle    = 24
	maxModalBlocks   = 100
	maxMetadata      = 3000
	maxInputValue    = 3000 // plain_text_input max_length
	maxDenyReasonLen = 2000
)

// metadataVersion marks the private_metadata format.
const metadataVersion = 1

// metadataJSON is the wire form of ModalMetadata, short because Slack
// allows 3,000 characters.
type metadataJSON struct {
	V       int    `json:"v"`
	Token   string `json:"t"`
	CallID  string `json:"c"`
	Channel string `json:"ch,omitempty"`
	TS      string `json:"ts,omitempty"`
}

// ArgsModal shows all of a call's arguments as pretty JSON, split over as
// many code blocks as Slack allows in a modal (about 280,000 characters);
// beyond that it shows their start and their end (where an appended
// command hides), and a note says how much is shown. It has no submit
// button.
func ArgsModal(c Card) slack.ModalViewRequest {
	c = normalize(c)
	if c.Change != nil {
		return changeModal(c)
	}
	blocks := []slack.Block{
		slack.NewSectionBlock(plain(fitPlain("Arguments of "+c.ToolLabel, maxSectionText), false), nil, nil),
	}
	// No more than the modal can show is ever indented or kept.
	p := prettyJSONEnds(c.Args, (maxModalBlocks-2)*maxSectionText, maxSectionText)
	blocks = append(blocks, previewChunks(p, maxModalBlocks-len(blocks))...)
	return slack.ModalViewRequest{
		Type:            slack.VTModal,
		CallbackID:      CallbackViewArgs,
		Title:           plain("Tool call arguments", true),
		Close:           plain("Close", true),
		Blocks:          slack.Blocks{BlockSet: blocks},
		PrivateMetadata: encodeModalMetadata(c, approval.MessageRef{}),
	}
}

// DenyReasonModal asks for the reason a call is denied; the model is told
// the reason. Its input is BlockIDDenyReason / ActionIDDenyReasonInput.
func DenyReasonModal(c Card, ref approval.MessageRef) slack.ModalViewRequest {
	c = normalize(c)
	w := approval.Form(approval.ChooseDenyWithReason, c)
	input := slack.NewPlainTextInputBlockElement(plain(w.Placeholder, false), ActionIDDenyReasonInput).
		WithMultiline(true).
		WithMaxLength(maxDenyReasonLen)
	return slack.ModalViewRequest{
		Type:       slack.VTModal,
		CallbackID: CallbackDenyReason,
		Title:      plain(w.Title, true),
		Submit:     plain(w.Submit, true),
		Close:      plain(w.Cancel, true),
		Blocks: slack.Blocks{BlockSet: []slack.Block{
			slack.NewSectionBlock(plain(fitPlain(w.Intro, maxSectionText), false), nil, nil),
			slack.NewInputBlock(BlockIDDenyReason, plain(w.Label, true), plain(w.Hint, true), input),
		}},
		PrivateMetadata: encodeModalMetadata(c, ref),
	}
}

// EditArgsModal lets an approver change the arguments and approve: a
// multiline input (BlockIDEditArgs / ActionIDEditArgsInput) prefilled with
// current as pretty JSON, or c.Args when current is empty. Arguments too
// long for a Slack input (3,000 characters even when compacted) cannot be
// edited here: the modal says so and has no submit button.
func EditArgsModal(c Card, ref approval.MessageRef, current json.RawMessage) slack.ModalViewRequest {
	c = normalize(c)
	if len(bytes.TrimSpace(current)) == 0 {
		current = c.Args
	}
	w := approval.Form(approval.ChooseEdit, c)
	if c.Change != nil {
		if view, ok := agentEditModal(c, ref, current, w); ok {
			return view
		}
	}
	view := slack.ModalViewRequest{
		Type:            slack.VTModal,
		CallbackID:      CallbackEditArgs,
		Title:           plain(w.Title, true),
		Close:           plain(w.Cancel, true),
		PrivateMetadata: encodeModalMetadata(c, ref),
	}
	intro := slack.NewSectionBlock(plain(fitPlain(w.Intro, maxSectionText), false), nil, nil)
	initial, length, ok := editableJSON(current)
	if !ok {
		view.Blocks = slack.Blocks{BlockSet: []slack.Block{
			intro,
			slack.NewSectionBlock(plain(fmt.Sprintf(
				"These arguments are %s characters long; Slack cannot edit more than %s. Approve or deny them as they are.",
				thousands(length), thousands(maxInputValue)), true), nil, nil),
		}}
		return view
	}
	input := slack.NewPlainTextInputBlockElement(nil, ActionIDEditArgsInput).
		WithMultiline(true).
		WithMaxLength(maxInputValue).
		WithInitialValue(initial)
	view.Submit = plain(w.Submit, true)
	view.Blocks = slack.Blocks{BlockSet: []slack.Block{
		intro,
		slack.NewInputBlock(BlockIDEditArgs, plain(w.Label, true), plain(w.Hint, true), input),
	}}
	return view
}

// editableJSON returns args as the text of an input: pretty if that fits
// Slack's input limit, compact if only that fits. ok is false when neither
// fits; length is then the compact form's, in characters.
func editableJSON(args json.RawMessage) (text string, length int, ok bool) {
	j := newJSONText(args)
	pretty := j.preview("  ", maxInputValue+1, true)
	if pretty.whole() && textLen(pretty.prefix) <= maxInputValue {
		return pretty.prefix, pretty.total, true
	}
	compact := j.preview("", maxInputValue+1, false)
	if compact.whole() && textLen(compact.prefix) <= maxInputValue {
		return compact.prefix, compact.total, true
	}
	return "", compact.total, false
}

// AnswerModal asks a person to answer a question call. Its input is
// BlockIDAnswer / ActionIDAnswerInput.
func AnswerModal(c Card, ref approval.MessageRef) slack.ModalViewRequest {
	c = normalize(c)
	w := approval.Form(approval.ChooseAnswer, c)
	input := slack.NewPlainTextInputBlockElement(nil, ActionIDAnswerInput).
		WithMultiline(true).
		WithMaxLength(maxInputValue)
	return slack.ModalViewRequest{
		Type:       slack.VTModal,
		CallbackID: CallbackAnswer,
		Title:      plain(w.Title, true),
		Submit:     plain(w.Submit, true),
		Close:      plain(w.Cancel, true),
		Blocks: slack.Blocks{BlockSet: []slack.Block{
			slack.NewSectionBlock(plain(fitPlain(c.Confirmation, maxSectionText), false), nil, nil),
			slack.NewContextBlock("", mrkdwn(requesterLine(c))),
			slack.NewInputBlock(BlockIDAnswer, plain(w.Label, true), plain(w.Hint, true), input),
		}},
		PrivateMetadata: encodeModalMetadata(c, ref),
	}
}

// encodeModalMetadata writes the call and the message into at most 3,000
// characters: a call id that does not fit travels as a hash reference. It
// returns "" for a token EncodeAction would refuse.
func encodeModalMetadata(c Card, ref approval.MessageRef) string {
	if c.Token == "" || len(c.Token) > MaxTokenLen {
		return ""
	}
	m := metadataJSON{V: metadataVersion, Token: c.Token, CallID: callRef(c.ToolCallID, maxMetadata), Channel: ref.Channel, TS: ref.ID}
	b, err := json.Marshal(m)
	if err != nil || textLen(string(b)) > maxMetadata {
		m.CallID = callRef(c.ToolCallID, 0)
		b, err = json.Marshal(m)
	}
	if err != nil || textLen(string(b)) > maxMetadata {
		return "" // only an absurd channel or ts gets here
	}
	return string(b)
}

// DecodeModalMetadata reads the private_metadata of a modal made by this
// package. Anything else is refused with an error wrapping
// ErrInvalidModalMetadata.
func DecodeModalMetadata(s string) (ModalMetadata, error) {
	fail := func(why string) (ModalMetadata, error) {
		return ModalMetadata{}, fmt.Errorf("decode modal metadata: %s: %w", why, ErrInvalidModalMetadata)
	}
	if s == "" {
		return fail("empty")
	}
	if len(s) > 4*maxMetadata {
		return fail("too long")
	}
	dec := json.NewDecoder(strings.NewReader(s))
	dec.DisallowUnknownFields()
	var m metadataJSON
	if err := dec.Decode(&m); err != nil {
		return fail("not JSON")
	}
	if dec.More() {
		return fail("trailing data")
	}
	if m.V != metadataVersion {
		return fail("unknown version")
	}
	if m.Token == "" || len(m.Token) > MaxTokenLen {
		return fail("bad token")
	}
	return ModalMetadata{Token: m.Token, CallID: m.CallID, Message: approval.MessageRef{Channel: m.Channel, ID: m.TS}}, nil
}
