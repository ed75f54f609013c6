package routing

import (
	"path"
	"strings"
	"testing"
)

// Tool-name globs are path.Match's syntax with wildcards that also match
// "/": a tool named "refund_a/b" is a refund, not a call for the default
// route.
func TestMatchGlob(t *testing.T) {
	tests := []struct {
		pattern, name string
		want          bool
	}{
		{"refund_*", "refund_a/b", true},
		{"refund_*", "refund_", true},
		{"refund_*", "xrefund_a", false},
		{"*", "a/b/c", true},
		{"*", "", true},
		{"fs*", "fs/delete", true},
		{"fs/*", "fs/a/b", true},
		{"*/delete", "mcp/fs/delete", true},
		{"*/delete", "mcp/fs/deleted", false},
		{"a?b", "a/b", true},
		{"a?b", "ab", false},
		{"a?c", "aéc", true},
		{"a*b*c", "a/x/b/y/c", true},
		{"a*b*c", "a/x/b/y/d", false},
		{"[a-c]*", "b/x", true},
		{"[^a-c]*", "b/x", false},
		{"[^a-c]*", "/x", true},
		{`a\*`, "a*", true},
		{`a\*`, "ab", false},
		{"*x", strings.Repeat("a/", 500) + "x", true},
		// Malformed patterns match nothing (files are validated on load).
		{"refund_[a", "refund_a", false},
		{`a\`, "a", false},
		{"[]", "]", false},
	}
	for _, tt := range tests {
		if got := matchGlob(tt.pattern, tt.name); got != tt.want {
			t.Errorf("matchGlob(%q, %q) = %v, want %v", tt.pattern, tt.name, got, tt.want)
		}
	}
}

// Without "/", matchGlob agrees with path.Match.
func TestMatchGlobAgreesWithPathMatch(t *testing.T) {
	patterns := []string{"*", "a*", "*a", "a*b", "?", "a?", "[ab]", "[^ab]*", "[a-c]?d", `\[a`, "a**b", "*_*", "x[0-9]*"}
	names := []string{"", "a", "b", "ab", "ba", "abc", "a_b", "[a", "x5", "x55y", "acd", "bbd", "zzz", "aab"}
	for _, p := range patterns {
		for _, n := range names {
			want, err := path.Match(p, n)
			if err != nil {
				t.Fatalf("path.Match(%q): %v", p, err)
			}
			if got := matchGlob(p, n); got != want {
				t.Errorf("matchGlob(%q, %q) = %v, path.Match says %v", p, n, got, want)
			}
		}
	}
}

func FuzzMatchGlob(f *testing.F) {
	f.Add("a*b?[c-d]", "axxbzc")
	f.Fuzz(func(t *testing.T, pattern, name string) {
		if strings.Contains(name, "/") {
			return
		}
		want, err := path.Match(pattern, name)
		if err != nil {
			return
		}
		if got := matchGlob(pattern, name); got != want {
			t.Errorf("matchGlob(%q, %q) = %v, path.Match says %v", pattern, name, got, want)
		}
	})
}

// A route's tool globs cross "/": "refund_a/b" goes to refunds, not to
// the catch-all after it.
func TestRoutesMatchToolNamesWithSlash(t *testing.T) {
	rs, err := ParseRoutes([]byte(`
routes:
  - name: refunds
    when: {tools: ["refund_*"]}
    channel: C0APPROVALS
    approvers: {users: ["U0ALICE"]}
  - name: fs
    when: {tools: ["mcp?fs?*"]}
    channel: C0APPROVALS
    approvers: {users: ["U0ALICE"]}
  - name: default
    channel: C0APPROVALS
    approvers: {users: ["U0BOB"]}
`), "routes.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for tool, want := range map[string]string{
		"refund_a/b": "refunds", "refund_x": "refunds", "mcp/fs/rm -rf": "fs", "x/refund_a": "default",
	} {
		if got := rs.Match(tool, ""); got == nil || got.Name != want {
			t.Errorf("Match(%q) = %v, want route %s", tool, got, want)
		}
	}
}
