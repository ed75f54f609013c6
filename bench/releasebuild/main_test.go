package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestSymbolPackage(t *testing.T) {
	for in, want := range map[string]string{
		"github.com/redis/go-redis/v9.cmdable.FTCreate":                    "github.com/redis/go-redis/v9",
		"github.com/slackapprove/slackbot/bot.(*Cards).Post":               "github.com/slackapprove/slackbot/bot",
		"type:*net/http.Request":                                           "net/http",
		"go:itab.*os.File,io.Writer":                                       "os",
		"slices.SortFunc[go.shape.[]string,go.shape.string]":               "slices",
		"cel.dev/cel-go/common/types.(*NativeType).makeFieldGetter":        "cel.dev/cel-go/common/types",
		"vendor/golang.org/x/crypto/chacha20poly1305.chacha20Poly1305Seal": "vendor/golang.org/x/crypto/chacha20poly1305",
		"go:func.*":           "(funcdata: stack maps, inlining tables)",
		"type:map[string]int": "(types)",
		"runtime.findfunctab": "runtime",
		"go:buildinfo":        "(linker)",
	} {
		if got := symbolPackage(in); got != want {
			t.Errorf("symbolPackage(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestModuleOf(t *testing.T) {
	mods := []string{"github.com/openai/openai-go/v3", "github.com/slackapprove/slackbot"}
	for in, want := range map[string]string{
		"github.com/openai/openai-go/v3/packages/param": "github.com/openai/openai-go/v3",
		"github.com/slackapprove/slackbot":              "github.com/slackapprove/slackbot",
		"net/http":                                      "std",
		"vendor/golang.org/x/net/idna":                  "std",
		"(types)":                                       "(types)",
	} {
		if got := moduleOf(in, mods); got != want {
			t.Errorf("moduleOf(%q) = %q, want %q", in, got, want)
		}
	}
}

// The release build is the Dockerfile's: its flags, CGO_ENABLED=0, and no
// target platform of the image's build arguments.
func TestDockerBuild(t *testing.T) {
	b, err := dockerBuild("../../deploy/Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(b.env, []string{"CGO_ENABLED=0"}) {
		t.Errorf("env %q, want [CGO_ENABLED=0]", b.env)
	}
	for _, want := range []string{"-trimpath", "-s -w -X main.version=bench"} {
		if !slices.ContainsFunc(b.flags, func(f string) bool { return strings.Contains(f, want) }) {
			t.Errorf("flags %q lack %q", b.flags, want)
		}
	}
	if slices.Contains(b.flags, "-o") {
		t.Errorf("flags %q keep -o", b.flags)
	}
}

// The breakdown of a real unstripped binary names its packages and
// modules. (A test binary is linked stripped, so a small one is built.)
func TestPrintSymbols(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join(dir, "hello.go")
	if err := os.WriteFile(src, []byte("package main\n\nimport \"net/http\"\n\nfunc main() { _ = http.ListenAndServe(\"127.0.0.1:0\", nil) }\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	exe := filepath.Join(dir, "hello")
	if out, err := exec.Command("go", "build", "-o", exe, src).CombinedOutput(); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	var out strings.Builder
	if err := printSymbols(&out, exe, 50); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"| std |", "| runtime |", "| net/http |"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
}
