package slackfake

import (
	"encoding/json"
	"fmt"
	"slices"
	"unicode/utf8"
)

// Block Kit limits, from Slack's reference. The fake refuses what Slack
// refuses, so rendering bugs show up in tests rather than in a workspace.
const (
	maxBlockID        = 255
	maxActionID       = 255
	maxSectionText    = 3000
	maxSectionFields  = 10
	maxFieldText      = 2000
	maxHeaderText     = 150
	maxContextItems   = 10
	maxActionsItems   = 25
	maxButtonText     = 75
	maxButtonValue    = 2000
	maxURL            = 3000
	maxPlaceholder    = 150
	maxLabel          = 2000
	maxMarkdownText   = 12000
	maxInputLength    = 3000
	maxOptionText     = 75
	maxOptionValue    = 150
	maxOptions        = 100
	maxViewTitle      = 24
	maxPrivateMeta    = 3000
	maxCallbackID     = 255
	maxConfirmTitle   = 100
	maxConfirmText    = 300
	maxConfirmButtons = 30
)

// maxBlocksText is how many characters of text all of a message's blocks
// may carry together. Slack refuses more with msg_blocks_too_long; it
// documents 12,000 (for markdown blocks, "with a buffer for block
// containers") and refuses about 13,200 in practice. The fake refuses
// past 12,000, what slackbot budgets for, so a card that would be refused
// fails tests.
const maxBlocksText = 12_000

// blocksText counts the characters of every text object's text in a JSON
// array of blocks (header, section text and fields, context elements,
// buttons and their confirm dialogs, at any depth) and of markdown blocks.
func blocksText(raw json.RawMessage) int {
	var blocks any
	if err := json.Unmarshal(raw, &blocks); err != nil {
		return 0
	}
	n := 0
	var walk func(v any)
	walk = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			if t, ok := v["text"].(string); ok {
				if typ := v["type"]; typ == "plain_text" || typ == "mrkdwn" || typ == "markdown" {
					n += utf8.RuneCountInString(t)
				}
			}
			for _, e := range v {
				walk(e)
			}
		case []any:
			for _, e := range v {
				walk(e)
			}
		}
	}
	walk(blocks)
	return n
}

// blockTypes are the layout blocks Slack knows (those slack-go parses);
// only the common ones are checked in depth.
var blockTypes = []string{
	"actions", "context", "context_actions", "divider", "file", "header", "image", "input",
	"markdown", "rich_text", "section", "call", "video", "table", "data_table",
	"data_visualization", "task_card", "alert", "auth_provider", "plan", "card", "carousel",
	"container", "layout",
}

// selectLike are elements with options or a placeholder.
var selectLike = []string{
	"static_select", "multi_static_select", "external_select", "multi_external_select",
	"users_select", "multi_users_select", "conversations_select", "multi_conversations_select",
	"channels_select", "multi_channels_select",
}

var inputElements = []string{
	"plain_text_input", "number_input", "email_text_input", "url_text_input", "datepicker",
	"timepicker", "datetimepicker", "checkboxes", "radio_buttons", "rich_text_input", "file_input",
	"overflow", "workflow_button", "image", "button",
}

// bk collects Block Kit problems in Slack's format:
// "<reason> [json-pointer:/blocks/0/text/text]".
type bk struct {
	problems []string
	blockIDs map[string]bool
}

func (v *bk) fail(ptr, format string, args ...any) {
	v.problems = append(v.problems, fmt.Sprintf(format, args...)+" [json-pointer:"+ptr+"]")
}

// validateBlocks checks a JSON array of blocks.
func validateBlocks(raw json.RawMessage, maxBlocks int) []string {
	var blocks []any
	if err := json.Unmarshal(raw, &blocks); err != nil {
		return []string{"blocks must be a JSON array of blocks: " + err.Error() + " [json-pointer:/blocks]"}
	}
	v := &bk{blockIDs: map[string]bool{}}
	v.blocks("/blocks", blocks, maxBlocks)
	return v.problems
}

// validateSurface checks a view of type kind: "modal", or "home" (an
// app's Home tab, which has no title, submit or close).
func validateSurface(view map[string]any, kind string) []string {
	v := &bk{blockIDs: map[string]bool{}}
	if t, _ := view["type"].(string); t != kind {
		v.fail("/view/type", "must be %q", kind)
	}
	if kind == "modal" {
		v.plainText("/view/title", view["title"], maxViewTitle, true)
	}
	v.plainText("/view/submit", view["submit"], maxViewTitle, false)
	v.plainText("/view/close", view["close"], maxViewTitle, false)
	v.length("/view/private_metadata", view["private_metadata"], maxPrivateMeta)
	v.length("/view/callback_id", view["callback_id"], maxCallbackID)
	v.length("/view/external_id", view["external_id"], maxCallbackID)
	blocks, ok := view["blocks"].([]any)
	if !ok {
		v.fail("/view/blocks", "must be an array of blocks")
		return v.problems
	}
	v.blocks("/view/blocks", blocks, maxViewBlocks)
	if _, hasSubmit := view["submit"]; kind == "modal" && !hasSubmit && slices.ContainsFunc(blocks, func(b any) bool {
		m, _ := b.(map[string]any)
		return m["type"] == "input"
	}) {
		v.fail("/view/submit", "is required when blocks contain input blocks")
	}
	return v.problems
}

func (v *bk) blocks(ptr string, blocks []any, maxBlocks int) {
	if len(blocks) > maxBlocks {
		v.fail(ptr, "no more than %d items allowed", maxBlocks)
	}
	for i, b := range blocks {
		v.block(fmt.Sprintf("%s/%d", ptr, i), b)
	}
}

func (v *bk) block(ptr string, b any) {
	m, ok := b.(map[string]any)
	if !ok {
		v.fail(ptr, "must be an object")
		return
	}
	typ, _ := m["type"].(string)
	if !slices.Contains(blockTypes, typ) {
		v.fail(ptr+"/type", "unsupported type %q", typ)
		return
	}
	if id, ok := m["block_id"]; ok {
		v.blockID(ptr+"/block_id", id)
	}
	switch typ {
	case "section":
		v.section(ptr, m)
	case "header":
		v.plainText(ptr+"/text", m["text"], maxHeaderText, true)
	case "context":
		v.context(ptr, m)
	case "actions":
		list := v.list(ptr+"/elements", m["elements"], maxActionsItems)
		actionIDs := map[string]bool{}
		for i, e := range list {
			v.element(fmt.Sprintf("%s/elements/%d", ptr, i), e, actionIDs)
		}
	case "input":
		v.plainText(ptr+"/label", m["label"], maxLabel, true)
		v.plainText(ptr+"/hint", m["hint"], maxLabel, false)
		if e, ok := m["element"]; ok {
			v.element(ptr+"/element", e, nil)
		} else {
			v.fail(ptr+"/element", "is required")
		}
	case "image":
		v.image(ptr, m)
	case "markdown":
		v.required(ptr+"/text", m["text"], maxMarkdownText)
	case "rich_text":
		if _, ok := m["elements"].([]any); !ok {
			v.fail(ptr+"/elements", "must be an array")
		}
	}
}

// blockID checks a block_id: a non-empty string, short, unique in the
// message or view.
func (v *bk) blockID(ptr string, id any) {
	s, isStr := id.(string)
	switch {
	case !isStr || s == "":
		v.fail(ptr, "must be a non-empty string")
	case utf8.RuneCountInString(s) > maxBlockID:
		v.fail(ptr, "must be less than %d characters", maxBlockID+1)
	case v.blockIDs[s]:
		v.fail(ptr, "duplicate block_id %q", s)
	default:
		v.blockIDs[s] = true
	}
}

// list checks a non-empty array of at most limit items and returns it.
func (v *bk) list(ptr string, raw any, limit int) []any {
	list, ok := raw.([]any)
	if !ok || len(list) == 0 {
		v.fail(ptr, "must be a non-empty array")
	}
	if len(list) > limit {
		v.fail(ptr, "no more than %d items allowed", limit)
	}
	return list
}

func (v *bk) section(ptr string, m map[string]any) {
	text, hasText := m["text"]
	fields, hasFields := m["fields"]
	if !hasText && !hasFields {
		v.fail(ptr, "must have text or fields")
	}
	if hasText {
		v.textObject(ptr+"/text", text, maxSectionText)
	}
	if hasFields {
		for i, f := range v.list(ptr+"/fields", fields, maxSectionFields) {
			v.textObject(fmt.Sprintf("%s/fields/%d", ptr, i), f, maxFieldText)
		}
	}
	if acc, ok := m["accessory"]; ok {
		v.element(ptr+"/accessory", acc, nil)
	}
}

func (v *bk) context(ptr string, m map[string]any) {
	for i, e := range v.list(ptr+"/elements", m["elements"], maxContextItems) {
		ep := fmt.Sprintf("%s/elements/%d", ptr, i)
		if em, _ := e.(map[string]any); em["type"] == "image" {
			v.element(ep, e, nil)
			continue
		}
		v.textObject(ep, e, maxSectionText)
	}
}

func (v *bk) image(ptr string, m map[string]any) {
	_, hasURL := m["image_url"]
	_, hasFile := m["slack_file"]
	if !hasURL && !hasFile {
		v.fail(ptr, "must have image_url or slack_file")
	}
	v.length(ptr+"/image_url", m["image_url"], maxURL)
	v.required(ptr+"/alt_text", m["alt_text"], maxLabel)
	v.plainText(ptr+"/title", m["title"], maxLabel, false)
}

// element checks an interactive element; actionIDs, when set, must stay
// unique within the block.
func (v *bk) element(ptr string, e any, actionIDs map[string]bool) {
	m, ok := e.(map[string]any)
	if !ok {
		v.fail(ptr, "must be an object")
		return
	}
	typ, _ := m["type"].(string)
	if !slices.Contains(selectLike, typ) && !slices.Contains(inputElements, typ) {
		v.fail(ptr+"/type", "unsupported element type %q", typ)
		return
	}
	if id, ok := m["action_id"]; ok {
		s, _ := id.(string)
		switch {
		case s == "":
			v.fail(ptr+"/action_id", "must be a non-empty string")
		case utf8.RuneCountInString(s) > maxActionID:
			v.fail(ptr+"/action_id", "must be less than %d characters", maxActionID+1)
		case actionIDs != nil && actionIDs[s]:
			v.fail(ptr+"/action_id", "duplicate action_id %q", s)
		case actionIDs != nil:
			actionIDs[s] = true
		}
	}
	if c, ok := m["confirm"]; ok {
		v.confirm(ptr+"/confirm", c)
	}
	v.plainText(ptr+"/placeholder", m["placeholder"], maxPlaceholder, false)
	switch {
	case typ == "button":
		v.plainText(ptr+"/text", m["text"], maxButtonText, true)
		v.length(ptr+"/value", m["value"], maxButtonValue)
		v.length(ptr+"/url", m["url"], maxURL)
		if style, ok := m["style"]; ok && style != "primary" && style != "danger" {
			v.fail(ptr+"/style", "must be one of \"primary\" or \"danger\"")
		}
	case typ == "image":
		v.required(ptr+"/alt_text", m["alt_text"], maxLabel)
	case typ == "plain_text_input":
		for _, k := range []string{"min_length", "max_length"} {
			if n, ok := m[k].(float64); ok && (n < 0 || n > maxInputLength) {
				v.fail(ptr+"/"+k, "must be between 0 and %d", maxInputLength)
			}
		}
	case typ == "overflow" || slices.Contains(selectLike, typ) || typ == "checkboxes" || typ == "radio_buttons":
		if opts, ok := m["options"].([]any); ok {
			if len(opts) > maxOptions {
				v.fail(ptr+"/options", "no more than %d items allowed", maxOptions)
			}
			for i, o := range opts {
				op := fmt.Sprintf("%s/options/%d", ptr, i)
				om, _ := o.(map[string]any)
				v.textObject(op+"/text", om["text"], maxOptionText)
				v.length(op+"/value", om["value"], maxOptionValue)
			}
		}
	}
}

func (v *bk) confirm(ptr string, c any) {
	m, ok := c.(map[string]any)
	if !ok {
		v.fail(ptr, "must be an object")
		return
	}
	v.plainText(ptr+"/title", m["title"], maxConfirmTitle, true)
	v.textObject(ptr+"/text", m["text"], maxConfirmText)
	v.plainText(ptr+"/confirm", m["confirm"], maxConfirmButtons, true)
	v.plainText(ptr+"/deny", m["deny"], maxConfirmButtons, true)
}

// textObject checks {"type": "plain_text"|"mrkdwn", "text": "…"}.
func (v *bk) textObject(ptr string, t any, maxLen int) {
	m, ok := t.(map[string]any)
	if !ok {
		v.fail(ptr, "must be a text object")
		return
	}
	if typ := m["type"]; typ != "plain_text" && typ != "mrkdwn" {
		v.fail(ptr+"/type", "must be one of \"plain_text\" or \"mrkdwn\"")
	}
	v.required(ptr+"/text", m["text"], maxLen)
}

// plainText checks a plain_text object, which may be absent unless required.
func (v *bk) plainText(ptr string, t any, maxLen int, required bool) {
	if t == nil {
		if required {
			v.fail(ptr, "is required")
		}
		return
	}
	m, ok := t.(map[string]any)
	if !ok || m["type"] != "plain_text" {
		v.fail(ptr+"/type", "must be \"plain_text\"")
		return
	}
	v.required(ptr+"/text", m["text"], maxLen)
}

// required checks a non-empty string of at most maxLen characters.
func (v *bk) required(ptr string, s any, maxLen int) {
	str, ok := s.(string)
	if !ok || str == "" {
		v.fail(ptr, "must be a non-empty string")
		return
	}
	v.length(ptr, s, maxLen)
}

// length checks an optional string's length in characters.
func (v *bk) length(ptr string, s any, maxLen int) {
	if s == nil {
		return
	}
	str, ok := s.(string)
	if !ok {
		v.fail(ptr, "must be a string")
		return
	}
	if utf8.RuneCountInString(str) > maxLen {
		v.fail(ptr, "must be less than %d characters", maxLen+1)
	}
}
