package approval

import "strings"

// Reveal replaces invalid UTF-8 and characters that are invisible or
// reorder text (bidi controls, zero-width characters, control
// characters) with \uXXXX, so that a call cannot look different from what
// it is on any surface that shows it (the card, App Home, the step-up
// page). Line breaks and tabs are kept when keepBreaks.
func Reveal(s string, keepBreaks bool) string {
	var b strings.Builder
	b.Grow(len(s))
	for _, r := range s { // each invalid byte is one utf8.RuneError
		if Invisible(r) && !((r == '\n' || r == '\t') && keepBreaks) {
			WriteEscape(&b, r)
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

// Invisible reports whether r is a character Reveal escapes.
func Invisible(r rune) bool {
	switch {
	case r < 0x20, r >= 0x7f && r < 0xa0:
		return true
	case r >= 0x200b && r <= 0x200f, // zero-width spaces, joiners, marks
		r >= 0x2028 && r <= 0x202e, // separators, bidi embeddings and overrides
		r >= 0x2060 && r <= 0x2064, // word joiner, invisible operators
		r >= 0x2066 && r <= 0x2069, // bidi isolates
		r == 0x061c, r == 0xfeff:
		return true
	}
	return false
}

// WriteEscape writes r as \uXXXX (its low 16 bits: every rune Invisible
// reports, and utf8.RuneError, fit).
func WriteEscape(b *strings.Builder, r rune) {
	const hex = "0123456789abcdef"
	b.WriteString(`\u`)
	for shift := 12; shift >= 0; shift -= 4 {
		b.WriteByte(hex[(r>>shift)&0xf])
	}
}
