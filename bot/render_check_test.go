package bot

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
	"github.com/slack-go/slack"
)

// checkMessage checks an approval message against Slack's limits, slack-go's
// round trip, and the escaping rules.
func checkMessage(t *testing.T, c Card, blocks []slack.Block) {
	t.Helper()
	if len(blocks) > maxMessageBlocks {
		t.Errorf("%d blocks, Slack allows %d in a message", len(blocks), maxMessageBlocks)
	}
	roundTrip(t, slack.Blocks{BlockSet: blocks}, &slack.Blocks{})
	v := toJSON(t, slack.Blocks{BlockSet: blocks})
	checkLimits(t, v)
	checkMessageText(t, v)
	checkMentions(t, v, allowedMentions(c))
	checkHostileInCode(t, v)
}

// allowedMentions are the <…> sequences a card may render on purpose.
func allowedMentions(c Card) map[string]bool {
	ok := map[string]bool{}
	if c.RequesterIsUser && isUserID(c.Requester) {
		ok["<@"+c.Requester+">"] = true
	}
	if isUserID(c.DecidedBy) {
		ok["<@"+c.DecidedBy+">"] = true
	}
	for _, v := range c.Votes {
		if isUserID(v.By) {
			ok["<@"+v.By+">"] = true
		}
	}
	if isChannelID(c.SourceChannel) {
		ok["<#"+c.SourceChannel+">"] = true
	}
	for _, m := range c.Mentions {
		if isUsergroupID(m) {
			ok["<!subteam^"+m+">"] = true
		}
	}
	return ok
}

// checkMentions fails if any text holds a <…> sequence other than the
// allowed ones and dates, or a stray < or >.
func checkMentions(t *testing.T, v any, allowed map[string]bool) {
	t.Helper()
	for _, s := range texts(v) {
		rest := angleRE.ReplaceAllStringFunc(s, func(m string) string {
			if allowed[m] || dateRE.MatchString(m) {
				return ""
			}
			t.Errorf("unexpected %q in %.200q", m, s)
			return ""
		})
		if strings.ContainsAny(rest, "<>") {
			t.Errorf("stray < or > in %.200q", s)
		}
		checkEntities(t, s)
	}
}

// checkEntities fails if s has an & that does not start &amp; &lt; or &gt;:
// Slack would decode user text that looks like an entity.
func checkEntities(t *testing.T, s string) {
	t.Helper()
	for i := strings.IndexByte(s, '&'); i >= 0; i = nextIndex(s, '&', i) {
		rest := s[i:]
		if !strings.HasPrefix(rest, "&amp;") && !strings.HasPrefix(rest, "&lt;") && !strings.HasPrefix(rest, "&gt;") {
			t.Errorf("unescaped & at %d in %.200q", i, s)
			return
		}
	}
}

func nextIndex(s string, c byte, i int) int {
	j := strings.IndexByte(s[i+1:], c)
	if j < 0 {
		return -1
	}
	return i + 1 + j
}

// checkHostileInCode fails if hostile text (marked EVIL) appears in a mrkdwn
// text outside a code block or code span, where it could format. Code
// blocks must be closed only by the renderer's fence.
func checkHostileInCode(t *testing.T, v any) {
	t.Helper()
	walk(v, func(m map[string]any) {
		if m["type"] != "mrkdwn" {
			return
		}
		s := m["text"].(string)
		if n := strings.Count(s, "```"); n != 0 && (n != 2 || !strings.HasSuffix(s, "\n```")) {
			t.Errorf("mrkdwn has %d code fences (content closed the block?): %.300q", n, s)
		}
		if outside := codeRE.ReplaceAllString(s, ""); strings.Contains(outside, "EVIL") {
			t.Errorf("hostile text outside code in mrkdwn: %.300q", outside)
		}
	})
}

// checkLimits walks Block Kit JSON and checks Slack's limits on every
// object it knows.
func checkLimits(t *testing.T, v any) {
	t.Helper()
	atMost := func(what string, s any, max int) {
		t.Helper()
		str, _ := s.(string)
		if n := textLen(str); n > max {
			t.Errorf("%s is %d characters, Slack allows %d: %.80q…", what, n, max, str)
		}
	}
	walk(v, func(m map[string]any) {
		if id, ok := m["block_id"]; ok {
			atMost("block_id", id, 255)
		}
		if id, ok := m["action_id"]; ok {
			atMost("action_id", id, 255)
		}
		if c, ok := m["confirm"].(map[string]any); ok {
			for field, max := range map[string]int{"title": maxConfirmTitle, "text": maxConfirmText, "confirm": maxConfirmButton, "deny": maxConfirmButton} {
				obj, _ := c[field].(map[string]any)
				atMost("confirm dialog's "+field, obj["text"], max)
			}
		}
		text, _ := m["text"].(map[string]any)
		switch m["type"] {
		case "plain_text", "mrkdwn":
			s, _ := m["text"].(string)
			if s == "" {
				t.Errorf("empty %s text object", m["type"])
			}
			atMost("text object", s, 3000)
			if !utf8.ValidString(s) {
				t.Errorf("text is not valid UTF-8: %q", s)
			}
			if m["type"] == "mrkdwn" && m["verbatim"] != true {
				t.Errorf("mrkdwn without verbatim (Slack would auto-link and parse @here): %.80q", s)
			}
		case "header":
			atMost("header text", text["text"], maxHeaderText)
			if text["type"] != "plain_text" {
				t.Errorf("header text is %v, want plain_text", text["type"])
			}
		case "section":
			atMost("section text", text["text"], maxSectionText)
		case "context":
			if n := len(m["elements"].([]any)); n > maxContextItems {
				t.Errorf("context has %d elements, Slack allows %d", n, maxContextItems)
			}
		case "actions":
			if n := len(m["elements"].([]any)); n > 25 {
				t.Errorf("actions has %d elements, Slack allows 25", n)
			}
		case "button":
			atMost("button text", text["text"], maxButtonText)
			atMost("button value", m["value"], MaxActionValueLen)
		case "input":
			atMost("input label", m["label"].(map[string]any)["text"], 2000)
			if h, ok := m["hint"].(map[string]any); ok {
				atMost("input hint", h["text"], 2000)
			}
		case "plain_text_input":
			max, _ := m["max_length"].(float64)
			if max == 0 || max > maxInputValue {
				t.Errorf("plain_text_input max_length = %v, want 1..%d", max, maxInputValue)
			}
			atMost("initial_value", m["initial_value"], int(max))
			if p, ok := m["placeholder"].(map[string]any); ok {
				atMost("placeholder", p["text"], 150)
			}
		}
	})
}

// roundTrip checks that v marshals, unmarshals into into with slack-go,
// and marshals back to the same JSON.
func roundTrip(t *testing.T, v any, into any) {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatalf("marshal: %v", err)
	}
	if err := json.Unmarshal(b, into); err != nil {
		t.Fatalf("slack-go cannot unmarshal the JSON: %v", err)
	}
	back, err := json.Marshal(into)
	if err != nil {
		t.Fatalf("marshal after round trip: %v", err)
	}
	var want, got any
	if err := json.Unmarshal(b, &want); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(back, &got); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("slack-go round trip changed the JSON (-before +after):\n%s", diff)
	}
}

func toJSON(t *testing.T, v any) any {
	t.Helper()
	var out any
	if err := json.Unmarshal(mustMarshal(t, v), &out); err != nil {
		t.Fatal(err)
	}
	return out
}

func mustMarshal(t testing.TB, v any) json.RawMessage {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// walk calls f for every object in v, depth first.
func walk(v any, f func(map[string]any)) {
	switch v := v.(type) {
	case map[string]any:
		f(v)
		for _, e := range v {
			walk(e, f)
		}
	case []any:
		for _, e := range v {
			walk(e, f)
		}
	}
}

// texts returns the text of every text object in v, in order.
func texts(v any) []string {
	var out []string
	var rec func(v any)
	rec = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			if (v["type"] == "plain_text" || v["type"] == "mrkdwn") && v["text"] != nil {
				out = append(out, v["text"].(string))
			}
			for _, k := range []string{"text", "fields", "elements", "accessory", "label", "hint", "placeholder", "blocks", "title"} {
				if e, ok := v[k]; ok {
					rec(e)
				}
			}
		case []any:
			for _, e := range v {
				rec(e)
			}
		}
	}
	rec(v)
	return out
}

// find returns every object of the given type in v, in order.
func find(v any, typ string) []map[string]any {
	var out []map[string]any
	var rec func(v any)
	rec = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			if v["type"] == typ {
				out = append(out, v)
			}
			for _, k := range []string{"elements", "accessory", "element", "blocks"} {
				if e, ok := v[k]; ok {
					rec(e)
				}
			}
		case []any:
			for _, e := range v {
				rec(e)
			}
		}
	}
	rec(v)
	return out
}

// actionIDs lists the action_id of every button, in order.
func actionIDs(v any) []string {
	var ids []string
	for _, b := range find(v, "button") {
		ids = append(ids, b["action_id"].(string))
	}
	return ids
}

func marshalGolden(t *testing.T, v any) []byte {
	t.Helper()
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false) // keep <@U…> readable in the golden files
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		t.Fatalf("marshal: %v", err)
	}
	readable := readableJSON(buf.Bytes())
	var want, got any
	if err := json.Unmarshal(buf.Bytes(), &want); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(readable, &got); err != nil || !cmp.Equal(want, got) {
		t.Fatalf("readableJSON changed the JSON's meaning (err %v)", err)
	}
	return readable
}

// readableJSON undoes the \u003c, \u003e and \u0026 escapes slack-go's
// own MarshalJSON writes, so people can read the golden files, and writes
// zero-width spaces as \u200b so they can see them. The JSON means the
// same.
func readableJSON(b []byte) []byte {
	unescape := map[string]string{`u003c`: "<", `u003e`: ">", `u0026`: "&"}
	var out bytes.Buffer
	for i := 0; i < len(b); i++ {
		if b[i] != '\\' || i+1 >= len(b) {
			out.WriteByte(b[i])
			continue
		}
		if i+6 <= len(b) {
			if plain, ok := unescape[string(b[i+1:i+6])]; ok {
				out.WriteString(plain)
				i += 5
				continue
			}
		}
		out.Write(b[i : i+2]) // any other escape, including \\, stays
		i++
	}
	return bytes.ReplaceAll(out.Bytes(), []byte("\u200b"), []byte(`\u200b`))
}

// checkGolden compares got with testdata/golden/name.json, or rewrites the
// file with -update.
func checkGolden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", "golden", name+".json")
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read golden file (run go test ./bot -run Golden -update to create it): %v", err)
	}
	if diff := cmp.Diff(string(want), string(got)); diff != "" {
		t.Errorf("%s differs (-want +got); run go test ./bot -run Golden -update if the change is intended:\n%s", path, diff)
	}
}
