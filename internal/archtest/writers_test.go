package archtest

import (
	"encoding/json"
	"errors"
	"fmt"
	"go/ast"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// requestWriters are the methods that write a request record, on
// *store.Store and on the approval.Store port it implements: only package
// approval calls them (docs/ARCHITECTURE.md, "Ways in"), so that every
// change of a request does what follows it (audit, metrics, cards,
// resume) in one place.
var requestWriters = []string{"Create", "Decide", "Answer", "Fail", "Cancel", "Sweep", "SetMessage", "SetOutcome", "ReportOutcome"}

// writerHomes are the packages whose request-writing methods those are.
var writerHomes = []string{module + "/store", module + "/approval"}

type listedPkg struct {
	ImportPath string
	Dir        string
	GoFiles    []string
	Export     string
	DepOnly    bool
}

// typedPackages lists the module's packages and everything they depend
// on with the go tool, with the export data of each (compiled if need be),
// so that the module's production code can be type-checked against it.
func typedPackages(t *testing.T) map[string]listedPkg {
	t.Helper()
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skipf("no go tool to list packages: %v", err)
	}
	out, err := exec.Command(goTool, "list", "-deps", "-export", "-json=ImportPath,Dir,GoFiles,Export,DepOnly", module+"/...").Output()
	if err != nil {
		t.Fatalf("go list -export: %v", err)
	}
	pkgs := map[string]listedPkg{}
	dec := json.NewDecoder(strings.NewReader(string(out)))
	for {
		var p listedPkg
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("decode go list output: %v", err)
		}
		pkgs[p.ImportPath] = p
	}
	return pkgs
}

// exportImporter imports packages from the export data go list named.
func exportImporter(fset *token.FileSet, pkgs map[string]listedPkg) types.Importer {
	return importer.ForCompiler(fset, "gc", func(path string) (io.ReadCloser, error) {
		p, ok := pkgs[path]
		if !ok || p.Export == "" {
			return nil, fmt.Errorf("no export data for %s", path)
		}
		return os.Open(p.Export)
	})
}

// writes type-checks files as package path and returns, for every call of
// a request-writing method of *store.Store or approval.Store, where it is
// and what it calls.
func writes(fset *token.FileSet, imp types.Importer, path string, files []*ast.File) ([]string, error) {
	info := &types.Info{Selections: map[*ast.SelectorExpr]*types.Selection{}}
	conf := types.Config{Importer: imp}
	if _, err := conf.Check(path, fset, files, info); err != nil {
		return nil, fmt.Errorf("type-check %s: %w", path, err)
	}
	var out []string
	for sel, s := range info.Selections {
		fn, ok := s.Obj().(*types.Func)
		if !ok || !slices.Contains(requestWriters, fn.Name()) {
			continue
		}
		recv := fn.Type().(*types.Signature).Recv()
		if recv == nil {
			continue
		}
		typ := recv.Type()
		if p, ok := typ.(*types.Pointer); ok {
			typ = p.Elem()
		}
		named, ok := typ.(*types.Named)
		if !ok || named.Obj().Name() != "Store" || named.Obj().Pkg() == nil || !slices.Contains(writerHomes, named.Obj().Pkg().Path()) {
			continue
		}
		pos := fset.Position(sel.Sel.Pos())
		out = append(out, fmt.Sprintf("%s:%d: %s.%s.%s", filepath.Base(pos.Filename), pos.Line,
			strings.TrimPrefix(named.Obj().Pkg().Path(), module+"/"), named.Obj().Name(), fn.Name()))
	}
	slices.Sort(out)
	return out, nil
}

// writerExceptions are the non-test packages, besides approval, allowed
// to write requests, each with why; unused ones fail the test.
var writerExceptions = map[string]string{
	// A measurement, not the product: it seeds the pending requests it
	// clicks on, in the same Redis records for the full click path and for
	// the minimal path (no Service) it compares that path against.
	"bench/clickbench": "seeds the requests it clicks on",
}

// TestOnlyApprovalWritesRequests: no production package but approval
// calls a request-writing method of the store (store's own code neither:
// its token side only waits).
func TestOnlyApprovalWritesRequests(t *testing.T) {
	pkgs := typedPackages(t)
	excused := map[string]bool{}
	fset := token.NewFileSet()
	imp := exportImporter(fset, pkgs)
	checked := 0
	for path, p := range pkgs {
		if p.DepOnly || !strings.HasPrefix(path, module) || path == module+"/approval" || len(p.GoFiles) == 0 {
			continue
		}
		var files []*ast.File
		for _, name := range p.GoFiles {
			f, err := parser.ParseFile(fset, filepath.Join(p.Dir, name), nil, 0)
			if err != nil {
				t.Fatal(err)
			}
			files = append(files, f)
		}
		calls, err := writes(fset, imp, path, files)
		if err != nil {
			t.Fatal(err)
		}
		checked++
		rel := strings.TrimPrefix(path, module+"/")
		if _, ok := writerExceptions[rel]; ok {
			excused[rel] = len(calls) > 0
			continue
		}
		for _, c := range calls {
			t.Errorf("%s: %s: only package approval writes requests (call approval.Service instead)", rel, c)
		}
	}
	for rel, why := range writerExceptions {
		if !excused[rel] {
			t.Errorf("%s writes no request any more: remove it from writerExceptions (%s)", rel, why)
		}
	}
	if checked < 10 {
		t.Fatalf("checked %d packages; the listing found too few", checked)
	}
}

// TestWriterRule checks the rule itself on made-up code: the writes of
// *store.Store and of the approval.Store port are found, directly, through
// an interface value and through a struct that embeds the port; reads and
// the Service's own methods are not.
func TestWriterRule(t *testing.T) {
	pkgs := typedPackages(t)
	fset := token.NewFileSet()
	src := `package door

import (
	"context"

	"github.com/slackapprove/slackbot/approval"
	"github.com/slackapprove/slackbot/store"
)

type wrapped struct{ approval.Store }

func door(ctx context.Context, s *store.Store, p approval.Store, w wrapped, svc *approval.Service) {
	_, _ = s.Decide(ctx, "", approval.Decision{})
	_, _ = p.Fail(ctx, "", "", "")
	_, _ = s.Sweep(ctx)
	_ = w.Create(ctx, nil)
	_, _ = s.Get(ctx, "")
	_, _ = p.Get(ctx, "")
	_, _ = svc.Cancel(ctx, "", approval.Decider{})
	_, _ = svc.Fail(ctx, "", "")
}
`
	f, err := parser.ParseFile(fset, "door.go", src, 0)
	if err != nil {
		t.Fatal(err)
	}
	got, err := writes(fset, exportImporter(fset, pkgs), "example.com/door", []*ast.File{f})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"door.go:13: store.Store.Decide", "door.go:14: approval.Store.Fail", "door.go:15: store.Store.Sweep", "door.go:16: approval.Store.Create"}
	if !slices.Equal(got, want) {
		t.Errorf("violations %q; want %q", got, want)
	}
}
