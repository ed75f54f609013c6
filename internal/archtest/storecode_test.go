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

// What store's production code may not name: store reads and writes
// records, and approval decides what they hold and what is handed out
// (docs/ARCHITECTURE.md, "Packages" and "The data model").
var (
	// signing signs receipts or hands results out: only approval does,
	// when results are handed out (approval.Request.Results), and a call
	// of a method named Results is such a hand-out.
	signing        = []string{"approval.Signer", "approval.AddReceipts", "receipt.Signer", "receipt.NewSigner"}
	signingMethods = []string{"Results"}
	// resultBuilders build the results a call resumes with, and their
	// default wording: only approval uses them (approval/recorded.go,
	// Decision.Recorded); store records the strings it is given.
	resultBuilders = []string{
		"agentrunner.Approve", "agentrunner.ApproveWith", "agentrunner.Deny", "agentrunner.Fail", "agentrunner.RetryWith",
		"agentrunner.NoDecision", "agentrunner.DefaultDenialMessage",
	}
)

// uses returns what src, a Go file, names of qualified (package.Name),
// and its calls of a method named in methods, in the order they appear.
func uses(t *testing.T, name, src string, qualified, methods []string) []string {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), name, src, parser.SkipObjectResolution)
	if err != nil {
		t.Fatalf("parse %s: %v", name, err)
	}
	var got []string
	ast.Inspect(f, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.SelectorExpr:
			if id, ok := n.X.(*ast.Ident); ok && slices.Contains(qualified, id.Name+"."+n.Sel.Name) {
				got = append(got, id.Name+"."+n.Sel.Name)
			}
		case *ast.CallExpr:
			if sel, ok := n.Fun.(*ast.SelectorExpr); ok && slices.Contains(methods, sel.Sel.Name) {
				got = append(got, sel.Sel.Name)
			}
		}
		return true
	})
	return got
}

// checkStore reports each of store's production files that names one of
// qualified or calls one of methods.
func checkStore(t *testing.T, qualified, methods []string, why string) {
	t.Helper()
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
		if got := uses(t, f, string(src), qualified, methods); len(got) > 0 {
			t.Errorf("%s uses %v: %s", f, got, why)
		}
	}
}

// TestStoreSignsNothing: store neither signs receipts nor hands results
// out, so a read of a resolved record costs no signature and every door
// gets its receipts from one place.
func TestStoreSignsNothing(t *testing.T) {
	checkStore(t, signing, signingMethods, "receipts are signed when results are handed out, in approval (Request.Results)")
}

// TestStoreBuildsNoResults: store keeps what approval decided a decision
// records; it does not choose a call's results or their words.
func TestStoreBuildsNoResults(t *testing.T) {
	checkStore(t, resultBuilders, nil, "what a decision records is decided in approval (Decision.Recorded)")
}

// TestSigningUses checks the signing check on made-up code.
func TestSigningUses(t *testing.T) {
	src := `package store
func f(a *approval.Request, s approval.Signer) {
	approval.AddReceipts(a, nil, s)
	_ = a.Results(s)
	_ = receipt.Canonical(nil)
}`
	got := uses(t, "made-up.go", src, signing, signingMethods)
	want := []string{"approval.Signer", "approval.AddReceipts", "Results"}
	if !slices.Equal(got, want) {
		t.Errorf("uses %q; want %q", got, want)
	}
}

// TestBuilderUses checks the result-builder check on made-up code.
func TestBuilderUses(t *testing.T) {
	src := `package store
func f() {
	_ = agentrunner.Approve()
	_ = agentrunner.Fail(agentrunner.DefaultDenialMessage)
	_ = agentrunner.ReasonExpired
}`
	got := uses(t, "made-up.go", src, resultBuilders, nil)
	want := []string{"agentrunner.Approve", "agentrunner.Fail", "agentrunner.DefaultDenialMessage"}
	if !slices.Equal(got, want) {
		t.Errorf("uses %q; want %q", got, want)
	}
}
