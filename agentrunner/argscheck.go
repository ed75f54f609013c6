package agentrunner

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/slackapprove/slackbot/receipt"
)

// MaxArgsDepth is how deeply a call's argument JSON may nest arrays and
// objects: {"a":1} is one level, {"a":[1]} two. Deeper arguments are refused
// at every way in (the HTTP API, the runner, MCP tools), because what reads
// them (pretty-printing, schema validation, CEL) costs more with every level.
const MaxArgsDepth = 64

// The errors of CheckArgs wrap one of these; each but ErrArgsTooDeep names
// where in the arguments, as a JSON Pointer ("/" for the top).
var (
	// ErrArgsTooDeep: arrays and objects nest deeper than MaxArgsDepth.
	ErrArgsTooDeep = fmt.Errorf("arguments are nested deeper than %d levels", MaxArgsDepth)
	// ErrArgsDuplicateName: an object names a member twice.
	ErrArgsDuplicateName = errors.New("duplicate member")
	// ErrArgsNotUnicode: a string holds invalid UTF-8 or a lone UTF-16
	// surrogate escape.
	ErrArgsNotUnicode = errors.New("not Unicode text")
	// ErrArgsInexactNumber: a number's digits are not what a double
	// holds; the receipt's own error for it, one condition, one error.
	ErrArgsInexactNumber = receipt.ErrInexactNumber
)

// CheckArgs returns an error if arguments could be read as two different
// calls: what a person sees on the card, what policies and grants
// evaluate, what the receipt hashes and what the tool (in Go, JavaScript
// or Python) runs must be one reading of the same bytes. It refuses, at
// any depth:
//
//   - nesting deeper than MaxArgsDepth (ErrArgsTooDeep), which makes every
//     reader pay per level;
//   - an object that names a member twice (ErrArgsDuplicateName), names
//     compared decoded ("a" and "\u0061" are one name): RFC 8259 leaves
//     the meaning to the parser, and Go, JSON.parse and Python keep the
//     last value while a person reading a card sees the first;
//   - a string, name or value, holding invalid UTF-8 or a lone UTF-16
//     surrogate escape (ErrArgsNotUnicode): Go turns each bad byte into
//     U+FFFD and a browser's decoder a whole bad sequence into one, Python
//     refuses the bytes; Go decodes every lone surrogate ("\ud800",
//     "\udbff") as U+FFFD where JavaScript and Python keep it, so two
//     names distinct there are one in Go. Paired surrogates are one
//     character everywhere and pass;
//   - a number whose digits are not those of its nearest IEEE 754 double
//     as JavaScript and RFC 8785 write it (ErrArgsInexactNumber,
//     receipt.ExactNumber): the card shows the digits, CEL reads whole
//     numbers as int64, JavaScript, Go's float64 and the receipt's RFC
//     8785 form the nearest double, so 9007199254740993 would be approved
//     as shown and run as 9007199254740992, 100.0000000000000001 as 100,
//     and 1e400 as Infinity (Go refuses it). Such numbers must be sent as
//     strings.
//
// These are I-JSON's rules (RFC 7493), with its advice on numbers made a
// rule. args is a JSON value or a JSON string holding one (Pydantic AI's
// string form), which must itself be Unicode text and is checked inside.
//
// CheckArgs does not check that args are JSON (ArgsObject does): it reads
// valid JSON exactly and anything else harmlessly. It scans the bytes
// once: time linear in their length, memory for a copy of them and the
// member names of the objects open at one point (at most 16 per object
// before it keeps them in a map), so hostile input costs what its size
// allows.
func CheckArgs(args json.RawMessage) error {
	args = bytes.TrimSpace(args)
	src := string(args)
	if len(src) > 0 && src[0] == '"' {
		// Every client decodes the string before the object it holds, so
		// the string must read one way too.
		if err := scanArgs(src); err != nil {
			return err
		}
		var s string
		if err := json.Unmarshal(args, &s); err != nil {
			return nil // not a string: validity is for the caller to check
		}
		src = s
	}
	return scanArgs(src)
}

// CheckArgs returns CheckArgs' error for the call's arguments, naming the
// call.
func (p ToolCallPart) CheckArgs() error {
	if err := CheckArgs(p.Args); err != nil {
		return fmt.Errorf("tool call %s: %w", p.ToolCallID, err)
	}
	return nil
}

// fewNames is how many member names an object keeps in a slice, compared
// one by one, before it keeps them in a map.
const fewNames = 16

// argsScan is one pass of CheckArgs over JSON text.
type argsScan struct {
	src  string
	i    int
	open []frame // the arrays and objects open at i, outermost first
}

// frame is an open array or object: where the scan is in it, and the
// names an object has had so far.
type frame struct {
	object bool
	key    string // the member being read
	index  int    // the element being read
	names  []string
	set    map[string]struct{}
}

// scanArgs checks JSON text as CheckArgs says. Outside strings it looks at
// brackets, commas and numbers only; a string right after '{' or an
// object's ',' is a member name.
func scanArgs(src string) error {
	s := argsScan{src: src}
	wantName := false
	for s.i < len(src) {
		switch c := src[s.i]; {
		case c == '"':
			if err := s.str(wantName); err != nil {
				return err
			}
			wantName = false
		case c == '{' || c == '[':
			if len(s.open) == MaxArgsDepth {
				return ErrArgsTooDeep
			}
			s.push(c == '{')
			wantName = c == '{'
			s.i++
		case c == '}' || c == ']':
			if len(s.open) > 0 {
				s.open = s.open[:len(s.open)-1]
			}
			wantName = false
			s.i++
		case c == ',':
			if n := len(s.open); n > 0 {
				top := &s.open[n-1]
				top.index++
				wantName = top.object
			}
			s.i++
		case c == '-' || '0' <= c && c <= '9':
			if err := s.number(); err != nil {
				return err
			}
		default:
			s.i++
		}
	}
	return nil
}

// push opens an array or object, reusing the frame (and its names' room)
// of an earlier sibling. A map is never reused: clearing a large one for
// each small sibling would cost more than the input.
func (s *argsScan) push(object bool) {
	n := len(s.open)
	if n < cap(s.open) {
		s.open = s.open[:n+1]
		f := &s.open[n]
		*f = frame{object: object, names: f.names[:0]}
		return
	}
	s.open = append(s.open, frame{object: object})
}

// str reads the string at s.i, a member name of the innermost object when
// name is set.
func (s *argsScan) str(name bool) error {
	text, problem := s.readString(name)
	switch {
	case problem != "" && name:
		return fmt.Errorf("member name at %s is %w: %s", s.path(len(s.open)-1), ErrArgsNotUnicode, problem)
	case problem != "":
		return fmt.Errorf("string at %s is %w: %s", s.path(len(s.open)), ErrArgsNotUnicode, problem)
	case !name || len(s.open) == 0:
		return nil
	}
	top := &s.open[len(s.open)-1]
	if !top.add(text) {
		return fmt.Errorf("%w %s at %s", ErrArgsDuplicateName, quoteShort(text), s.path(len(s.open)-1))
	}
	top.key = text
	return nil
}

// add records name, reporting false if the object already had it.
func (f *frame) add(name string) bool {
	if f.set != nil {
		if _, dup := f.set[name]; dup {
			return false
		}
		f.set[name] = struct{}{}
		return true
	}
	if slices.Contains(f.names, name) {
		return false
	}
	if len(f.names) < fewNames {
		f.names = append(f.names, name)
		return true
	}
	f.set = make(map[string]struct{}, 4*fewNames)
	for _, n := range f.names {
		f.set[n] = struct{}{}
	}
	f.set[name] = struct{}{}
	return true
}

// readString reads the string at s.i (a quote) and returns its decoded
// text when decode is set (a slice of src when it has no escapes), or
// why it is not Unicode text. An unterminated string or a bad escape is
// not JSON: it reads to the end, or past the backslash, and says nothing.
func (s *argsScan) readString(decode bool) (text, problem string) {
	src := s.src
	start := s.i + 1
	var b []byte // the decoded text up to plain, once an escape was seen
	escaped, plain := false, start
	for j := start; j < len(src); {
		c := src[j]
		switch {
		case c == '"':
			s.i = j + 1
			if !escaped {
				return src[start:j], ""
			}
			return string(append(b, src[plain:j]...)), ""
		case c == '\\':
			if decode {
				b, escaped = append(b, src[plain:j]...), true
			}
			r, n, bad := escape(src[j:])
			if bad != "" {
				return "", bad
			}
			if decode && r >= 0 {
				b = utf8.AppendRune(b, r)
			}
			j += n
			plain = j
		case c < utf8.RuneSelf:
			j++
		default:
			r, size := utf8.DecodeRuneInString(src[j:])
			if r == utf8.RuneError && size == 1 {
				return "", "invalid UTF-8"
			}
			j += size
		}
	}
	s.i = len(src)
	return "", ""
}

// escape decodes the escape at the start of e (a backslash): the rune,
// how many bytes it takes, or why it is not Unicode text (a lone
// surrogate). A bad escape (not JSON) is one byte with rune -1.
func escape(e string) (r rune, n int, problem string) {
	if len(e) < 2 {
		return -1, 1, ""
	}
	switch e[1] {
	case '"', '\\', '/':
		return rune(e[1]), 2, ""
	case 'b':
		return '\b', 2, ""
	case 'f':
		return '\f', 2, ""
	case 'n':
		return '\n', 2, ""
	case 'r':
		return '\r', 2, ""
	case 't':
		return '\t', 2, ""
	case 'u':
	default:
		return -1, 1, ""
	}
	hi, ok := hex4(e[2:])
	switch {
	case !ok:
		return -1, 1, ""
	case hi < 0xD800 || hi > 0xDFFF:
		return hi, 6, ""
	case hi <= 0xDBFF && len(e) >= 12 && e[6] == '\\' && e[7] == 'u':
		if lo, ok := hex4(e[8:]); ok && lo >= 0xDC00 && lo <= 0xDFFF {
			return utf16Pair(hi, lo), 12, ""
		}
	}
	return -1, 0, fmt.Sprintf(`lone UTF-16 surrogate \u%04x`, hi)
}

func utf16Pair(hi, lo rune) rune { return 0x10000 + (hi-0xD800)<<10 + (lo - 0xDC00) }

// hex4 reads four hex digits.
func hex4(h string) (rune, bool) {
	if len(h) < 4 {
		return 0, false
	}
	var r rune
	for _, c := range []byte(h[:4]) {
		switch {
		case '0' <= c && c <= '9':
			r = r<<4 | rune(c-'0')
		case 'a' <= c && c <= 'f':
			r = r<<4 | rune(c-'a'+10)
		case 'A' <= c && c <= 'F':
			r = r<<4 | rune(c-'A'+10)
		default:
			return 0, false
		}
	}
	return r, true
}

// number reads the number at s.i and refuses one no double holds exactly.
// At most 15 characters without an exponent is at most 15 significant
// digits of a magnitude between 1e-13 and 1e15, which every double
// conversion reads back exactly: the common case costs no parsing.
func (s *argsScan) number() error {
	j := s.i
	for j < len(s.src) && strings.IndexByte("0123456789+-.eE", s.src[j]) >= 0 {
		j++
	}
	n := s.src[s.i:j]
	s.i = j
	if len(n) <= 15 && !strings.ContainsAny(n, "eE") || receipt.ExactNumber(n) {
		return nil
	}
	if len(n) > 40 {
		n = n[:40] + "…"
	}
	return fmt.Errorf("number %s at %s: %w", n, s.path(len(s.open)), ErrArgsInexactNumber)
}

// path is the JSON Pointer (RFC 6901) of the value the first n open
// frames are reading, "/" for the top; long names are cut short and
// invisible characters escaped, for people to read.
func (s *argsScan) path(n int) string {
	if n <= 0 {
		return "/"
	}
	var b strings.Builder
	for _, f := range s.open[:n] {
		b.WriteByte('/')
		if !f.object {
			b.WriteString(strconv.Itoa(f.index))
			continue
		}
		key := strings.NewReplacer("~", "~0", "/", "~1").Replace(shorten(f.key))
		for _, r := range key {
			if unicode.IsGraphic(r) {
				b.WriteRune(r)
			} else {
				fmt.Fprintf(&b, `\u%04x`, r)
			}
		}
	}
	return b.String()
}

// shorten cuts s to at most 64 bytes on a rune boundary, marking the cut.
func shorten(s string) string {
	const most = 64
	if len(s) <= most {
		return s
	}
	n := most
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

// quoteShort quotes a member name for an error, cut short.
func quoteShort(name string) string { return strconv.Quote(shorten(name)) }

// refuseUnreadable splits requests into the calls whose arguments
// CheckArgs refuses, answered here (approvals denied, other calls failed,
// each with the reason), and the rest.
func refuseUnreadable(requests DeferredToolRequests) (*DeferredToolResults, DeferredToolRequests) {
	var refused *DeferredToolResults
	keep := func(calls []ToolCallPart, deny func(id, msg string)) []ToolCallPart {
		var out []ToolCallPart
		for _, c := range calls {
			err := CheckArgs(c.Args)
			if err == nil {
				out = append(out, c)
				continue
			}
			if refused == nil {
				refused = NewDeferredToolResults()
			}
			deny(c.ToolCallID, "The tool call was refused and nothing ran: "+err.Error()+".")
		}
		return out
	}
	rest := requests.clone()
	rest.Approvals = keep(requests.Approvals, func(id, msg string) { refused.Approvals[id] = Deny(msg) })
	rest.Calls = keep(requests.Calls, func(id, msg string) { refused.Calls[id] = Fail(msg) })
	if refused == nil {
		return nil, requests
	}
	for id := range refused.Approvals {
		delete(rest.Metadata, id)
	}
	for id := range refused.Calls {
		delete(rest.Metadata, id)
	}
	return refused, rest
}
