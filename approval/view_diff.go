package approval

import (
	"fmt"
	"strings"

	"github.com/pmezard/go-difflib/difflib"
)

// maxDiffLines bounds the lines of each side that are matched line by line:
// difflib's matcher is quadratic in the worst case, so longer strings are
// shown as all of old removed and all of new added, which costs their
// length and is as true.
const maxDiffLines = 2000

// unifiedDiff is the unified diff (three lines of context) that replaces
// old by repl in path; label, when set, follows the path on the "---" line
// ("edit 2 of 3, every occurrence"). Line numbers count from the start of
// old and repl, not of the file: the hook sends the strings, not the
// file. Identical strings say so rather than show nothing.
func unifiedDiff(path, label, old, repl string) string {
	from := path
	if label != "" {
		from += " (" + label + ")"
	}
	head := "--- " + from + "\n+++ " + path + "\n"
	if old == repl {
		return head + "# no change: the old and the new text are the same\n"
	}
	a, b := diffLines(old), diffLines(repl)
	if len(a) > maxDiffLines || len(b) > maxDiffLines || len(old)+len(repl) > 2*MaxChangeText {
		return head + wholeReplacement(a, b)
	}
	text, err := difflib.GetUnifiedDiffString(difflib.UnifiedDiff{A: a, B: b, FromFile: from, ToFile: path, Context: 3})
	if err != nil || text == "" {
		// Writing to a strings.Builder does not fail; never show nothing.
		return head + wholeReplacement(a, b)
	}
	return text
}

// diffLines splits s into lines that each end with "\n" (the last one is
// given one), none for "".
func diffLines(s string) []string {
	if s == "" {
		return nil
	}
	lines := strings.SplitAfter(s, "\n")
	if lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	} else {
		lines[len(lines)-1] += "\n"
	}
	return lines
}

// wholeReplacement is one hunk removing every line of a and adding every
// line of b, stopping once it is longer than MaxChangeText (capText cuts
// it there).
func wholeReplacement(a, b []string) string {
	var w strings.Builder
	fmt.Fprintf(&w, "@@ -1,%d +1,%d @@\n", len(a), len(b))
	for _, side := range []struct {
		mark  string
		lines []string
	}{{"-", a}, {"+", b}} {
		for _, l := range side.lines {
			if w.Len() > MaxChangeText {
				return w.String()
			}
			w.WriteString(side.mark + l)
		}
	}
	return w.String()
}
