package archtest

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"testing"
)

// coreBuilders are the constructors of the system's core: the tests of a
// door build it with internal/systest (docs/ARCHITECTURE.md, "Tests"), so
// that their core is wired as the program's is and does not drift from it.
var coreBuilders = map[string][]string{
	module + "/approval": {"New"},
	module + "/store":    {"New", "NewTokens", "NewServiceTokens"},
}

// doorTests are the directories of the doors whose tests use systest.
var doorTests = []string{"httpapi", "mcpgateway"}

// The doors' tests build no core of their own.
func TestDoorTestsBuildTheCoreWithSystest(t *testing.T) {
	fset := token.NewFileSet()
	for _, dir := range doorTests {
		files, err := filepath.Glob(filepath.Join("..", "..", dir, "*_test.go"))
		if err != nil || len(files) == 0 {
			t.Fatalf("no tests in %s: %v", dir, err)
		}
		for _, name := range files {
			f, err := parser.ParseFile(fset, name, nil, parser.SkipObjectResolution)
			if err != nil {
				t.Fatal(err)
			}
			for _, call := range handBuilt(f) {
				t.Errorf("%s: %s: build the core with internal/systest", fset.Position(call.Pos()), render(call))
			}
		}
	}
}

// The rule itself, on made-up tests.
func TestHandBuiltRule(t *testing.T) {
	for _, tt := range []struct {
		src  string
		want int
	}{
		{`package p; import "` + module + `/store"; func f() { store.New(nil, store.Options{}) }`, 1},
		{`package p; import st "` + module + `/store"; func f() { st.NewTokens(nil, st.TokensOptions{}) }`, 1},
		{`package p; import "` + module + `/approval"; func f() { approval.New(approval.Config{}) }`, 1},
		{`package p; import "` + module + `/store"; func f(s *store.Store) { s.JobQueue(0) }`, 0},
		{`package p; import "` + module + `/internal/systest"; func f() { systest.New(nil, systest.Options{}) }`, 0},
	} {
		f, err := parser.ParseFile(token.NewFileSet(), "x_test.go", tt.src, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		if got := len(handBuilt(f)); got != tt.want {
			t.Errorf("%s: %d hand-built, want %d", tt.src, got, tt.want)
		}
	}
}

// handBuilt returns the calls of a core constructor in f.
func handBuilt(f *ast.File) []*ast.SelectorExpr {
	names := map[string]string{} // local name -> import path
	for _, imp := range f.Imports {
		path, _ := strconv.Unquote(imp.Path.Value)
		name := filepath.Base(path)
		if imp.Name != nil {
			name = imp.Name.Name
		}
		names[name] = path
	}
	var found []*ast.SelectorExpr
	ast.Inspect(f, func(n ast.Node) bool {
		call, ok := n.(*ast.CallExpr)
		if !ok {
			return true
		}
		sel, ok := call.Fun.(*ast.SelectorExpr)
		if !ok {
			return true
		}
		pkg, ok := sel.X.(*ast.Ident)
		if !ok {
			return true
		}
		for _, ctor := range coreBuilders[names[pkg.Name]] {
			if sel.Sel.Name == ctor {
				found = append(found, sel)
			}
		}
		return true
	})
	return found
}

func render(sel *ast.SelectorExpr) string {
	return sel.X.(*ast.Ident).Name + "." + sel.Sel.Name
}
