package main

// Tests for deploy/ and .env.example: every YAML file parses, the
// Dockerfile, compose file, Kubernetes manifests and Slack app manifest
// hang together, and every environment variable they set is one that
// Config reads. Docker and a cluster are not available where the tests
// run, so the files are checked as text and YAML, not by running them.

import (
	"fmt"
	"io/fs"
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

	"github.com/goccy/go-yaml"
	"github.com/goccy/go-yaml/ast"
	"github.com/goccy/go-yaml/parser"
	"github.com/slack-go/slack"
	"github.com/slackapprove/slackbot/receipt"
	"github.com/slackapprove/slackbot/routing"
)

// deployDir is deploy/ seen from this package's directory, where go test
// runs.
const deployDir = "../../deploy"

// shutdownBudgetSeconds is how long serve waits for requests in flight
// after SIGTERM (its srv.Shutdown timeout); grace periods must exceed it.
const shutdownBudgetSeconds = int(shutdownBudget / time.Second)

// runtimeEnv are variables the deployment sets for the Go runtime rather
// than for slackbot; Config does not read them.
var runtimeEnv = map[string]bool{
	"GOMEMLIMIT": true,
}

// configVars returns every environment variable Config reads, from its
// env tags, with the default each declares ("" when none).
func configVars(t *testing.T) map[string]string {
	t.Helper()
	vars := map[string]string{}
	typ := reflect.TypeFor[Config]()
	for i := range typ.NumField() {
		f := typ.Field(i)
		name := f.Tag.Get("env")
		if name == "" {
			t.Fatalf("Config.%s has no env tag", f.Name)
		}
		vars[name] = f.Tag.Get("default")
	}
	return vars
}

// checkEnvNames reports every name that Config does not read.
func checkEnvNames(t *testing.T, where string, names []string) {
	t.Helper()
	vars := configVars(t)
	for _, n := range names {
		if _, ok := vars[n]; !ok && !runtimeEnv[n] && !slices.Contains(tracingVars, n) {
			t.Errorf("%s sets %s, which Config does not read (known: %s)", where, n, strings.Join(slices.Sorted(maps.Keys(vars)), ", "))
		}
	}
}

// yamlDocs parses a file as a YAML stream and returns the body of each
// non-empty document.
func yamlDocs(t *testing.T, file string) []ast.Node {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	f, err := parser.ParseBytes(data, parser.ParseComments)
	if err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	var docs []ast.Node
	for _, d := range f.Docs {
		if d.Body == nil || d.Body.Type() == ast.CommentType {
			continue
		}
		docs = append(docs, d.Body)
	}
	return docs
}

// decodeYAML decodes one document into v, refusing duplicate keys.
func decodeYAML(t *testing.T, where string, doc ast.Node, v any, opts ...yaml.DecodeOption) {
	t.Helper()
	if err := yaml.NodeToValue(doc, v, opts...); err != nil {
		t.Fatalf("%s: %v", where, err)
	}
}

func TestDeployYAMLParses(t *testing.T) {
	t.Parallel()
	var files []string
	err := filepath.WalkDir(deployDir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		// The Helm chart's templates are Go templates, not YAML: the
		// chart is linted, rendered and decoded by deploy/helm's tests.
		if d.IsDir() && p == filepath.Join(deployDir, "helm") {
			return filepath.SkipDir
		}
		if ext := filepath.Ext(p); !d.IsDir() && (ext == ".yaml" || ext == ".yml") {
			files = append(files, p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	// The files this package's tests look into; a rename must update them.
	for _, want := range []string{
		"docker-compose.yml", "routes.example.yaml", "slack-app-manifest.yaml",
		"kubernetes/kustomization.yaml", "kubernetes/deployment.yaml", "kubernetes/secret.yaml",
	} {
		if !slices.Contains(files, filepath.Join(deployDir, want)) {
			t.Errorf("deploy/%s is missing", want)
		}
	}
	for _, file := range files {
		t.Run(strings.TrimPrefix(file, deployDir+"/"), func(t *testing.T) {
			docs := yamlDocs(t, file)
			if len(docs) == 0 {
				t.Fatalf("%s has no YAML document", file)
			}
			for i, doc := range docs {
				var v any
				decodeYAML(t, fmt.Sprintf("%s document %d", file, i+1), doc, &v)
				if _, ok := v.(map[string]any); !ok {
					t.Errorf("%s document %d is a %T, want a mapping", file, i+1, v)
				}
			}
		})
	}
}

func TestDeployRoutesLoad(t *testing.T) {
	t.Parallel()
	for _, file := range []string{"routes.example.yaml", "kubernetes/routes.yaml"} {
		t.Run(file, func(t *testing.T) {
			rs, err := routing.LoadRoutes(filepath.Join(deployDir, file))
			if err != nil {
				t.Fatalf("LoadRoutes: %v", err)
			}
			// DESIGN's example: a policy route, an N-of-M route, a usergroup
			// route and a catch-all, so readers see each feature used.
			want := map[string]func(*routing.Route) bool{
				"refunds":   func(r *routing.Route) bool { return r.AutoApprove != "" },
				"deletions": func(r *routing.Route) bool { return r.RequiredApprovals == 2 },
				"deploys":   func(r *routing.Route) bool { return len(r.Usergroups) > 0 && slices.Contains(r.Tools, "deploy_*") },
				"default":   func(r *routing.Route) bool { return len(r.Tools) == 0 && len(r.Channels) == 0 },
			}
			for _, r := range rs.Routes {
				if ok, known := want[r.Name]; known && !ok(r) {
					t.Errorf("route %s does not show what it is there for: %+v", r.Name, r)
				}
				delete(want, r.Name)
			}
			if len(want) > 0 {
				t.Errorf("routes missing: %s", strings.Join(slices.Sorted(maps.Keys(want)), ", "))
			}
			if got := rs.Match("deploy_api", "C0ANY"); got == nil || got.Name != "deploys" {
				t.Errorf("Match(deploy_api) = %v, want route deploys", got)
			}
		})
	}
}

// envLine matches a variable in .env.example, set (NAME=value) or shown
// commented out (# NAME=value).
var envLine = regexp.MustCompile(`^(# )?([A-Z][A-Z0-9_]*)=(.*)$`)

type envExample struct {
	name, value string
	set         bool // not commented out
	line        int
}

func readEnvExample(t *testing.T) []envExample {
	t.Helper()
	data, err := os.ReadFile("../../.env.example")
	if err != nil {
		t.Fatal(err)
	}
	var (
		out       []envExample
		explained bool // a comment above explains the variables that follow
	)
	for i, line := range strings.Split(string(data), "\n") {
		m := envLine.FindStringSubmatch(line)
		switch {
		case m != nil:
			if !explained {
				t.Errorf(".env.example:%d: %s has no comment explaining it", i+1, m[2])
			}
			if strings.TrimSpace(m[3]) == "" {
				t.Errorf(".env.example:%d: %s has no example value", i+1, m[2])
			}
			if strings.ContainsAny(m[3], `"' `) {
				t.Errorf(".env.example:%d: %s=%s: quotes and spaces are read differently by docker compose and shells", i+1, m[2], m[3])
			}
			out = append(out, envExample{name: m[2], value: m[3], set: m[1] == "", line: i + 1})
		case strings.TrimSpace(line) == "":
			explained = false
		case strings.HasPrefix(line, "#") && !strings.HasPrefix(line, "# ---"):
			explained = true
		}
	}
	return out
}

func TestEnvExampleDocumentsConfig(t *testing.T) {
	t.Parallel()
	vars := readEnvExample(t)
	seen := map[string]int{}
	var names []string
	for _, v := range vars {
		if first, dup := seen[v.name]; dup {
			t.Errorf(".env.example:%d: %s already on line %d", v.line, v.name, first)
		}
		seen[v.name] = v.line
		names = append(names, v.name)
	}
	checkEnvNames(t, ".env.example", names)
	for _, name := range slices.Sorted(maps.Keys(configVars(t))) {
		if _, ok := seen[name]; !ok {
			t.Errorf(".env.example does not document %s", name)
		}
	}
}

func TestEnvExampleValuesAreValid(t *testing.T) {
	// Not parallel: a subtest changes the working directory (t.Chdir).
	vars := readEnvExample(t)
	tlsFile := filepath.Join(t.TempDir(), "tls.pem")
	if err := os.WriteFile(tlsFile, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		use  func(envExample) bool
	}{
		// cp .env.example .env: what a new user starts with.
		{"as copied", func(v envExample) bool { return v.set }},
		// Every example shown, uncommented at once.
		{"every example", func(envExample) bool { return true }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Chdir("../..") // ROUTES_FILE is relative to the repository root
			env := map[string]string{}
			for _, v := range vars {
				if !tt.use(v) {
					continue
				}
				value := v.value
				if strings.HasPrefix(v.name, "TLS_") {
					value = tlsFile // the example paths exist only in a deployment
				}
				if strings.HasPrefix(v.name, "RECEIPT_KEY") {
					// The examples show the form, and serve refuses them.
					if _, err := receipt.ParseSeed(value); err != nil || !isExampleSeed(value) {
						t.Errorf(".env.example's %s is not an example seed serve refuses: %v", v.name, err)
					}
					value = receiptSeed(v.name[len(v.name)-1:])
				}
				env[v.name] = value
			}
			if _, err := loadConfig(getenvOf(env), ModeServe); err != nil {
				t.Errorf("loadConfig(serve) with .env.example's values: %v", err)
			}
		})
	}
}

func TestSlackAppManifest(t *testing.T) {
	t.Parallel()
	file := filepath.Join(deployDir, "slack-app-manifest.yaml")
	var m slack.Manifest
	// Unknown fields are typos Slack would reject when the app is created.
	decodeYAML(t, file, yamlDocs(t, file)[0], &m, yaml.DisallowUnknownField())

	// The bot scopes are checked against the code in
	// TestManifestScopesAreTheUsedOnes.
	for _, ev := range []string{"app_mention", "message.im"} {
		if m.Settings.EventSubscriptions == nil || !slices.Contains(m.Settings.EventSubscriptions.BotEvents, ev) {
			t.Errorf("bot events lack %s", ev)
		}
	}
	if m.Settings.Interactivity == nil || !m.Settings.Interactivity.IsEnabled {
		t.Fatal("interactivity is not enabled: buttons would do nothing")
	}
	if m.Settings.SocketModeEnabled || m.Settings.OrgDeployEnabled || m.Settings.TokenRotationEnabled {
		t.Errorf("socket_mode_enabled %v org_deploy_enabled %v token_rotation_enabled %v, want all false",
			m.Settings.SocketModeEnabled, m.Settings.OrgDeployEnabled, m.Settings.TokenRotationEnabled)
	}
	if m.Features.BotUser.DisplayName == "" || !m.Features.AppHome.MessagesTabEnabled {
		t.Errorf("bot_user %+v app_home %+v: want a bot user that can be sent direct messages", m.Features.BotUser, m.Features.AppHome)
	}

	// Both URLs point at DESIGN's endpoints on the host the Ingress serves.
	var ing ingressSpec
	objs, _ := kubeObjects(t)
	kubeSpec(t, objs, "Ingress/slackbot", &ing)
	for _, u := range []struct{ name, raw, path string }{
		{"event_subscriptions", m.Settings.EventSubscriptions.RequestUrl, "/slack/events"},
		{"interactivity", m.Settings.Interactivity.RequestUrl, "/slack/interactivity"},
	} {
		got, err := url.Parse(u.raw)
		if err != nil || got.Scheme != "https" || got.Path != u.path || got.Host != ing.Spec.Rules[0].Host {
			t.Errorf("%s request_url %q, want https://%s%s", u.name, u.raw, ing.Spec.Rules[0].Host, u.path)
		}
	}
}
