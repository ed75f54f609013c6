package devui

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
)

// block is one Block Kit block as generic JSON, so the page and the
// payloads carry every field the app sent, known to slack-go or not.
type block = map[string]any

// decodeBlocks parses Block Kit JSON and fills in what Slack fills in when
// an app leaves it out: a block_id on every block and an action_id on
// every interactive element. Slack makes up random ids; these are derived
// from positions, so the page and a later click agree on them.
func decodeBlocks(raw json.RawMessage) ([]block, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return []block{}, nil
	}
	var blocks []block
	if err := decodeJSON(raw, &blocks); err != nil {
		return nil, fmt.Errorf("decode blocks: %w", err)
	}
	for i, b := range blocks {
		if b == nil {
			blocks[i] = block{}
			b = blocks[i]
		}
		if id, _ := b["block_id"].(string); id == "" {
			b["block_id"] = "devui-b" + strconv.Itoa(i)
		}
		blockID := b["block_id"].(string)
		if acc, ok := b["accessory"].(map[string]any); ok {
			fillActionID(acc, blockID+"-accessory")
		}
		if el, ok := b["element"].(map[string]any); ok {
			fillActionID(el, blockID+"-element")
		}
		if els, ok := b["elements"].([]any); ok && b["type"] == "actions" {
			for j, e := range els {
				if el, ok := e.(map[string]any); ok {
					fillActionID(el, blockID+"-a"+strconv.Itoa(j))
				}
			}
		}
	}
	return blocks, nil
}

func fillActionID(el map[string]any, id string) {
	if v, _ := el["action_id"].(string); v == "" {
		el["action_id"] = id
	}
}

// decodeJSON decodes keeping numbers as they were written.
func decodeJSON(raw []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	return dec.Decode(v)
}

// findElement returns the interactive element with actionID in the block
// with blockID: an element of an actions block or a section's accessory.
// An empty blockID matches any block.
func findElement(blocks []block, blockID, actionID string) (map[string]any, string, bool) {
	for _, b := range blocks {
		id, _ := b["block_id"].(string)
		if blockID != "" && id != blockID {
			continue
		}
		var candidates []any
		if acc, ok := b["accessory"].(map[string]any); ok {
			candidates = append(candidates, acc)
		}
		if els, ok := b["elements"].([]any); ok && b["type"] == "actions" {
			candidates = append(candidates, els...)
		}
		for _, c := range candidates {
			el, ok := c.(map[string]any)
			if ok && el["action_id"] == actionID {
				return el, id, true
			}
		}
	}
	return nil, "", false
}

// input is a modal's input block: where its value goes in view.state and
// the checks Slack's client makes before it submits.
type input struct {
	blockID   string
	actionID  string
	typ       string
	label     string
	optional  bool
	minLength int
	maxLength int
}

// textInputs are the input elements whose state is a "value" string, the
// only ones the emulator fills in.
var textInputs = map[string]bool{
	"plain_text_input": true,
	"email_text_input": true,
	"url_text_input":   true,
	"number_input":     true,
}

// inputs lists a view's input blocks in order.
func inputs(blocks []block) []input {
	var out []input
	for _, b := range blocks {
		if b["type"] != "input" {
			continue
		}
		el, ok := b["element"].(map[string]any)
		if !ok {
			continue
		}
		in := input{}
		in.blockID, _ = b["block_id"].(string)
		in.actionID, _ = el["action_id"].(string)
		in.typ, _ = el["type"].(string)
		in.optional, _ = b["optional"].(bool)
		if label, ok := b["label"].(map[string]any); ok {
			in.label, _ = label["text"].(string)
		}
		in.minLength = intField(el, "min_length")
		in.maxLength = intField(el, "max_length")
		out = append(out, in)
	}
	return out
}

func intField(m map[string]any, key string) int {
	n, ok := m[key].(json.Number)
	if !ok {
		return 0
	}
	v, err := n.Int64()
	if err != nil {
		return 0
	}
	return int(v)
}
