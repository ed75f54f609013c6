package archtest

import (
	"encoding/json"
	"errors"
	"io"
	"os/exec"
	"path"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/slackapprove/slackbot"

type pkg struct {
	ImportPath string
	Imports    []string
	Deps       []string
}

// packages lists the module's packages with their imports and
// dependencies (production code only: test files are not listed).
func packages(t *testing.T) map[string]pkg {
	t.Helper()
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skipf("no go tool to list packages: %v", err)
	}
	cmd := exec.Command(goTool, "list", "-json=ImportPath,Imports,Deps", module+"/...")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	pkgs := map[string]pkg{}
	dec := json.NewDecoder(strings.NewReader(string(out)))
	for {
		var p pkg
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("decode go list output: %v", err)
		}
		pkgs[strings.TrimPrefix(strings.TrimPrefix(p.ImportPath, module), "/")] = p
	}
	if _, ok := pkgs["approval"]; !ok {
		t.Fatalf("go list found no approval package among %d", len(pkgs))
	}
	return pkgs
}

// ours returns the module's packages p imports, relative to the module.
func ours(p pkg) []string {
	var out []string
	for _, imp := range p.Imports {
		if rel, ok := strings.CutPrefix(imp, module+"/"); ok {
			out = append(out, rel)
		}
	}
	return out
}

func under(rel, root string) bool { return rel == root || strings.HasPrefix(rel, root+"/") }

// pending are violations being removed, each with the work that removes
// it. The test fails on any other violation, and on a pending one that is
// gone (so the list only shrinks).
var pending = map[string]string{}

func TestImportRules(t *testing.T) {
	seen := map[string]bool{}
	check(t, packages(t), func(rel, imp, why string) {
		key := rel + " imports " + imp
		if _, ok := pending[key]; ok {
			seen[key] = true
			return
		}
		t.Errorf("%s: %s", key, why)
	})
	for key, work := range pending {
		if !seen[key] {
			t.Errorf("%q no longer happens: remove it from pending (%s is done)", key, work)
		}
	}
}

// check calls bad for every import that breaks a rule.
func check(t *testing.T, pkgs map[string]pkg, bad func(rel, imp, why string)) {
	t.Helper()
	for rel, p := range pkgs {
		for _, imp := range ours(p) {
			switch {
			case rel == "receipt":
				bad(rel, imp, "receipt is a leaf: a tool's service verifies receipts with it alone")
			case imp == "receipt":
				// Anyone may sign or verify receipts.
			case rel == "approval" && !under(imp, "agentrunner") && imp != "routing":
				bad(rel, imp, "approval may import only agentrunner, routing and receipt of ours")
			case rel == "store" && imp != "approval" && !under(imp, "agentrunner"):
				bad(rel, imp, "store may import only approval, agentrunner and receipt of ours")
			case rel == "routing" && !under(imp, "agentrunner"):
				bad(rel, imp, "routing knows only the agent's tool calls")
			case under(rel, "agentrunner") && !under(imp, "agentrunner"):
				bad(rel, imp, "agentrunner knows nothing of slackbot but its receipts")
			case rel == "client" && imp != "agentrunner":
				bad(rel, imp, "client, a Go user's client of /v1, may import only agentrunner's wire types and receipt of ours")
			case rel == "runs" && imp != "approval" && imp != "routing" && !under(imp, "agentrunner"):
				bad(rel, imp, "runs, the agent-run workflow, may import only approval, agentrunner, routing and receipt of ours: it declares the ports it needs and never reaches store or a door")
			case under(rel, "httpapi") && imp == "runs":
				bad(rel, imp, "only bot starts agent runs (from Slack events); httpapi has none")
			case under(rel, "hook") && imp != "client" && imp != "agentrunner":
				bad(rel, imp, "hook, the coding agents' hook command, asks through client alone: it may import only client, agentrunner's wire types and receipt of ours")
			case under(rel, "stepup") && imp != "approval":
				bad(rel, imp, "stepup, the step-up and passkey pages, may import only approval and receipt of ours: it reaches Redis through its Store port and Slack through Config.Notify, never store or bot")
			case imp == "stepup" && rel != "cmd/slackbot":
				bad(rel, imp, "only cmd/slackbot wires the step-up pages: bot reaches them through its Passkeys interface, and no other package needs them")
			case under(rel, "mcpgateway") && imp != "approval" && imp != "routing" && !under(imp, "agentrunner") && !under(imp, "mcpgateway"):
				bad(rel, imp, "mcpgateway may import only approval, routing, receipt and agentrunner of ours")
			}
			for _, door := range []string{"bot", "httpapi", "mcpgateway"} {
				if !under(rel, door) {
					continue
				}
				if under(imp, "store") {
					bad(rel, imp, "the doors reach Redis only through approval.Store")
				}
				for _, other := range []string{"bot", "httpapi", "mcpgateway"} {
					if other != door && under(imp, other) {
						bad(rel, imp, "the doors never import each other")
					}
				}
			}
		}
		for _, dep := range p.Deps {
			slack := strings.HasPrefix(dep, "github.com/slack-go/slack")
			redis := strings.HasPrefix(dep, "github.com/redis/go-redis")
			switch {
			case deployTooling(dep):
				bad(rel, dep, "Helm and the Kubernetes and Prometheus Operator API types are for the tests of deploy/ alone (deploy/helm is a package of tests): no production package links them")
			case (rel == "approval" || rel == "routing" || rel == "receipt" || rel == "client" || rel == "runs" || under(rel, "stepup") || under(rel, "hook") || under(rel, "agentrunner") || under(rel, "mcpgateway")) && (slack || redis):
				bad(rel, dep, "it must know neither Slack nor Redis")
			case under(rel, "store") && slack:
				bad(rel, dep, "store never speaks Slack")
			}
		}
	}
}

// deployTooling reports whether dep is one of the modules the tests of
// deploy/ use to render and check the manifests: Helm (with client-go),
// the Kubernetes, Gateway API and Prometheus Operator API types.
func deployTooling(dep string) bool {
	for _, prefix := range []string{"helm.sh/", "k8s.io/", "sigs.k8s.io/gateway-api", "github.com/prometheus-operator/"} {
		if strings.HasPrefix(dep, prefix) {
			return true
		}
	}
	return false
}

// TestDeployToolingRules checks the rule on made-up dependencies: no
// production package links Helm or the Kubernetes API types.
func TestDeployToolingRules(t *testing.T) {
	pkgs := map[string]pkg{
		"cmd/slackbot": {Deps: []string{"helm.sh/helm/v4/pkg/engine", "k8s.io/client-go/rest", "github.com/prometheus/client_golang/prometheus"}},
		"store":        {Deps: []string{"sigs.k8s.io/gateway-api/apis/v1", "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1", "sigs.k8s.io/yaml"}},
	}
	var got []string
	check(t, pkgs, func(rel, imp, why string) { got = append(got, rel+" "+imp) })
	slices.Sort(got)
	want := []string{
		"cmd/slackbot helm.sh/helm/v4/pkg/engine", "cmd/slackbot k8s.io/client-go/rest",
		"store github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1", "store sigs.k8s.io/gateway-api/apis/v1",
	}
	if !slices.Equal(got, want) {
		t.Errorf("violations %q; want %q", got, want)
	}
}

func TestNoGrabBagPackages(t *testing.T) {
	for rel := range packages(t) {
		if slices.Contains([]string{"util", "utils", "common", "helpers", "models", "storeadapter"}, path.Base(rel)) {
			t.Errorf("package %s: name packages for what they provide (docs/ARCHITECTURE.md, \"Import rules\"), and no adapter translates one model of an approval into another", rel)
		}
	}
}

func TestBinaryLinksNoTestCode(t *testing.T) {
	p, ok := packages(t)["cmd/slackbot"]
	if !ok {
		t.Fatal("no cmd/slackbot package")
	}
	for _, dep := range p.Deps {
		if dep == "testing" || strings.HasPrefix(dep, "testing/") || dep == "net/http/httptest" {
			t.Errorf("the slackbot binary links %s; want no test packages", dep)
		}
	}
}

// TestGatewayRules checks the rules for mcpgateway on made-up imports:
// only approval, routing and agentrunner of ours, and neither Slack nor
// Redis underneath.
func TestGatewayRules(t *testing.T) {
	pkgs := map[string]pkg{"mcpgateway": {
		Imports: []string{module + "/approval", module + "/routing", module + "/agentrunner/mcptools",
			module + "/store", module + "/bot", module + "/httpapi", module + "/internal/devui"},
		Deps: []string{"github.com/modelcontextprotocol/go-sdk/mcp", "github.com/redis/go-redis/v9", "github.com/slack-go/slack"},
	}}
	var got []string
	check(t, pkgs, func(rel, imp, why string) { got = append(got, imp) })
	slices.Sort(got)
	want := []string{"bot", "bot", "github.com/redis/go-redis/v9", "github.com/slack-go/slack", "httpapi", "httpapi", "internal/devui", "store", "store"}
	if !slices.Equal(got, want) {
		t.Errorf("violations %q; want %q", got, want)
	}
}

// TestClientRules checks the rules for client on made-up imports: a Go
// user's client of /v1 imports only agentrunner's wire types (and
// receipt), and neither Slack nor Redis underneath.
func TestClientRules(t *testing.T) {
	pkgs := map[string]pkg{"client": {
		Imports: []string{module + "/agentrunner", module + "/receipt", module + "/approval", module + "/httpapi",
			module + "/store", module + "/agentrunner/openai"},
		Deps: []string{"github.com/redis/go-redis/v9", "github.com/slack-go/slack"},
	}}
	var got []string
	check(t, pkgs, func(rel, imp, why string) { got = append(got, imp) })
	slices.Sort(got)
	want := []string{"agentrunner/openai", "approval", "github.com/redis/go-redis/v9", "github.com/slack-go/slack", "httpapi", "store"}
	if !slices.Equal(got, want) {
		t.Errorf("violations %q; want %q", got, want)
	}
}

// TestRunsRules checks the rules for runs on made-up imports: only
// approval, agentrunner, routing and receipt of ours (no store, no door),
// neither Slack nor Redis underneath; and only bot of the doors imports
// it.
func TestRunsRules(t *testing.T) {
	pkgs := map[string]pkg{
		"runs": {
			Imports: []string{module + "/approval", module + "/agentrunner", module + "/routing", module + "/receipt",
				module + "/store", module + "/bot", module + "/httpapi"},
			Deps: []string{"github.com/redis/go-redis/v9", "github.com/slack-go/slack/slackevents"},
		},
		"bot":        {Imports: []string{module + "/runs", module + "/approval"}},
		"httpapi":    {Imports: []string{module + "/runs"}},
		"mcpgateway": {Imports: []string{module + "/runs"}},
	}
	var got []string
	check(t, pkgs, func(rel, imp, why string) { got = append(got, rel+" imports "+imp) })
	slices.Sort(got)
	want := []string{
		"httpapi imports runs", "mcpgateway imports runs",
		"runs imports bot", "runs imports github.com/redis/go-redis/v9", "runs imports github.com/slack-go/slack/slackevents",
		"runs imports httpapi", "runs imports store",
	}
	if !slices.Equal(got, want) {
		t.Errorf("violations %q; want %q", got, want)
	}
}

// TestStepUpRules checks the rules for stepup on made-up imports: it
// imports approval (and receipt) alone, no one but cmd/slackbot imports
// it, and it depends on neither Slack nor Redis.
func TestStepUpRules(t *testing.T) {
	pkgs := map[string]pkg{
		"stepup": {
			Imports: []string{module + "/approval", module + "/receipt", module + "/store", module + "/bot"},
			Deps:    []string{"github.com/go-webauthn/webauthn/webauthn", "github.com/redis/go-redis/v9", "github.com/slack-go/slack"},
		},
		"bot":          {Imports: []string{module + "/stepup", module + "/approval"}},
		"cmd/slackbot": {Imports: []string{module + "/stepup", module + "/store"}},
	}
	var got []string
	check(t, pkgs, func(rel, imp, why string) { got = append(got, rel+" imports "+imp) })
	slices.Sort(got)
	want := []string{
		"bot imports stepup",
		"stepup imports bot", "stepup imports github.com/redis/go-redis/v9", "stepup imports github.com/slack-go/slack", "stepup imports store",
	}
	if !slices.Equal(got, want) {
		t.Errorf("violations %q; want %q", got, want)
	}
}

// TestHookRules checks the rules for hook on made-up imports: the hook
// command asks through client, the Go client of /v1, with agentrunner's
// wire types, and reaches neither the domain nor Redis nor Slack.
func TestHookRules(t *testing.T) {
	pkgs := map[string]pkg{"hook": {
		Imports: []string{module + "/client", module + "/agentrunner", module + "/receipt", module + "/approval",
			module + "/store", module + "/httpapi", module + "/agentrunner/mcptools"},
		Deps: []string{"github.com/redis/go-redis/v9", "github.com/slack-go/slack"},
	}}
	var got []string
	check(t, pkgs, func(rel, imp, why string) { got = append(got, imp) })
	slices.Sort(got)
	want := []string{"agentrunner/mcptools", "approval", "github.com/redis/go-redis/v9", "github.com/slack-go/slack", "httpapi", "store"}
	if !slices.Equal(got, want) {
		t.Errorf("violations %q; want %q", got, want)
	}
}
