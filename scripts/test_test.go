// Package scripts_test tests scripts/test, the README's test command, in a
// sandbox: a copy of the script in a tree of its own, a PATH on which the
// programs it needs are missing, and fake apt-get, dpkg, brew, sudo, id and
// go that record how they were called. The fake installers "install" the
// real redis-server and python3 (and stand-ins for chromium, node and npm)
// into a directory that is not on PATH, as a package manager whose bin
// directory the caller's PATH lacks would, so the script must find them
// where the package put them.
package scripts_test

import (
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/slackapprove/slackbot/internal/testbin"
)

// sandbox is one run's world.
type sandbox struct {
	root  string // the copied tree: scripts/test, go.mod, maybe clients/typescript
	fakes string // fake programs, first on PATH
	bin   string // where the fake installers put programs; not on PATH
	log   string // every fake program appends a line here
	tmp   string // the script's TMPDIR
	env   []string
}

// hidden are the names left out of the sandbox's PATH.
var hidden = []string{
	"redis-server", "chromium", "chromium-browser", "google-chrome", "python3", "node", "nodejs", "npm",
	"apt-get", "apt-cache", "dpkg", "brew", "sudo", "id", "go",
}

// newSandbox makes a sandbox whose fakes are all there but those in
// without: taking apt-get away makes a machine without apt-get.
func newSandbox(t *testing.T, without ...string) *sandbox {
	t.Helper()
	d := t.TempDir()
	s := &sandbox{
		root: filepath.Join(d, "repo"), fakes: filepath.Join(d, "fakes"), bin: filepath.Join(d, "installed", "bin"),
		log: filepath.Join(d, "log"), tmp: filepath.Join(d, "tmp"),
	}
	system := filepath.Join(d, "system")
	for _, dir := range []string{filepath.Join(s.root, "scripts"), s.fakes, s.bin, s.tmp, system} {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	script, err := os.ReadFile("test")
	if err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(s.root, "scripts", "test"), string(script), 0o755)
	write(t, filepath.Join(s.root, "go.mod"), "module example.com/sandbox\n\ngo 1.26.0\n", 0o644)
	linkSystem(t, system)
	s.fakePrograms(t)
	for _, f := range without {
		if err := os.Remove(filepath.Join(s.fakes, f)); err != nil {
			t.Fatal(err)
		}
	}
	s.env = []string{
		"PATH=" + s.fakes + ":" + system,
		"HOME=" + d,
		"TMPDIR=" + s.tmp,
		"FAKE_LOG=" + s.log,
		"FAKE_BIN=" + s.bin,
		"FAKE_UID=0",
		"FAKE_GO_RC=0",
		"REAL_REDIS=" + testbin.Find(t, "redis-server"),
		"REAL_PYTHON3=" + testbin.Find(t, "python3"),
	}
	return s
}

// linkSystem fills dir with links to every program in the usual bin
// directories except the hidden ones: the script's PATH, as on a machine
// where they are not installed.
func linkSystem(t *testing.T, dir string) {
	t.Helper()
	for _, bin := range []string{"/usr/local/bin", "/usr/bin", "/bin", "/usr/sbin", "/sbin"} {
		entries, _ := os.ReadDir(bin)
		for _, e := range entries {
			name := e.Name()
			if slices.Contains(hidden, name) {
				continue
			}
			// The first directory to have a name wins, as on PATH.
			if err := os.Symlink(filepath.Join(bin, name), filepath.Join(dir, name)); err != nil && !os.IsExist(err) {
				t.Fatal(err)
			}
		}
	}
}

// python returns the path of a python3 under another name, for a PYTHON3
// that is not on PATH. A wrapper, not a link: pyenv's shims go by their name.
func (s *sandbox) python(t *testing.T) string {
	t.Helper()
	path := filepath.Join(s.bin, "my-python")
	write(t, path, "#!/bin/sh\nexec '"+testbin.Find(t, "python3")+"' \"$@\"\n", 0o755)
	return path
}

func write(t *testing.T, path, content string, mode os.FileMode) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), mode); err != nil {
		t.Fatal(err)
	}
}

// fakePrograms writes the fakes. A fake installer "installs" program P by
// linking it into FAKE_BIN; dpkg -L lists where each package put it.
func (s *sandbox) fakePrograms(t *testing.T) {
	t.Helper()
	const head = "#!/usr/bin/env bash\nset -eu\n"
	fake := func(name, body string) { write(t, filepath.Join(s.fakes, name), head+body, 0o755) }
	// bin PACKAGE: the program a package installs.
	const pkgBin = `bin() { case $1 in redis|redis-server) echo redis-server;; python|python3) echo python3;; chromium|chromium-browser) echo chromium;; nodejs|node) echo node;; npm) echo npm;; *) echo "unknown package $1" >&2; exit 2;; esac; }
put() {
  case $1 in
    redis-server) ln -sf "$REAL_REDIS" "$FAKE_BIN/redis-server" ;;
    python3) ln -sf "$REAL_PYTHON3" "$FAKE_BIN/python3" ;;
    npm) printf '#!/usr/bin/env bash\necho "npm $* in $(basename "$PWD") node=$(command -v node)" >>"$FAKE_LOG"\nexit "${FAKE_NPM_RC:-0}"\n' >"$FAKE_BIN/npm"; chmod +x "$FAKE_BIN/npm" ;;
    *) printf '#!/bin/sh\nexit 0\n' >"$FAKE_BIN/$1"; chmod +x "$FAKE_BIN/$1" ;;
  esac
}
`
	fake("apt-get", pkgBin+`echo "apt-get $* DEBIAN_FRONTEND=${DEBIAN_FRONTEND:-} uid=$FAKE_UID" >>"$FAKE_LOG"
if [[ " $* " == *" install "* ]]; then
  for a in "$@"; do case $a in -*|install|DPkg::*) ;; *) put "$(bin "$a")" ;; esac; done
fi
`)
	fake("apt-cache", `[[ $1 == show && ${FAKE_UBUNTU:-} == "" ]]`+"\n")
	fake("dpkg", pkgBin+`[[ $1 == -L ]]; echo /usr/share/doc/$2; echo "$FAKE_BIN/$(bin "$2")"`+"\n")
	fake("brew", pkgBin+`if [[ $1 == --prefix ]]; then dirname "$FAKE_BIN"; exit 0; fi
echo "brew $*" >>"$FAKE_LOG"
for a in "$@"; do case $a in -*|install) ;; *) put "$(bin "$a")" ;; esac; done
`)
	fake("sudo", `echo "sudo $1" >>"$FAKE_LOG"; FAKE_UID=0 exec "$@"`+"\n")
	fake("id", `[[ $1 == -u ]]; echo "$FAKE_UID"`+"\n")
	// go records its arguments and what the tests would see, and checks
	// the Redis it was given answers.
	fake("go", `port=${REDIS_URL#redis://127.0.0.1:}; port=${port%/0}
pong=$(exec 3<>"/dev/tcp/127.0.0.1/$port"; printf 'PING\r\n' >&3; IFS= read -r -t 2 r <&3; echo "${r%$'\r'}")
echo "go $* | in=$(basename "$PWD") REDIS_SERVER=$REDIS_SERVER CHROMIUM=$CHROMIUM PYTHON3=$PYTHON3 SLACKBOT_TEST_REQUIRE=$SLACKBOT_TEST_REQUIRE ping=$pong" >>"$FAKE_LOG"
echo "$port" >"$FAKE_LOG.port"
exit "$FAKE_GO_RC"
`)
}

// result is what one run of the script did.
type result struct {
	code   int
	stderr string
	calls  []string // the fakes' log lines
}

// run runs the script in the sandbox's tree, as ./scripts/test args...
func (s *sandbox) run(t *testing.T, env []string, args ...string) result {
	t.Helper()
	return s.runIn(t, s.root, env, args...)
}

// runIn runs the script from dir.
func (s *sandbox) runIn(t *testing.T, dir string, env []string, args ...string) result {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), filepath.Join(s.root, "scripts", "test"), args...)
	cmd.Dir = dir
	cmd.Env = append(slices.Clone(s.env), env...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	cmd.WaitDelay = 5 * time.Second
	err := cmd.Run()
	r := result{stderr: stderr.String()}
	if err != nil {
		ee, ok := err.(*exec.ExitError)
		if !ok {
			t.Fatalf("run scripts/test: %v", err)
		}
		r.code = ee.ExitCode()
	}
	if b, err := os.ReadFile(s.log); err == nil {
		r.calls = strings.Split(strings.TrimSpace(string(b)), "\n")
	}
	// Whatever happened, the script stopped its Redis and removed its files.
	if b, err := os.ReadFile(s.log + ".port"); err == nil {
		addr := net.JoinHostPort("127.0.0.1", strings.TrimSpace(string(b)))
		if c, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
			c.Close()
			t.Errorf("redis-server on %s still runs after the script ended", addr)
		}
	}
	if left, _ := os.ReadDir(s.tmp); len(left) > 0 {
		t.Errorf("the script left %v in its TMPDIR", left)
	}
	return r
}

func (s *sandbox) goCall(redis, chromium, python3, require string, args ...string) string {
	return "go " + strings.Join(args, " ") + " | in=repo REDIS_SERVER=" + redis + " CHROMIUM=" + chromium +
		" PYTHON3=" + python3 + " SLACKBOT_TEST_REQUIRE=" + require + " ping=+PONG"
}

// On a machine without the programs, the script installs them — apt-get
// update once, then one install of every missing package (through sudo when
// not root; Ubuntu's chromium is chromium-browser), or brew's formulae then
// the chromium cask — finds them where the packages put them, and runs go
// test with those paths and the arguments passed through, keeping its exit
// code. With clients/typescript/package.json or
// mcpgateway/testdata/tsclient/package.json, node and npm are needed too,
// and npm ci installs each one's lockfile, in that order, before go test
// (whose TestTypeScriptClients and TestTSClient run them); a failure fails
// the script with npm's code, and nothing after it runs.
func TestInstalls(t *testing.T) {
	t.Parallel()
	const (
		update  = "apt-get -o DPkg::Lock::Timeout=300 update -qq DEBIAN_FRONTEND=noninteractive uid=0"
		install = "apt-get -o DPkg::Lock::Timeout=300 install -y -qq "
		asRoot  = " DEBIAN_FRONTEND=noninteractive uid=0"
		require = "redis-server,chromium,python3"
		race    = "test -race -count=1 -timeout 25m "
	)
	for _, tc := range []struct {
		name       string
		env        []string
		remove     []string // fakes taken away
		typescript bool     // clients/typescript/package.json exists
		tsclient   bool     // mcpgateway/testdata/tsclient/package.json exists
		args       []string
		wantCode   int
		wantCalls  []string // "go " + ... is the go test call, completed by goCall
	}{
		{
			name: "apt-get as root", env: []string{"FAKE_GO_RC=3"}, args: []string{"./store/", "-run", "Decide"}, wantCode: 3,
			wantCalls: []string{update, install + "redis-server chromium python3" + asRoot, "go " + race + "./store/ -run Decide"},
		},
		{
			name: "apt-get through sudo on Ubuntu", env: []string{"FAKE_UID=1000", "FAKE_UBUNTU=1"},
			wantCalls: []string{"sudo env", update, "sudo env", install + "redis-server chromium-browser python3" + asRoot, "go " + race + "./..."},
		},
		{
			name: "brew", remove: []string{"apt-get", "apt-cache", "dpkg"}, args: []string{"-run", "Decide"},
			wantCalls: []string{"brew install redis python", "brew install --cask chromium", "go " + race + "./... -run Decide"},
		},
		{
			name: "the TypeScript hook", typescript: true,
			wantCalls: []string{
				update, install + "redis-server chromium python3 nodejs npm" + asRoot,
				"npm ci --no-audit --no-fund in typescript node=$BIN/node",
				"go " + race + "./... | " + require + ",node,npm",
			},
		},
		{
			name: "the TypeScript hook, npm ci failing", env: []string{"FAKE_NPM_RC=4"}, typescript: true, wantCode: 4,
			wantCalls: []string{
				update, install + "redis-server chromium python3 nodejs npm" + asRoot,
				"npm ci --no-audit --no-fund in typescript node=$BIN/node",
			},
		},
		{
			name: "the MCP gateway's TypeScript client hook", tsclient: true,
			wantCalls: []string{
				update, install + "redis-server chromium python3 nodejs npm" + asRoot,
				"npm ci --no-audit --no-fund in tsclient node=$BIN/node",
				"go " + race + "./... | " + require + ",node,npm",
			},
		},
		{
			name: "both node projects", typescript: true, tsclient: true,
			wantCalls: []string{
				update, install + "redis-server chromium python3 nodejs npm" + asRoot,
				"npm ci --no-audit --no-fund in typescript node=$BIN/node",
				"npm ci --no-audit --no-fund in tsclient node=$BIN/node",
				"go " + race + "./... | " + require + ",node,npm",
			},
		},
		{
			name: "both node projects, npm ci failing: the first stops it", env: []string{"FAKE_NPM_RC=5"}, typescript: true, tsclient: true, wantCode: 5,
			wantCalls: []string{
				update, install + "redis-server chromium python3 nodejs npm" + asRoot,
				"npm ci --no-audit --no-fund in typescript node=$BIN/node",
			},
		},
		{
			name: "the TypeScript hook with a package named: no npm ci", typescript: true, tsclient: true, args: []string{"./store/"},
			wantCalls: []string{
				update, install + "redis-server chromium python3 nodejs npm" + asRoot,
				"go " + race + "./store/ | " + require + ",node,npm",
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := newSandbox(t, tc.remove...)
			for dir, ok := range map[string]bool{"clients/typescript": tc.typescript, "mcpgateway/testdata/tsclient": tc.tsclient} {
				if !ok {
					continue
				}
				ts := filepath.Join(s.root, filepath.FromSlash(dir))
				if err := os.MkdirAll(ts, 0o755); err != nil {
					t.Fatal(err)
				}
				write(t, filepath.Join(ts, "package.json"), "{}\n", 0o644)
			}
			r := s.run(t, tc.env, tc.args...)
			if r.code != tc.wantCode {
				t.Errorf("exit code %d, want %d; stderr:\n%s", r.code, tc.wantCode, r.stderr)
			}
			in := func(p string) string { return filepath.Join(s.bin, p) }
			var want []string
			for _, c := range tc.wantCalls {
				if args, ok := strings.CutPrefix(c, "go "); ok {
					args, req, ok := strings.Cut(args, " | ")
					if !ok {
						req = require
					}
					c = s.goCall(in("redis-server"), in("chromium"), in("python3"), req, strings.Fields(args)...)
				}
				want = append(want, strings.ReplaceAll(c, "$BIN", s.bin))
			}
			if diff := cmp.Diff(want, r.calls); diff != "" {
				t.Errorf("calls (-want +got):\n%s\nstderr:\n%s", diff, r.stderr)
			}
		})
	}
}

// What is already there is used as it is: nothing is installed, and a
// program's variable wins over PATH.
func TestNothingMissingInstallsNothing(t *testing.T) {
	t.Parallel()
	s := newSandbox(t)
	onPath := filepath.Join(s.fakes, "chromium-browser")
	write(t, onPath, "#!/bin/sh\n", 0o755)
	python := s.python(t)
	redis := testbin.Find(t, "redis-server")
	r := s.run(t, []string{"REDIS_SERVER=" + redis, "PYTHON3=" + python, "NO_INSTALL=1"}, "example.com/sandbox/store")
	if r.code != 0 {
		t.Fatalf("exit code %d; stderr:\n%s", r.code, r.stderr)
	}
	want := []string{s.goCall(redis, onPath, python, "redis-server,chromium,python3",
		"test", "-race", "-count=1", "-timeout", "25m", "example.com/sandbox/store")}
	if diff := cmp.Diff(want, r.calls); diff != "" {
		t.Errorf("calls (-want +got):\n%s\nstderr:\n%s", diff, r.stderr)
	}
}

// Nothing is skipped silently: when the programs cannot be installed, the
// script fails naming every missing one, and runs no test.
func TestMissingCannotInstall(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		env    []string
		remove []string
		want   []string
	}{
		{
			name: "NO_INSTALL=1",
			env:  []string{"NO_INSTALL=1"},
			want: []string{"missing: redis-server chromium python3", "NO_INSTALL=1", "apt-get install redis-server chromium python3", "set REDIS_SERVER CHROMIUM PYTHON3 to their paths"},
		},
		{
			name:   "neither apt-get nor brew",
			remove: []string{"apt-get", "brew"},
			want:   []string{"missing: redis-server chromium python3", "neither apt-get nor brew", "apt-get install redis-server chromium python3", "brew install --cask chromium"},
		},
		{
			name:   "not root and no sudo",
			env:    []string{"FAKE_UID=1000"},
			remove: []string{"sudo"},
			want:   []string{"missing: redis-server chromium python3", "no sudo", "apt-get install redis-server chromium python3"},
		},
		{
			name: "a variable naming nothing",
			env:  []string{"CHROMIUM=/nonexistent/chromium"},
			want: []string{"CHROMIUM=/nonexistent/chromium is not an executable file"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := newSandbox(t, tc.remove...)
			r := s.run(t, tc.env)
			if r.code != 1 {
				t.Errorf("exit code %d, want 1", r.code)
			}
			for _, w := range tc.want {
				if !strings.Contains(r.stderr, w) {
					t.Errorf("stderr does not say %q:\n%s", w, r.stderr)
				}
			}
			if len(r.calls) > 0 {
				t.Errorf("calls %q, want none", r.calls)
			}
		})
	}
}

// go test runs where the script was called from: a package argument means
// what it means to go test there, and with none the whole module is tested.
func TestRunsWhereCalled(t *testing.T) {
	t.Parallel()
	s := newSandbox(t)
	sub := filepath.Join(s.root, "store")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	env := []string{"REDIS_SERVER=" + testbin.Find(t, "redis-server"), "CHROMIUM=/bin/sh", "PYTHON3=" + s.python(t)}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{args: []string{".", "-run", "Decide"}, want: "go test -race -count=1 -timeout 25m . -run Decide | in=store"},
		{args: []string{"-run", "Decide"}, want: "go test -race -count=1 -timeout 25m " + s.root + "/... -run Decide | in=store"},
	} {
		if err := os.Remove(s.log); err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
		r := s.runIn(t, sub, env, tc.args...)
		if r.code != 0 || len(r.calls) != 1 || !strings.HasPrefix(r.calls[0], tc.want+" ") {
			t.Errorf("scripts/test %q from store/: exit %d, calls %q, want one starting %q; stderr:\n%s", tc.args, r.code, r.calls, tc.want, r.stderr)
		}
	}
}

// A port taken between the kernel's answer and redis-server's bind is
// tried again with another.
func TestRedisPortTakenIsRetried(t *testing.T) {
	t.Parallel()
	s := newSandbox(t)
	// A redis-server that finds its first port taken.
	redis := filepath.Join(s.bin, "redis-server-busy")
	write(t, redis, `#!/bin/sh
if [ ! -e "$FAKE_LOG.busy" ]; then
  touch "$FAKE_LOG.busy"
  echo "Could not create server TCP listening socket: Address already in use" >&2
  exit 1
fi
exec '`+testbin.Find(t, "redis-server")+`' "$@"
`, 0o755)
	r := s.run(t, []string{"REDIS_SERVER=" + redis, "CHROMIUM=/bin/sh", "PYTHON3=" + s.python(t)})
	if r.code != 0 || !strings.Contains(r.stderr, "(attempt 1)") || strings.Contains(r.stderr, "(attempt 2)") {
		t.Errorf("exit code %d, want 0 after one retry; stderr:\n%s", r.code, r.stderr)
	}
	if len(r.calls) != 1 || !strings.HasSuffix(r.calls[0], "ping=+PONG") {
		t.Errorf("calls %q, want go test with a Redis that answers", r.calls)
	}
}
