package bot

import (
	"bytes"
	"encoding/json"
	"strings"
	"unicode/utf8"

	"github.com/slackapprove/slackbot/approval"
)

// preview is the start of a long text for people, and how long the whole
// is: what fits on a card or in a modal is cut from prefix, and the note
// saying how much is shown counts from total.
type preview struct {
	prefix string // at most the limit it was made with, in characters
	total  int    // characters of the whole text
	// suffix, when asked for (prettyJSONEnds) and the text is longer
	// than prefix, is its end, which may overlap prefix.
	suffix string
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

// prettyJSONEnds is prettyJSON that also keeps the last tail characters
// of a text longer than limit, reading raw a second time: a long call is
// shown by its start and its end (see render_ends.go).
func prettyJSONEnds(raw json.RawMessage, limit, tail int) preview {
	return newJSONText(raw).previewEnds("  ", limit, tail)
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

// previewEnds is preview (without stop) that also keeps, in suffix, the
// last tail characters of a text longer than limit: a second pass over
// raw counts, as the first does past limit, up to them.
func (j jsonText) previewEnds(indent string, limit, tail int) preview {
	p := j.preview(indent, limit, false)
	if p.whole() || tail <= 0 {
		return p
	}
	from := max(p.total-tail, 1)
	w := &textSink{from: from}
	if !j.json || !indentJSON(w, j.raw, indent) {
		w = &textSink{from: from}
		w.reveal(j.raw, true)
	}
	p.suffix = w.b.String()
	return p
}

// compactEnds is the compact JSON of raw in about limit characters: all
// of it, or its start and its end around endsGap (the end of a long call
// is where an appended command hides). whole reports that it is all. It
// reads raw from its start and from its end no further than it needs.
func compactEnds(raw json.RawMessage, limit int) (text string, whole bool) {
	text, whole = compactStart(raw, limit)
	if whole {
		return text, true
	}
	tail := limit / 3
	end := compactTail(newJSONText(raw).raw, tail) // arguments given as a string too
	return clip(text, limit-tail-textLen(endsGap)) + endsGap + end, false
}

// compactTail is the end of compactPreview(raw, …), n characters of it,
// read from the end of raw: JSON read backwards is still unambiguous (a
// quote is escaped when an odd number of backslashes precede it, and no
// backslash is outside a string), so only whitespace outside strings is
// left out and strings are revealed. Raw that is not JSON is shown as it
// is; raw too long to read whole is compacted as if it were JSON (as
// compactStart does).
func compactTail(raw []byte, n int) string {
	raw = bytes.TrimSpace(raw)
	var rev []byte // the pieces shown, last first
	var starts []int
	inString := false
	for i, shown := len(raw), 0; i > 0 && shown < n; {
		r, size := utf8.DecodeLastRune(raw[:i])
		i -= size
		switch {
		case r == '"' && !escapedAt(raw, i):
			inString = !inString
		case !inString && (r == ' ' || r == '\t' || r == '\n' || r == '\r'):
			continue
		}
		starts = append(starts, len(rev))
		if invisible(r) {
			rev = append(rev, escapeCode(r)...)
			shown += len(`\u0000`)
		} else {
			rev = utf8.AppendRune(rev, r)
			shown++
		}
	}
	out := make([]byte, 0, len(rev))
	for k := len(starts) - 1; k >= 0; k-- {
		end := len(rev)
		if k+1 < len(starts) {
			end = starts[k+1]
		}
		out = append(out, rev[starts[k]:end]...)
	}
	return string(out)
}

// escapedAt reports whether raw[i] follows an odd number of backslashes.
func escapedAt(raw []byte, i int) bool {
	n := 0
	for i-n-1 >= 0 && raw[i-n-1] == '\\' {
		n++
	}
	return n%2 == 1
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
	// from, when above 0, keeps the characters from that one on as well
	// (previewEnds); a revealed character that starts before it is not.
	from int
}

func (w *textSink) done() bool { return w.stop && w.n >= w.limit }

// keeps reports whether the character written next is kept.
func (w *textSink) keeps() bool { return w.n < w.limit || (w.from > 0 && w.n >= w.from) }

func (w *textSink) preview() preview {
	if w.done() {
		// Stopped: there may be more, so never report the text whole.
		return preview{prefix: w.b.String(), total: w.n + 1}
	}
	return preview{prefix: w.b.String(), total: w.n}
}

func (w *textSink) byte(c byte) {
	if w.keeps() {
		w.b.WriteByte(c)
	}
	w.n++
}

// repeat writes s (ASCII) n times.
func (w *textSink) repeat(s string, n int) {
	if w.n >= w.limit && (w.from == 0 || w.n+n*len(s) <= w.from) {
		w.n += n * len(s) // none of it is kept
		return
	}
	for ; n > 0; n-- {
		for i := 0; i < len(s); i++ {
			w.byte(s[i])
		}
	}
}

// reveal writes s with invisible characters and invalid UTF-8 revealed,
// as reveal does; line breaks and tabs are kept when keepBreaks. What it
// does not keep it only counts, allocating nothing.
func (w *textSink) reveal(s []byte, keepBreaks bool) {
	if w.n >= w.limit {
		if n := revealedLen(s, keepBreaks); w.from == 0 || w.n+n <= w.from {
			w.n += n
			return
		}
	}
	for len(s) > 0 {
		if w.n >= w.limit && w.from == 0 {
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
		case !w.keeps():
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
func writeEscape(b *strings.Builder, r rune) { approval.WriteEscape(b, r) }
