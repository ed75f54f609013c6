package routing

import (
	"strings"
	"unicode/utf8"
)

// matchGlob reports whether name matches pattern, a glob in path.Match
// syntax (`*`, `?`, `[a-z]`, `[^…]`, `\` escapes) in which every wildcard
// matches any character, `/` included: tool names are not paths, and an
// MCP tool named `fs/delete` must match `fs*` like any other. A malformed
// pattern matches nothing; routing files are validated with path.Match,
// whose syntax this is, when they are loaded.
//
// The time is O(len(pattern) × len(name)): one backtracking point (the
// last star) is enough for globs.
func matchGlob(pattern, name string) bool {
	p, n := 0, 0
	starP, starN := -1, 0
	for n < len(name) {
		if p < len(pattern) {
			switch pattern[p] {
			case '*':
				starP, starN = p, n
				p++
				continue
			case '?':
				_, w := utf8.DecodeRuneInString(name[n:])
				p, n = p+1, n+w
				continue
			default:
				ok, pw, nw, valid := matchOne(pattern[p:], name[n:])
				if !valid {
					return false
				}
				if ok {
					p, n = p+pw, n+nw
					continue
				}
			}
		}
		if starP < 0 {
			return false
		}
		// Let the last star take one more character and try again.
		_, w := utf8.DecodeRuneInString(name[starN:])
		starN += w
		p, n = starP+1, starN
	}
	for p < len(pattern) && pattern[p] == '*' {
		p++
	}
	return p == len(pattern)
}

// matchOne matches the start of name against the pattern element at the
// start of pattern (a literal, an escaped literal or a class) and returns
// whether it matched, the widths of the element and of what it matched,
// and whether the element is well formed. Literals compare as bytes and
// classes as runes, as in path.Match.
func matchOne(pattern, name string) (ok bool, pw, nw int, valid bool) {
	lit := pattern
	switch pattern[0] {
	case '[':
		r, w := utf8.DecodeRuneInString(name)
		ok, pw, valid = matchClass(pattern, r)
		return ok, pw, w, valid
	case '\\':
		if len(pattern) < 2 {
			return false, 0, 0, false
		}
		lit = pattern[1:]
	}
	_, w := utf8.DecodeRuneInString(lit)
	return strings.HasPrefix(name, lit[:w]), len(pattern) - len(lit) + w, w, true
}

// matchClass matches r against the class "[…]" at the start of pattern.
func matchClass(pattern string, r rune) (ok bool, width int, valid bool) {
	i := 1
	negated := i < len(pattern) && pattern[i] == '^'
	if negated {
		i++
	}
	matched := false
	for ranges := 0; ; ranges++ {
		if i >= len(pattern) {
			return false, 0, false
		}
		if pattern[i] == ']' && ranges > 0 {
			i++
			break
		}
		lo, w, good := classChar(pattern[i:])
		if !good {
			return false, 0, false
		}
		i += w
		hi := lo
		if i < len(pattern) && pattern[i] == '-' {
			if hi, w, good = classChar(pattern[i+1:]); !good {
				return false, 0, false
			}
			i += 1 + w
		}
		if lo <= r && r <= hi {
			matched = true
		}
	}
	return matched != negated, i, true
}

// classChar reads one character of a class: a literal or an escaped one.
func classChar(s string) (r rune, width int, valid bool) {
	if s == "" || s[0] == '-' || s[0] == ']' {
		return 0, 0, false
	}
	if s[0] == '\\' {
		if len(s) < 2 {
			return 0, 0, false
		}
		r, w := utf8.DecodeRuneInString(s[1:])
		return r, 1 + w, true
	}
	r, w := utf8.DecodeRuneInString(s)
	return r, w, true
}
