package archtest

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// resultBuilders names what builds the results a call resumes with, and
// their default wording: only package approval uses them
// (approval/recorded.go, Decision.Recorded); store records the strings it
// is given. docs/ARCHITECTURE.md, "Packages".
var resultBuilders = []string{
	"agentrunner.Approve", "agentrunner.ApproveWith", "agentrunner.Deny", "agentrunner.Fail", "agentrunner.RetryWith",
	"agentrunner.NoDecision", "agentrunner.DefaultDenialMessage",
}

// builderUses returns the result builders src, a Go file, names.
func builderUses(t *testing.T, name, src string) []string {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), name, src, parser.SkipObjectResolution)
	if err != nil {
		t.Fatalf("parse %s: %v", name, err)
	}
	var got []string
	ast.Inspect(f, func(n ast.Node) bool {
		if sel, ok := n.(*ast.SelectorExpr); ok {
			if id, ok := sel.X.(*ast.Ident); ok && slices.Contains(resultBuilders, id.Name+"."+sel.Sel.Name) {
				got = append(got, id.Name+"."+sel.Sel.Name)
			}
		}
		return true
	})
	return got
}

// TestStoreBuildsNoResults: store keeps what approval decided a decision
// records; it does not choose a call's results or their words.
func TestStoreBuildsNoResults(t *testing.T) {
	files, err := filepath.Glob("../../store/*.go")
	if err != nil || len(files) == 0 {
		t.Fatalf("store's files: %v, %v", files, err)
	}
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if got := builderUses(t, f, string(src)); len(got) > 0 {
			t.Errorf("%s uses %v: what a decision records is decided in approval (Decision.Recorded)", f, got)
		}
	}
}

// TestBuilderUses checks the check on made-up code.
func TestBuilderUses(t *testing.T) {
	src := `package store
func f() {
	_ = agentrunner.Approve()
	_ = agentrunner.Fail(agentrunner.DefaultDenialMessage)
	_ = agentrunner.ReasonExpired
}`
	got := builderUses(t, "made-up.go", src)
	want := []string{"agentrunner.Approve", "agentrunner.Fail", "agentrunner.DefaultDenialMessage"}
	if !slices.Equal(got, want) {
		t.Errorf("uses %q; want %q", got, want)
	}
}
