package bot

import (
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/slack-go/slack"
	"github.com/slackapprove/slackbot/approval"
)

// codeBlock is a code block cut to fit a text object.
type codeBlock struct {
	text  string // label, then the code block
	shown int    // characters of the content shown, counted from its start
	total int    // characters of the whole content
	rest  string // what did not fit of the preview's prefix, for the next chunk
	// end, when the content's end is shown too (codeSectionEnds), is its
	// code block, and tail how many characters of the content it shows.
	end  string
	tail int
}

func (c codeBlock) truncated() bool { return c.shown+c.tail < c.total }

// note says how much of the content is shown.
func (c codeBlock) note(viewButton bool) string {
	s := fmt.Sprintf("Showing %s of %s characters.", thousands(c.shown), thousands(c.total))
	if c.tail > 0 {
		s = fmt.Sprintf("Showing the first %s and the last %s of %s characters.", thousands(c.shown), thousands(c.tail), thousands(c.total))
	}
	if viewButton {
		s += " Use *View all arguments* to see the rest."
	}
	return s
}

// codeSection renders label and the content of p as a mrkdwn code block of
// at most max characters, cutting the content (at a line end when one is
// near) if it does not fit. skip is how many characters of the content
// earlier chunks showed.
func codeSection(label string, p preview, skip, max int) codeBlock {
	head := fenceOpen
	if label != "" {
		head = label + "\n" + fenceOpen
	}
	body, rest := fitCode(p.prefix, max-textLen(head)-textLen(fenceClose))
	shown := skip + utf8.RuneCountInString(p.prefix[:len(p.prefix)-len(rest)])
	return codeBlock{text: head + body + fenceClose, shown: shown, total: p.total, rest: rest}
}

// fitCode escapes s for the inside of a mrkdwn code block and cuts it to at
// most max characters. It returns the escaped text and what was left out.
// A run of backticks gets zero-width spaces between them so the content
// cannot close the block.
func fitCode(s string, max int) (escaped, rest string) {
	var b strings.Builder
	n := 0
	prev := rune(0)
	// Where the last full line ended, to cut there if it is near the end.
	lineEnd, lineEndIn := -1, 0
	b.Grow(min(len(s), 4*max))
	for i, r := range s {
		piece, width := "", 1 // piece "" means r itself
		switch {
		case r == '`' && prev == '`':
			piece, width = "\u200b`", 2
		case r == '&' || r == '<' || r == '>':
			piece = escapeRune(r)
			width = len(piece)
		case r >= 0x80:
			width = utf16.RuneLen(r)
		}
		if n+width > max {
			if lineEnd >= 0 && b.Len()-lineEnd < b.Len()/4 {
				out := b.String()[:lineEnd]
				return out, s[lineEndIn:]
			}
			return b.String(), s[i:]
		}
		if r == '\n' {
			lineEnd, lineEndIn = b.Len(), i+1
		}
		if piece == "" {
			b.WriteRune(r)
		} else {
			b.WriteString(piece)
		}
		n += width
		prev = r
	}
	return b.String(), ""
}

// plain returns a plain_text text object. Plain text is never parsed for
// mentions or formatting; callers escape &, < and >.
func plain(text string, emoji bool) *slack.TextBlockObject {
	return slack.NewTextBlockObject(slack.PlainTextType, text, emoji, false)
}

// mrkdwn returns a verbatim mrkdwn text object: Slack does not turn bare
// URLs, channel names or @here into links or mentions, so only the <…>
// sequences the renderer writes are special.
func mrkdwn(text string) *slack.TextBlockObject {
	return slack.NewTextBlockObject(slack.MarkdownType, text, false, true)
}

// slackDate shows t in each reader's time zone, with a UTC fallback.
func slackDate(t time.Time) string {
	return fmt.Sprintf("<!date^%d^{date_short_pretty} at {time}|%s>", t.Unix(), t.UTC().Format("2006-01-02 15:04 UTC"))
}

// fitPlain escapes s for a plain_text object (keeping line breaks) and cuts
// it to max characters.
func fitPlain(s string, max int) string {
	return fit(reveal(clip(s, max+1), true), max, "…", escapeRune)
}

// clip returns the first n characters of s, or s when it is shorter,
// without copying: text is cut to what can be shown before anything costs
// more than its length (reveal never makes text shorter, so a clipped text
// longer than a limit still is after).
func clip(s string, n int) string {
	for i := range s {
		if n == 0 {
			return s[:i]
		}
		n--
	}
	return s
}

// literal renders a short name (route, client, tool) inside mrkdwn as an
// inline code span: no formatting, no mentions, one line.
func literal(s string) string {
	s = strings.ReplaceAll(oneLine(s), "`", "ˋ")
	if strings.TrimSpace(s) == "" {
		s = "?"
	}
	return "`" + fit(s, maxIdentifier, "…", escapeRune) + "`"
}

// oneLine reveals invisible characters and turns line breaks and tabs into
// spaces. One-line texts are never shown longer than maxFallbackText, so
// only that much (and one more character, for the ellipsis) is kept.
func oneLine(s string) string {
	s = reveal(clip(s, maxFallbackText+1), false)
	return strings.Map(func(r rune) rune {
		if r == '\n' || r == '\t' {
			return ' '
		}
		return r
	}, s)
}

// fit encodes s rune by rune and cuts it, on a rune boundary and never
// inside an escape, so that the result with ellipsis appended fits in max
// characters. s is returned whole when it fits.
func fit(s string, max int, ellipsis string, encode func(rune) string) string {
	var b strings.Builder
	n, cut := 0, 0
	budget := max - textLen(ellipsis)
	for _, r := range s {
		piece := encode(r)
		n += textLen(piece)
		if n > max {
			return b.String()[:cut] + ellipsis
		}
		b.WriteString(piece)
		if n <= budget {
			cut = b.Len()
		}
	}
	return b.String()
}

// escapeRune applies Slack's escaping: &, < and > become entities.
func escapeRune(r rune) string {
	switch r {
	case '&':
		return "&amp;"
	case '<':
		return "&lt;"
	case '>':
		return "&gt;"
	}
	return string(r)
}

// neutralRune escapes like escapeRune and follows mrkdwn's formatting
// characters with a zero-width space, so text that is not in a code block
// cannot turn bold, italic, struck or into code.
func neutralRune(r rune) string {
	switch r {
	case '*', '_', '~', '`':
		return string(r) + "\u200b"
	}
	return escapeRune(r)
}

// reveal is approval.Reveal: what the card shows of a call's text.
func reveal(s string, keepBreaks bool) string { return approval.Reveal(s, keepBreaks) }

// invisible is approval.Invisible.
func invisible(r rune) bool { return approval.Invisible(r) }

// textLen is the length of s in UTF-16 code units: Slack's character count
// or more, so limits checked with it hold.
func textLen(s string) int {
	n := 0
	for _, r := range s {
		n += utf16.RuneLen(r)
	}
	return n
}

// thousands formats n with comma separators: 10312 → 10,312.
func thousands(n int) string {
	s := strconv.Itoa(n)
	if n < 0 {
		return "-" + thousands(-n)
	}
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// isUserID reports whether s looks like a Slack user id (U… or W…), the
// only thing ever rendered as a user mention.
func isUserID(s string) bool { return isSlackID(s, "UW") }

// isChannelID reports whether s looks like a Slack conversation id.
func isChannelID(s string) bool { return isSlackID(s, "CGD") }

// isUsergroupID reports whether s looks like a Slack usergroup id.
func isUsergroupID(s string) bool { return isSlackID(s, "S") }

func isSlackID(s, prefixes string) bool {
	if len(s) < 3 || len(s) > 24 || !strings.ContainsRune(prefixes, rune(s[0])) {
		return false
	}
	for i := 1; i < len(s); i++ {
		if c := s[i]; !('A' <= c && c <= 'Z' || '0' <= c && c <= '9') {
			return false
		}
	}
	return true
}
