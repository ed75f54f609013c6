package main

import (
	"bufio"
	"bytes"
	"fmt"
	"maps"
	"net/url"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/slackapprove/slackbot/routing"
)

// dockerInstruction is one instruction of a Dockerfile, continuation lines
// joined.
type dockerInstruction struct {
	line int
	cmd  string // upper case: FROM, RUN, COPY, …
	args string
}

func parseDockerfile(t *testing.T, file string) []dockerInstruction {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var (
		out     []dockerInstruction
		pending strings.Builder
		start   int
	)
	sc := bufio.NewScanner(bytes.NewReader(data))
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if pending.Len() == 0 {
			start = n
		}
		if cont, ok := strings.CutSuffix(line, `\`); ok {
			pending.WriteString(cont + " ")
			continue
		}
		pending.WriteString(line)
		cmd, args, _ := strings.Cut(pending.String(), " ")
		out = append(out, dockerInstruction{line: start, cmd: strings.ToUpper(cmd), args: strings.Join(strings.Fields(args), " ")})
		pending.Reset()
	}
	if pending.Len() > 0 {
		t.Fatalf("%s ends inside a continued instruction", file)
	}
	return out
}

func TestDockerfile(t *testing.T) {
	t.Parallel()
	file := filepath.Join(deployDir, "Dockerfile")
	ins := parseDockerfile(t, file)

	type stage struct {
		name, image string
		body        []dockerInstruction
	}
	var stages []*stage
	for _, in := range ins {
		if in.cmd == "FROM" {
			f := strings.Fields(in.args)
			f = slices.DeleteFunc(f, func(s string) bool { return strings.HasPrefix(s, "--") })
			s := &stage{image: f[0]}
			if len(f) == 3 && strings.EqualFold(f[1], "AS") {
				s.name = f[2]
			}
			stages = append(stages, s)
			continue
		}
		if len(stages) > 0 {
			stages[len(stages)-1].body = append(stages[len(stages)-1].body, in)
		}
		if in.cmd == "ADD" && regexp.MustCompile(`https?://`).MatchString(in.args) {
			t.Errorf("line %d: ADD of a URL downloads unverified content; fetch it in a RUN with a checksum", in.line)
		}
	}
	if len(stages) < 2 {
		t.Fatalf("%d stages, want a multi-stage build (build, then a minimal runtime)", len(stages))
	}
	build, final := stages[0], stages[len(stages)-1]
	if !strings.HasPrefix(build.image, "golang:") {
		t.Errorf("build stage FROM %s, want golang:…", build.image)
	}
	if build.name == "" {
		t.Error("the build stage has no name (FROM … AS build) for COPY --from")
	}
	if final.image != "scratch" && !strings.HasPrefix(final.image, "gcr.io/distroless/static") {
		t.Errorf("final stage FROM %s, want distroless/static or scratch", final.image)
	}

	var built bool
	for _, in := range build.body {
		if in.cmd == "RUN" && strings.Contains(in.args, "go build") {
			built = true
			checkReleaseBuild(t, fmt.Sprintf("Dockerfile line %d", in.line), in.args)
		}
		if in.cmd == "COPY" && !strings.Contains(in.args, "--from") {
			for _, src := range strings.Fields(in.args)[:len(strings.Fields(in.args))-1] {
				if src == "." {
					continue
				}
				if _, err := os.Stat(filepath.Join("../..", src)); err != nil {
					t.Errorf("line %d: COPY %s: not in the build context (the repository root): %v", in.line, src, err)
				}
			}
		}
	}
	if !built {
		t.Error("the build stage runs no go build")
	}

	var user, entrypoint string
	var exposed []string
	for _, in := range final.body {
		switch in.cmd {
		case "COPY":
			if !strings.Contains(in.args, "--from="+build.name) {
				t.Errorf("line %d: the final stage copies %q from outside the build stage", in.line, in.args)
			}
		case "RUN":
			t.Errorf("line %d: RUN in the final stage: it has no shell", in.line)
		case "USER":
			user = in.args
		case "EXPOSE":
			exposed = append(exposed, strings.Fields(in.args)...)
		case "ENTRYPOINT":
			entrypoint = in.args
		}
	}
	uid, _, _ := strings.Cut(user, ":")
	if !regexp.MustCompile(`^[1-9][0-9]*$`).MatchString(uid) {
		t.Errorf("final USER %q, want a numeric non-root uid (runAsNonRoot can only check numbers)", user)
	}
	if _, port, _ := strings.Cut(configVars(t)["ADDR"], ":"); !slices.Contains(exposed, port) {
		t.Errorf("EXPOSE %v, want ADDR's default port %s", exposed, port)
	}
	if entrypoint != `["/slackbot"]` {
		t.Errorf("ENTRYPOINT %s, want [\"/slackbot\"] (exec form: signals reach slackbot)", entrypoint)
	}

	ignore, err := os.ReadFile(filepath.Join(deployDir, "Dockerfile.dockerignore"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{".env", ".git"} {
		if !slices.Contains(strings.Fields(string(ignore)), want) {
			t.Errorf("Dockerfile.dockerignore does not exclude %s from the build context", want)
		}
	}
}

// releaseBuild is a go build command line reduced to what makes the
// release build: the environment that does not depend on the target
// (CGO_ENABLED, not GOOS or GOARCH), the flags and the -ldflags words
// (the version's value dropped), the package; not -o.
type releaseBuild struct {
	env, flags, ldflags []string
	pkg                 string
}

// parseGoBuild reads the first `go build` in a shell command line (double
// quotes only, which is all the Dockerfile and the README use).
func parseGoBuild(t *testing.T, where, cmdline string) releaseBuild {
	t.Helper()
	var words []string
	var cur strings.Builder
	quoted, inWord := false, false
	for _, r := range cmdline + " " {
		switch {
		case r == '"':
			quoted, inWord = !quoted, true
		case !quoted && (r == ' ' || r == '\t'):
			if inWord {
				words, inWord = append(words, cur.String()), false
				cur.Reset()
			}
		default:
			cur.WriteRune(r)
			inWord = true
		}
	}
	i := slices.Index(words, "go")
	if i < 0 || i+1 >= len(words) || words[i+1] != "build" {
		t.Fatalf("%s: no go build in %q", where, cmdline)
	}
	var b releaseBuild
	for _, w := range words[:i] {
		if name, value, ok := strings.Cut(w, "="); ok && !strings.HasPrefix(name, "-") && !strings.Contains(value, "$") {
			b.env = append(b.env, w)
		}
	}
	rest := words[i+2:]
	for j := 0; j < len(rest); j++ {
		switch w := rest[j]; {
		case w == "-o":
			j++
		case w == "-ldflags" && j+1 < len(rest):
			j++
			f := strings.Fields(rest[j])
			for k := 0; k < len(f); k++ {
				if f[k] == "-X" && k+1 < len(f) {
					name, _, _ := strings.Cut(f[k+1], "=")
					b.ldflags = append(b.ldflags, "-X "+name)
					k++
					continue
				}
				b.ldflags = append(b.ldflags, f[k])
			}
		case strings.HasPrefix(w, "-ldflags="):
			t.Errorf("%s: write -ldflags \"…\" as two words, as the others do", where)
		case strings.HasPrefix(w, "-"):
			b.flags = append(b.flags, w)
		default:
			b.pkg = w
		}
	}
	slices.Sort(b.env)
	slices.Sort(b.flags)
	slices.Sort(b.ldflags)
	return b
}

// checkReleaseBuild checks that a go build is the release build README.md
// describes: static, -trimpath, stripped, its version from -X, no VCS
// stamp; and that README.md's command has exactly its flags.
func checkReleaseBuild(t *testing.T, where, cmdline string) {
	t.Helper()
	got := parseGoBuild(t, where, cmdline)
	want := releaseBuild{
		env:     []string{"CGO_ENABLED=0"},
		flags:   []string{"-buildvcs=false", "-trimpath"},
		ldflags: []string{"-X main.version", "-s", "-w"},
		pkg:     "./cmd/slackbot",
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("%s: go build is %+v, want the release build %+v (static, -trimpath, stripped, versioned, no VCS stamp)", where, got, want)
	}
	deployment := docSection(t, readDoc(t, "../../README.md"), "## Deployment")
	var documented []string
	for line := range strings.Lines(deployment) {
		if l := strings.TrimSpace(line); strings.Contains(l, "go build") && strings.HasPrefix(l, "CGO_ENABLED=") {
			documented = append(documented, l)
		}
	}
	if len(documented) != 1 {
		t.Fatalf("README.md's Deployment section shows %d release build commands (CGO_ENABLED=… go build …), want 1", len(documented))
	}
	if readme := parseGoBuild(t, "README.md", documented[0]); !reflect.DeepEqual(readme, got) {
		t.Errorf("README.md's release build %+v differs from %s's %+v", readme, where, got)
	}
}

type composeFile struct {
	Services map[string]composeService `yaml:"services"`
	Volumes  map[string]any            `yaml:"volumes"`
}

type composeService struct {
	Image string `yaml:"image"`
	Build *struct {
		Context    string `yaml:"context"`
		Dockerfile string `yaml:"dockerfile"`
	} `yaml:"build"`
	Command     []string          `yaml:"command"`
	EnvFile     []string          `yaml:"env_file"`
	Environment map[string]string `yaml:"environment"`
	Volumes     []string          `yaml:"volumes"`
	Ports       []string          `yaml:"ports"`
	DependsOn   map[string]struct {
		Condition string `yaml:"condition"`
	} `yaml:"depends_on"`
	Healthcheck *struct {
		Test []string `yaml:"test"`
	} `yaml:"healthcheck"`
	Profiles        []string `yaml:"profiles"`
	Hostname        string   `yaml:"hostname"`
	Restart         string   `yaml:"restart"`
	StopGracePeriod string   `yaml:"stop_grace_period"`
	ReadOnly        bool     `yaml:"read_only"`
	CapDrop         []string `yaml:"cap_drop"`
	SecurityOpt     []string `yaml:"security_opt"`
}

func TestComposeFile(t *testing.T) {
	t.Parallel()
	file := filepath.Join(deployDir, "docker-compose.yml")
	docs := yamlDocs(t, file)
	var c composeFile
	decodeYAML(t, file, docs[0], &c)

	redis, ok := c.Services["redis"]
	if !ok {
		t.Fatal("no redis service")
	}
	if cmd := strings.Join(redis.Command, " "); !strings.Contains(cmd, "--appendonly yes") || !strings.Contains(cmd, "--appendfsync everysec") {
		t.Errorf("redis command %q, want AOF persistence (--appendonly yes --appendfsync everysec)", cmd)
	}
	if redis.Healthcheck == nil || !strings.Contains(strings.Join(redis.Healthcheck.Test, " "), "redis-cli ping") {
		t.Error("redis has no redis-cli ping healthcheck")
	}
	if !slices.ContainsFunc(redis.Volumes, func(v string) bool { return strings.HasSuffix(v, ":/data") }) {
		t.Errorf("redis volumes %v: /data (the AOF) is not on a volume", redis.Volumes)
	}

	sb, ok := c.Services["slackbot"]
	if !ok {
		t.Fatal("no slackbot service")
	}
	if sb.Build == nil {
		t.Fatal("slackbot has no build section")
	}
	dockerfile := filepath.Join(deployDir, sb.Build.Context, sb.Build.Dockerfile)
	if _, err := os.Stat(dockerfile); err != nil || filepath.Clean(dockerfile) != filepath.Join(deployDir, "Dockerfile") {
		t.Errorf("build context %q with dockerfile %q is %s, want deploy/Dockerfile (%v)", sb.Build.Context, sb.Build.Dockerfile, dockerfile, err)
	}
	if want := []string{"../.env"}; !slices.Equal(sb.EnvFile, want) {
		t.Errorf("env_file %v, want %v (.env next to .env.example)", sb.EnvFile, want)
	}
	checkEnvNames(t, "compose service slackbot", slices.Sorted(maps.Keys(sb.Environment)))

	if u, err := url.Parse(composeDefault(sb.Environment["REDIS_URL"])); err != nil || u.Hostname() != "redis" {
		t.Errorf("REDIS_URL %q does not name the redis service", sb.Environment["REDIS_URL"])
	}
	routes := sb.Environment["ROUTES_FILE"]
	var mounted bool
	for _, v := range sb.Volumes {
		parts := strings.Split(v, ":")
		if len(parts) < 2 || parts[1] != routes {
			continue
		}
		mounted = true
		if len(parts) != 3 || parts[2] != "ro" {
			t.Errorf("volume %q: mount the routing file read-only", v)
		}
		if _, err := routing.LoadRoutes(filepath.Join(deployDir, parts[0])); err != nil {
			t.Errorf("volume %q: %v", v, err)
		}
	}
	if !mounted {
		t.Errorf("ROUTES_FILE %q is not a mounted file (volumes %v)", routes, sb.Volumes)
	}
	if got := sb.DependsOn["redis"].Condition; got != "service_healthy" {
		t.Errorf("slackbot depends_on redis condition %q, want service_healthy", got)
	}
	if _, port, _ := strings.Cut(configVars(t)["ADDR"], ":"); !slices.ContainsFunc(sb.Ports, func(p string) bool { return strings.HasSuffix(p, ":"+port) }) {
		t.Errorf("ports %v do not publish ADDR's port %s", sb.Ports, port)
	}
	if sb.Restart != "unless-stopped" {
		t.Errorf("restart %q, want unless-stopped", sb.Restart)
	}
	if grace, err := time.ParseDuration(sb.StopGracePeriod); err != nil || grace <= shutdownBudget {
		t.Errorf("stop_grace_period %q, want more than serve's %ds shutdown (docker's default is 10s)", sb.StopGracePeriod, shutdownBudgetSeconds)
	}
	if !sb.ReadOnly || !slices.Equal(sb.CapDrop, []string{"ALL"}) || !slices.ContainsFunc(sb.SecurityOpt, func(s string) bool { return strings.HasPrefix(s, "no-new-privileges") }) {
		t.Errorf("slackbot read_only %v, cap_drop %v, security_opt %v: want read-only, no capabilities, no-new-privileges", sb.ReadOnly, sb.CapDrop, sb.SecurityOpt)
	}
	for name, s := range c.Services {
		for _, v := range s.Volumes {
			if src, _, _ := strings.Cut(v, ":"); !strings.HasPrefix(src, ".") {
				if _, ok := c.Volumes[src]; !ok {
					t.Errorf("service %s uses volume %s, which is not declared", name, src)
				}
			}
		}
	}
}
