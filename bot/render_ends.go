package bot

import (
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"
)

// Text shortened for display keeps both of its ends, and long runs of
// blank characters in it show as their count, so that neither length nor
// padding can push the end of a command out of view: `ls` + 4,000 spaces
// + `; curl … | sh` shows as "ls⟨4,000 spaces⟩; curl … | sh", and a
// command padded with anything else as its start, " … " and its end, half
// the room each. A
// command's end is where an appended command goes (`; curl … | sh`,
// `&& rm -rf …`); its middle, when cut, is what the arguments' code block
// and View all arguments show.

// maxBlankRun is the longest run of blanks shown as it is; longer runs
// show as their count. An ordinary script's indentation stays as written.
const maxBlankRun = 16

// endsGap stands for what is cut out between a text's start and its end.
const endsGap = " … "

// isBlank reports whether r shows as empty space or as nothing at all:
// Unicode's white space (spaces, tabs, line breaks, U+00A0, U+2000 to
// U+200A, U+3000…) and the zero-width characters.
func isBlank(r rune) bool {
	switch r {
	case 0x180e, 0x200b, 0x200c, 0x200d, 0x2060, 0xfeff:
		return true
	}
	return unicode.IsSpace(r)
}

// blankCount is what a run of n blanks (all U+0020 when spaces) shows as.
func blankCount(n int, spaces bool) string {
	if spaces {
		return "⟨" + thousands(n) + " spaces⟩"
	}
	return "⟨" + thousands(n) + " blank characters⟩"
}

// blankRun measures the run of blanks that starts at s[i] (forward) or
// ends at s[i] (backward, i an end offset), reading no further than stop:
// it returns where the run ends (or starts), its length in blanks and
// whether it is only spaces. A blank is a blank rune, or, in text that
// holds JSON (a call's compact arguments), the escape of one: \t, \n, \r,
// \f or \uXXXX.
func blankRun(s string, i, stop int, backward bool) (j, n int, spaces bool) {
	j, spaces = i, true
	for j != stop {
		var size int
		var space bool
		if backward {
			size, space = blankBefore(s, j, stop)
		} else {
			size, space = blankAt(s[j:stop])
		}
		if size == 0 {
			break
		}
		spaces = spaces && space
		n++
		if backward {
			j -= size
		} else {
			j += size
		}
	}
	return j, n, spaces
}

// blankAt is the size of the blank s starts with (0: none), and whether
// it is a space.
func blankAt(s string) (size int, space bool) {
	if len(s) >= 2 && s[0] == '\\' {
		if strings.IndexByte("tnrf", s[1]) >= 0 {
			return 2, false
		}
		if r, ok := unicodeEscape(s); ok && isBlank(r) {
			return 6, r == ' '
		}
		return 0, false
	}
	r, size := utf8.DecodeRuneInString(s)
	if !isBlank(r) {
		return 0, false
	}
	return size, r == ' '
}

// blankBefore is blankAt for the blank that ends at s[j], not starting
// before stop: an escape counts only if its backslash is not itself
// escaped.
func blankBefore(s string, j, stop int) (size int, space bool) {
	escaped := func(k int) bool { // s[k] is a backslash that starts an escape
		n := 0
		for k-n >= stop && s[k-n] == '\\' {
			n++
		}
		return n%2 == 1
	}
	if j-2 >= stop && s[j-2] == '\\' && strings.IndexByte("tnrf", s[j-1]) >= 0 && escaped(j-2) {
		return 2, false
	}
	if j-6 >= stop && s[j-6] == '\\' && escaped(j-6) {
		if r, ok := unicodeEscape(s[j-6 : j]); ok && isBlank(r) {
			return 6, r == ' '
		}
	}
	r, size := utf8.DecodeLastRuneInString(s[stop:j])
	if !isBlank(r) {
		return 0, false
	}
	return size, r == ' '
}

// unicodeEscape decodes the \uXXXX that s starts with.
func unicodeEscape(s string) (rune, bool) {
	if len(s) < 6 || s[0] != '\\' || s[1] != 'u' {
		return 0, false
	}
	v, err := strconv.ParseUint(s[2:6], 16, 16)
	return rune(v), err == nil
}

// squeezeHead is the start of s with runs of more than maxBlankRun blanks
// shown as their count, once it holds max runes or s ends (a run is
// counted whole), and the offset of s it read to.
func squeezeHead(s string, max int) (head string, end int) {
	var b strings.Builder
	n, i := 0, 0
	for i < len(s) && n < max {
		j, run, spaces := blankRun(s, i, len(s), false)
		if run > maxBlankRun {
			count := blankCount(run, spaces)
			b.WriteString(count)
			n, i = n+utf8.RuneCountInString(count), j
			continue
		}
		if run == 0 {
			// One rune, or an escape whole (\\n is a backslash and n).
			_, j = utf8.DecodeRuneInString(s[i:])
			if s[i] == '\\' && i+1 < len(s) && s[i+1] < utf8.RuneSelf {
				j = 2
			}
			j += i
		}
		for i < j && n < max {
			_, size := utf8.DecodeRuneInString(s[i:])
			b.WriteString(s[i : i+size])
			n, i = n+1, i+size
		}
	}
	return b.String(), i
}

// squeezeTail is squeezeHead from the end of s, reading back no further
// than stop, and the offset it read back to.
func squeezeTail(s string, max, stop int) (tail string, start int) {
	var pieces []string
	n, i := 0, len(s)
	for i > stop && n < max {
		j, run, spaces := blankRun(s, i, stop, true)
		if run > maxBlankRun {
			count := blankCount(run, spaces)
			pieces = append(pieces, count)
			n, i = n+utf8.RuneCountInString(count), j
			continue
		}
		if run == 0 {
			_, size := utf8.DecodeLastRuneInString(s[stop:i])
			j = i - size
		}
		for i > j && n < max {
			_, size := utf8.DecodeLastRuneInString(s[stop:i])
			pieces = append(pieces, s[i-size:i])
			n, i = n+1, i-size
		}
	}
	slices.Reverse(pieces)
	return strings.Join(pieces, ""), i
}

// fitEnds is fit for text that may hide a command's end: each rune shows
// as piece makes it, runs of blanks longer than maxBlankRun show as their
// count, and text still longer than max characters keeps its start and
// its end, half each, around endsGap. It reads s from each end no further
// than it shows (and the runs of blanks it counts).
func fitEnds(s string, max int, piece func(rune) string) string {
	head, end := squeezeHead(s, max+1)
	tail := ""
	if end < len(s) {
		var start int
		if tail, start = squeezeTail(s, max, end); start == end {
			head, tail = head+tail, ""
		}
	}
	if tail == "" {
		if whole := pieces(head, piece); textLen(whole) <= max {
			return whole
		}
		tail = head
	}
	t := lastPieces(tail, max/2, piece)
	return fit(head, max-textLen(endsGap)-textLen(t), "", piece) + endsGap + t
}

// pieces is s with each rune shown as piece makes it.
func pieces(s string, piece func(rune) string) string {
	var b strings.Builder
	for _, r := range s {
		b.WriteString(piece(r))
	}
	return b.String()
}

// lastPieces is the end of s, each rune shown as piece makes it, in at
// most max characters.
func lastPieces(s string, max int, piece func(rune) string) string {
	var out []string
	n := 0
	for i := len(s); i > 0; {
		r, size := utf8.DecodeLastRuneInString(s[:i])
		p := piece(r)
		if n+textLen(p) > max {
			break
		}
		out, n, i = append(out, p), n+textLen(p), i-size
	}
	slices.Reverse(out)
	return strings.Join(out, "")
}

// asIs shows a rune as itself, for text that is escaped later.
func asIs(r rune) string { return string(r) }

// plainPiece shows a rune in a plain_text object as fitPlain does:
// invisible characters revealed, line breaks and tabs kept, and escaped.
func plainPiece(r rune) string {
	if invisible(r) && r != '\n' && r != '\t' {
		return escapeCode(r)
	}
	return escapeRune(r)
}

// linePiece shows a rune on one line as oneLine does (every invisible
// character revealed), then as encode does.
func linePiece(encode func(rune) string) func(rune) string {
	return func(r rune) string {
		if invisible(r) {
			return escapeCode(r)
		}
		return encode(r)
	}
}

// escapeCode is r, an invisible character, as \uXXXX (see reveal).
func escapeCode(r rune) string {
	var b strings.Builder
	writeEscape(&b, r)
	return b.String()
}

// The code fences of a mrkdwn code block.
const fenceOpen, fenceClose = "```\n", "\n```"

// codeSectionEnds is codeSection that, when p does not fit in max
// characters and has a suffix, shows its start in at most max characters
// and its end, a third of max, in a second code block (end). The code
// blocks show the arguments exactly as they are (nothing squeezed): what
// is not shown is said between them (gapNote), and View all arguments
// shows it.
func codeSectionEnds(label string, p preview, max int) codeBlock {
	whole := codeSection(label, p, 0, max)
	if !whole.truncated() || p.suffix == "" {
		return whole
	}
	end, endShown := fitCodeEnd(p.suffix, max/3-textLen(fenceOpen+fenceClose), p.total)
	c := codeSection(label, p, 0, max-max/3)
	if c.shown+endShown > p.total {
		end, endShown = fitCodeEnd(p.suffix, max/3, p.total-c.shown)
	}
	c.end, c.tail = fenceOpen+end+fenceClose, endShown
	return c
}

// gapNote stands between the start and the end of a text shown apart.
func (c codeBlock) gapNote() string {
	return "_… " + thousands(c.total-c.shown-c.tail) + " characters not shown …_"
}

// fitCodeEnd is the end of s escaped for a code block (see fitCode), in
// at most max characters and at most runes of s, starting at a line when
// one starts near its start; and how many runes of s it shows.
func fitCodeEnd(s string, max, runes int) (escaped string, shown int) {
	start, n, width := len(s), 0, 0
	for start > 0 && n < runes {
		r, size := utf8.DecodeLastRuneInString(s[:start])
		w := 1
		switch {
		case r == '`' && start-size > 0 && s[start-size-1] == '`':
			w = 2
		case r == '&' || r == '<' || r == '>':
			w = len(escapeRune(r))
		case r >= 0x80:
			w = utf16.RuneLen(r)
		}
		if width+w > max {
			break
		}
		start, n, width = start-size, n+1, width+w
	}
	if nl := strings.IndexByte(s[start:], '\n'); nl >= 0 && utf8.RuneCountInString(s[start:start+nl]) < n/4 {
		n -= utf8.RuneCountInString(s[start : start+nl+1])
		start += nl + 1
	}
	escaped, _ = fitCode(s[start:], width)
	return escaped, n
}
