package hook

import (
	"regexp"
	"strings"
	"testing"

	"github.com/slackapprove/slackbot/client"
)

// TestDeferDocsAgreeWithTheCode: the README's defer section runs the
// agent commands as they parse, and the flags it says a session may or
// may not be resumed with are the ones client.CheckResumeArgs allows and
// refuses.
func TestDeferDocsAgreeWithTheCode(t *testing.T) {
	t.Parallel()
	section := readmeSection(t, "### Claude Code with no process waiting: `--defer`, `slackbot agent claude`, `slackbot agent resume`")
	own := map[string][]string{"claude": {"--resumer", "--claude"}, "resume": {"--resumer", "--claude", "--root", "--once", "--lease"}}
	commands := 0
	for _, m := range fenceRE.FindAllStringSubmatch(section, -1) {
		for _, line := range strings.Split(m[2], "\n") {
			line = strings.TrimSpace(line)
			if !strings.HasPrefix(line, "slackbot agent ") {
				continue
			}
			commands++
			words := shellWords(strings.TrimSuffix(line, " &"))
			sub, rest := words[2], words[3:]
			var flags []string
			if i := indexOf(rest, "--"); i >= 0 {
				rest, flags = rest[:i], rest[i+1:]
				if len(flags) < 2 || flags[0] != "-p" {
					t.Errorf("%q: want -- -p PROMPT [flags]", line)
					continue
				}
				if err := client.CheckResumeArgs(flags[2:]); err != nil {
					t.Errorf("%q: %v", line, err)
				}
			}
			for _, w := range rest {
				if strings.HasPrefix(w, "--") && indexOf(own[sub], w) < 0 {
					t.Errorf("%q: slackbot agent %s has no flag %s", line, sub, w)
				}
			}
		}
	}
	if commands < 3 {
		t.Errorf("the section runs %d agent commands, want the wrapper, the resumer and CI's", commands)
	}

	allowed, refused, ok := strings.Cut(section, "never ")
	if !ok {
		t.Fatal("the section does not say which flags are never allowed")
	}
	_, allowed, _ = strings.Cut(allowed, "allow-list")
	refused, _, _ = strings.Cut(refused, "which would")
	flagRE := regexp.MustCompile("`(--[A-Za-z-]+)")
	for _, f := range flagRE.FindAllStringSubmatch(allowed, -1) {
		if err := client.CheckResumeArgs([]string{f[1], "1"}); err != nil && !strings.Contains(err.Error(), "want one of") {
			t.Errorf("the README allows %s, the code refuses it: %v", f[1], err)
		}
	}
	for _, f := range flagRE.FindAllStringSubmatch(refused, -1) {
		if err := client.CheckResumeArgs([]string{f[1], "x"}); err == nil {
			t.Errorf("the README refuses %s, the code allows it", f[1])
		}
	}
}

func indexOf(s []string, w string) int {
	for i, x := range s {
		if x == w {
			return i
		}
	}
	return -1
}

// shellWords splits a command line on spaces, keeping "quoted words".
func shellWords(line string) []string {
	var words []string
	var cur strings.Builder
	quoted := false
	for _, r := range line {
		switch {
		case r == '"':
			quoted = !quoted
		case r == ' ' && !quoted:
			if cur.Len() > 0 {
				words = append(words, cur.String())
				cur.Reset()
			}
		default:
			cur.WriteRune(r)
		}
	}
	if cur.Len() > 0 {
		words = append(words, cur.String())
	}
	return words
}
