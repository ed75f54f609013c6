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

// signing names what signs receipts or hands results out: only package
// approval does, when results are handed out (approval.Request.Results);
// docs/ARCHITECTURE.md, "The data model".
var signing = []string{"approval.Signer", "approval.AddReceipts", "receipt.Signer", "receipt.NewSigner", "Results"}

// signingUses returns what src, a Go file, uses of signing: qualified
// names, and calls of a method named Results (a hand-out).
func signingUses(t *testing.T, name, src string) []string {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), name, src, parser.SkipObjectResolution)
	if err != nil {
		t.Fatalf("parse %s: %v", name, err)
	}
	var got []string
	ast.Inspect(f, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.SelectorExpr:
			if id, ok := n.X.(*ast.Ident); ok && slices.Contains(signing, id.Name+"."+n.Sel.Name) {
				got = append(got, id.Name+"."+n.Sel.Name)
			}
		case *ast.CallExpr:
			if sel, ok := n.Fun.(*ast.SelectorExpr); ok && sel.Sel.Name == "Results" {
				got = append(got, "Results")
			}
		}
		return true
	})
	return got
}

// TestStoreSignsNothing: store reads and writes records; it neither
// signs receipts nor hands results out, so a read of a resolved record
// costs no signature and every door gets its receipts from one place.
func TestStoreSignsNothing(t *testing.T) {
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
		if got := signingUses(t, f, string(src)); len(got) > 0 {
			t.Errorf("%s uses %v: receipts are signed when results are handed out, in approval (Request.Results)", f, got)
		}
	}
}

// TestSigningUses checks the check on made-up code.
func TestSigningUses(t *testing.T) {
	src := `package store
func f(a *approval.Request, s approval.Signer) {
	approval.AddReceipts(a, nil, s)
	_ = a.Results(s)
	_ = receipt.Canonical(nil)
}`
	got := signingUses(t, "made-up.go", src)
	want := []string{"approval.Signer", "approval.AddReceipts", "Results"}
	if !slices.Equal(got, want) {
		t.Errorf("uses %q; want %q", got, want)
	}
}
