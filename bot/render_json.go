package bot

import (
	"bytes"
	"encoding/json"
	"strings"
	"unicode/utf8"
)

// preview is the start of a long text for people, and how long the whole
// is: what fits on a card or in a modal is cut from prefix, and the note
// saying how much is shown counts from total.
type preview struct {
	prefix string // at most the limit it was made with, in characters
	total  int    // characters of the whole text
}

func (p preview) whole() bool { return utf8.RuneCountInString(p.prefix) == p.total }

// prettyJSON indents a JSON value for people, keeping the first limit
// characters and counting the rest: arguments given as a JSON string
// holding an object are decoded first, null or nothing is {}, and anything
// that is not JSON is shown as it is. Invisible characters are revealed
// (see reveal): inside JSON strings \uXXXX means the same character, so
// the JSON stays equivalent. The text is what json.Indent(dst, raw, "",
// "  ") would write, but it costs time linear in len(raw) and memory of
// limit, however deep or long raw is: nothing past the limit is written,
// only counted.
func prettyJSON(raw json.RawMessage, limit int) preview {
	return newJSONText(raw).preview("  ", limit, false)
}

// compactPreview is prettyJSON without insignificant whitespace.
func compactPreview(raw json.RawMessage, limit int) preview {
	return newJSONText(raw).preview("", limit, false)
}

// jsonText is a value to show as JSON, checked while it is written: one
// pass over raw both validates it (as json.Valid does) and indents it.
type jsonText struct {
	raw []byte
	// json is false when raw is known not to be JSON, and it is then shown
	// as it is; otherwise it is indented, and shown as it is after all if
	// the indenting pass finds it is not JSON.
	json bool
}

// newJSONText decodes the string form of arguments; null, nothing or a
// blank string is {}, as agentrunner reads them (ToolCallPart.ArgsObject).
func newJSONText(raw json.RawMessage) jsonText {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return jsonText{raw: []byte("{}"), json: true}
	}
	if raw[0] == '"' {
		var s string
		if err := json.Unmarshal(raw, &s); err == nil {
			switch t := strings.TrimSpace(s); {
			case t == "":
				return jsonText{raw: []byte("{}"), json: true}
			case strings.HasPrefix(t, "{") && json.Valid([]byte(t)):
				return jsonText{raw: []byte(t), json: true}
			}
		}
	}
	return jsonText{raw: raw, json: true}
}

// preview writes j indented by indent (compact if empty), or as it is if
// it is not JSON, keeping limit characters; with stop it reads no further
// than it needs to keep them, and the total is then a lower bound (and raw
// read only in part is not known to be JSON: its start is indented).
func (j jsonText) preview(indent string, limit int, stop bool) preview {
	if j.json {
		w := &textSink{limit: limit, stop: stop}
		if indentJSON(w, j.raw, indent) {
			return w.preview()
		}
	}
	w := &textSink{limit: limit, stop: stop}
	w.reveal(j.raw, true)
	return w.preview()
}

// compactStart is the start of compactPreview(raw, limit).prefix, made
// without reading raw further than it needs: whole reports that raw was
// shown entirely. Raw too long to show whole is not checked to be JSON
// (that would read all of it), so its start is compacted as if it were.
func compactStart(raw json.RawMessage, limit int) (text string, whole bool) {
	raw = bytes.TrimSpace(raw)
	if len(raw) <= 4*limit || raw[0] == '"' {
		p := compactPreview(raw, limit)
		return p.prefix, p.whole()
	}
	p := jsonText{raw: raw, json: true}.preview("", limit, true)
	return p.prefix, false
}

// textSink keeps the first limit characters written to it and counts all,
// or with stop, asks its writer to stop once it has them.
type textSink struct {
	b     strings.Builder
	limit int
	stop  bool
	n     int // characters written, kept or not
}

func (w *textSink) done() bool { return w.stop && w.n >= w.limit }

func (w *textSink) preview() preview {
	if w.done() {
		// Stopped: there may be more, so never report the text whole.
		return preview{prefix: w.b.String(), total: w.n + 1}
	}
	return preview{prefix: w.b.String(), total: w.n}
}

func (w *textSink) byte(c byte) {
	if w.n < w.limit {
		w.b.WriteByte(c)
	}
	w.n++
}

// repeat writes s (ASCII) n times.
func (w *textSink) repeat(s string, n int) {
	for ; n > 0 && w.n < w.limit; n-- {
		w.b.WriteString(s)
		w.n += len(s)
	}
	w.n += n * len(s)
}

// reveal writes s with invisible characters and invalid UTF-8 revealed,
// as reveal does; line breaks and tabs are kept when keepBreaks. Past the
// limit it only counts, allocating nothing.
func (w *textSink) reveal(s []byte, keepBreaks bool) {
	for len(s) > 0 {
		if w.n >= w.limit {
			w.n += revealedLen(s, keepBreaks)
			return
		}
		c := s[0]
		if c >= 0x20 && c < 0x7f {
			w.byte(c)
			s = s[1:]
			continue
		}
		r, size := utf8.DecodeRune(s)
		s = s[size:]
		hidden := invisible(r) && !((r == '\n' || r == '\t') && keepBreaks)
		switch {
		case w.n >= w.limit:
		case hidden:
			writeEscape(&w.b, r)
		default:
			w.b.WriteRune(r)
		}
		if hidden {
			w.n += len(`\u0000`)
		} else {
			w.n++
		}
	}
}

// revealedLen is the length in characters of s revealed.
func revealedLen(s []byte, keepBreaks bool) int {
	n := 0
	for i := 0; i < len(s); {
		if c := s[i]; c >= 0x20 && c < 0x7f {
			n++
			i++
			continue
		}
		r, size := utf8.DecodeRune(s[i:])
		i += size
		if invisible(r) && !((r == '\n' || r == '\t') && keepBreaks) {
			n += len(`\u0000`)
		} else {
			n++
		}
	}
	return n
}

// writeEscape writes r, an invisible character (below U+10000), as \uXXXX.
func writeEscape(b *strings.Builder, r rune) {
	const hex = "0123456789abcdef"
	b.WriteString(`\u`)
	for shift := 12; shift >= 0; shift -= 4 {
		b.WriteByte(hex[(r>>shift)&0xf])
	}
}
