package main

import (
	"bytes"
	"encoding/json"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/slackapprove/slackbot/internal/testbin"
)

// TestTypeScriptPackageInstalls installs clients/typescript the way a user
// of it does, on a machine without its dev tools: from a copy of its files
// as the repository holds them (no node_modules, nothing built), npm pack
// makes a tarball, and a fresh project installs that tarball, and another
// the directory itself (npm links a directory dependency). npm runs
// offline with a cache of its own, so nothing is fetched: the package has
// no dependencies, its framework packages are optional peers. Each
// project then imports every entry point with node.
func TestTypeScriptPackageInstalls(t *testing.T) {
	t.Parallel()
	node := testbin.Find(t, "node")
	npm := testbin.Find(t, "npm")
	dir, err := filepath.Abs(filepath.Join("..", "..", "clients", "typescript"))
	if err != nil {
		t.Fatal(err)
	}
	pkg := filepath.Join(t.TempDir(), "typescript")
	copyPackage(t, dir, pkg)
	tmp := t.TempDir()
	cache := filepath.Join(tmp, "npm-cache")

	packed := runNPM(t, npm, pkg, cache, "pack", "--pack-destination", tmp)
	tarball := filepath.Join(tmp, lastLine(packed))
	if _, err := os.Stat(tarball); err != nil {
		t.Fatalf("npm pack named %q, which is not there: %v", lastLine(packed), err)
	}
	for name, spec := range map[string]string{"tarball": tarball, "directory": pkg} {
		t.Run(name, func(t *testing.T) {
			app := filepath.Join(t.TempDir(), "app")
			if err := os.MkdirAll(app, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(app, "package.json"), []byte(`{"name":"app","version":"1.0.0","private":true,"type":"module"}`), 0o644); err != nil {
				t.Fatal(err)
			}
			runNPM(t, npm, app, cache, "install", spec)
			out := runNode(t, app, nil, node, "--input-type=module", "-e", importEveryEntry)
			if !strings.Contains(out, "imported 4 entry points") {
				t.Errorf("the %s install does not import: %s", name, out)
			}
		})
	}
}

// importEveryEntry imports the package's entry points as a user's program
// does and checks a name each exports.
const importEveryEntry = `
const want = {
  "@slackbot/client": "SlackbotClient",
  "@slackbot/client/openai-agents": "runWithApprovals",
  "@slackbot/client/ai-sdk": "generateWithApprovals",
  "@slackbot/client/langgraph": "invokeWithApprovals",
};
for (const [entry, name] of Object.entries(want)) {
  const m = await import(entry);
  if (typeof m[name] !== "function") throw new Error(entry + " does not export " + name + ": " + Object.keys(m).join(", "));
}
console.log("imported " + Object.keys(want).length + " entry points");
`

// TestTypeScriptPackageManifest holds package.json to what users install:
// no dependencies, the framework packages optional peers with the ranges
// the tests run, no install-time build.
func TestTypeScriptPackageManifest(t *testing.T) {
	t.Parallel()
	raw, err := os.ReadFile(filepath.Join("..", "..", "clients", "typescript", "package.json"))
	if err != nil {
		t.Fatal(err)
	}
	var m struct {
		Dependencies         map[string]string            `json:"dependencies"`
		PeerDependencies     map[string]string            `json:"peerDependencies"`
		PeerDependenciesMeta map[string]map[string]bool   `json:"peerDependenciesMeta"`
		Scripts              map[string]string            `json:"scripts"`
		Exports              map[string]map[string]string `json:"exports"`
		Files                []string                     `json:"files"`
	}
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatalf("package.json: %v", err)
	}
	if len(m.Dependencies) != 0 {
		t.Errorf("dependencies %v: the package has none (fetch and WebCrypto only)", m.Dependencies)
	}
	for name, want := range map[string]string{"@openai/agents": ">=0.14.3 <0.21", "ai": "", "@langchain/langgraph": "", "@langchain/core": "", "langchain": ""} {
		got, ok := m.PeerDependencies[name]
		switch {
		case !ok:
			t.Errorf("peerDependencies lacks %s", name)
		case want != "" && got != want:
			t.Errorf("peerDependencies[%s] = %q, want %q", name, got, want)
		case !m.PeerDependenciesMeta[name]["optional"]:
			t.Errorf("peerDependenciesMeta[%s] is not optional: npm would install it into every user's project", name)
		}
	}
	for _, script := range []string{"preinstall", "install", "postinstall", "prepare"} {
		if s, ok := m.Scripts[script]; ok {
			t.Errorf("scripts.%s = %q: npm runs it when a user installs the package (from a directory, at least), where no dev tools are", script, s)
		}
	}
	for entry, conds := range m.Exports {
		for cond, path := range conds {
			if !strings.HasPrefix(path, "./lib/") {
				t.Errorf("exports[%s].%s = %s: the built files are in lib/", entry, cond, path)
			}
		}
	}
}

// copyPackage copies the package's files as the repository holds them:
// without node_modules and the tests' build (dist).
func copyPackage(t *testing.T, from, to string) {
	t.Helper()
	err := filepath.WalkDir(from, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(from, path)
		if d.IsDir() && (rel == "node_modules" || rel == "dist" || strings.HasSuffix(rel, string(filepath.Separator)+"node_modules")) {
			return filepath.SkipDir
		}
		if d.Type()&fs.ModeSymlink != 0 {
			return nil
		}
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(to, rel), 0o755)
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(to, rel), data, 0o644)
	})
	if err != nil {
		t.Fatalf("copying %s: %v", from, err)
	}
}

// runNPM runs npm offline, with its own cache and no user configuration,
// in dir; it fails t unless npm succeeds, and returns its standard output.
func runNPM(t *testing.T, npm, dir, cache string, args ...string) string {
	t.Helper()
	args = append(args, "--offline", "--no-audit", "--no-fund", "--cache", cache, "--userconfig", filepath.Join(cache, "npmrc"))
	cmd := exec.CommandContext(t.Context(), npm, args...)
	cmd.Dir = dir
	// Only node on PATH: no tsc nor any other dev tool, as on a user's machine.
	cmd.Env = append(os.Environ(), "PATH="+filepath.Dir(npm)+string(os.PathListSeparator)+"/usr/bin:/bin", "npm_config_update_notifier=false")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.WaitDelay = 5 * time.Second
	err := cmd.Run()
	t.Logf("npm %s (in %s):\n%s%s", strings.Join(args, " "), dir, stdout.String(), stderr.String())
	if err != nil {
		t.Fatalf("npm %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return stdout.String()
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.TrimSpace(lines[len(lines)-1])
}

// checkLibBuilt fails t unless clients/typescript/lib, the built package
// that users install (it is in the repository, so installing needs no
// dev tools), is what tsc makes of src now: it builds src into a
// temporary directory with the package's build config and compares
// every file.
func checkLibBuilt(t *testing.T, node, dir string) {
	t.Helper()
	out := t.TempDir()
	runNode(t, dir, nil, node, filepath.Join("node_modules", "typescript", "bin", "tsc"), "-p", "tsconfig.build.json", "--outDir", out)
	want := readTree(t, out)
	got := readTree(t, filepath.Join(dir, "lib"))
	var stale []string
	for name, data := range want {
		if g, ok := got[name]; !ok {
			stale = append(stale, name+" (missing)")
		} else if !bytes.Equal(g, data) {
			stale = append(stale, name+" (differs)")
		}
	}
	for name := range got {
		if _, ok := want[name]; !ok {
			stale = append(stale, name+" (no source)")
		}
	}
	if len(stale) > 0 {
		sort.Strings(stale)
		t.Errorf("clients/typescript/lib is not src built: %s; run `npm run build` in clients/typescript and commit lib/", strings.Join(stale, ", "))
	}
}

// readTree returns every file under root by its slash-separated path.
func readTree(t *testing.T, root string) map[string][]byte {
	t.Helper()
	files := map[string][]byte{}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		files[filepath.ToSlash(rel)] = data
		return nil
	})
	if err != nil && !os.IsNotExist(err) {
		t.Fatalf("reading %s: %v", root, err)
	}
	return files
}
