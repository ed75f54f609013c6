package bot

// indentJSON writes src to w indented by indent per level, as json.Indent
// does (an empty indent writes it compact, without line breaks), and
// reports whether src is one JSON value as json.Valid decides. Validating
// while writing reads src once: json.Valid before indenting was half the
// cost of rendering a card. When it reports false, what it wrote is
// meaningless. A writer that stops (textSink.done) ends the pass early,
// reporting true for what it read.
//
// Memory is one byte per open container, at most len(src).
func indentJSON(w *textSink, src []byte, indent string) bool {
	s := jsonIndenter{w: w, src: src, indent: indent}
	return s.run()
}

// jsonIndenter is one pass of indentJSON.
type jsonIndenter struct {
	w      *textSink
	src    []byte
	indent string
	i      int
	open   []byte // the containers open, '{' or '['
}

// What the indenter expects next.
const (
	expectValue      = iota // any value
	expectKey               // an object's key
	expectAfterValue        // ',' or the close of the container, or the end
)

func (s *jsonIndenter) run() bool {
	state := expectValue
	for !s.w.done() {
		s.skipSpace()
		switch state {
		case expectValue:
			next, ok := s.value()
			if !ok {
				return false
			}
			state = next
		case expectKey:
			if !s.key() {
				return false
			}
			state = expectValue
		case expectAfterValue:
			if len(s.open) == 0 {
				return s.i == len(s.src)
			}
			next, ok := s.afterValue()
			if !ok {
				return false
			}
			state = next
		}
	}
	return true
}

func (s *jsonIndenter) skipSpace() {
	for s.i < len(s.src) {
		switch s.src[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

func (s *jsonIndenter) newline() {
	if s.indent == "" {
		return
	}
	s.w.byte('\n')
	s.w.repeat(s.indent, len(s.open))
}

// value writes the value at s.i, or opens a container, and returns what
// comes next.
func (s *jsonIndenter) value() (next int, ok bool) {
	if s.i >= len(s.src) {
		return 0, false
	}
	switch c := s.src[s.i]; c {
	case '{', '[':
		s.w.byte(c)
		s.i++
		s.skipSpace()
		closing := c + 2 // '{'+2 is '}', '['+2 is ']'
		if s.i < len(s.src) && s.src[s.i] == closing {
			s.w.byte(closing) // empty: {} or []
			s.i++
			return expectAfterValue, true
		}
		s.open = append(s.open, c)
		s.newline()
		if c == '{' {
			return expectKey, true
		}
		return expectValue, true
	case '"':
		return expectAfterValue, s.str()
	case 't':
		return expectAfterValue, s.literal("true")
	case 'f':
		return expectAfterValue, s.literal("false")
	case 'n':
		return expectAfterValue, s.literal("null")
	default:
		return expectAfterValue, s.number()
	}
}

// key writes an object's key and its colon.
func (s *jsonIndenter) key() bool {
	if s.i >= len(s.src) || s.src[s.i] != '"' || !s.str() {
		return false
	}
	s.skipSpace()
	if s.i >= len(s.src) || s.src[s.i] != ':' {
		return false
	}
	s.i++
	s.w.byte(':')
	if s.indent != "" {
		s.w.byte(' ')
	}
	return true
}

// afterValue writes the ',' or the close that follows a value in a
// container.
func (s *jsonIndenter) afterValue() (next int, ok bool) {
	if s.i >= len(s.src) {
		return 0, false
	}
	top := s.open[len(s.open)-1]
	switch c := s.src[s.i]; {
	case c == ',':
		s.i++
		s.w.byte(',')
		s.newline()
		if top == '{' {
			return expectKey, true
		}
		return expectValue, true
	case c == top+2:
		s.i++
		s.open = s.open[:len(s.open)-1]
		s.newline()
		s.w.byte(c)
		return expectAfterValue, true
	}
	return 0, false
}

// str writes the string at s.i (a quote), revealed, checking it as
// json.Valid does: no control characters, only JSON's escapes. Bytes that
// are not UTF-8 are accepted (and revealed), as json.Valid accepts them.
func (s *jsonIndenter) str() bool {
	src, start := s.src, s.i
	for j := start + 1; j < len(src); j++ {
		switch c := src[j]; {
		case c == '"':
			s.i = j + 1
			s.w.reveal(src[start:s.i], false)
			return true
		case c < 0x20:
			return false
		case c == '\\':
			j++
			if j >= len(src) {
				return false
			}
			switch src[j] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			case 'u':
				if j+4 >= len(src) || !isHex(src[j+1]) || !isHex(src[j+2]) || !isHex(src[j+3]) || !isHex(src[j+4]) {
					return false
				}
				j += 4
			default:
				return false
			}
		}
	}
	return false
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

func (s *jsonIndenter) literal(word string) bool {
	if len(s.src)-s.i < len(word) || string(s.src[s.i:s.i+len(word)]) != word {
		return false
	}
	s.w.reveal(s.src[s.i:s.i+len(word)], false)
	s.i += len(word)
	return true
}

// number writes the number at s.i: -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func (s *jsonIndenter) number() bool {
	src, j := s.src, s.i
	digits := func() bool {
		k := j
		for j < len(src) && '0' <= src[j] && src[j] <= '9' {
			j++
		}
		return j > k
	}
	if j < len(src) && src[j] == '-' {
		j++
	}
	switch {
	case j < len(src) && src[j] == '0':
		j++
	case !digits():
		return false
	}
	if j < len(src) && src[j] == '.' {
		j++
		if !digits() {
			return false
		}
	}
	if j < len(src) && (src[j] == 'e' || src[j] == 'E') {
		j++
		if j < len(src) && (src[j] == '+' || src[j] == '-') {
			j++
		}
		if !digits() {
			return false
		}
	}
	s.w.reveal(src[s.i:j], false)
	s.i = j
	return true
}
