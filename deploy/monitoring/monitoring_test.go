// Package monitoring_test checks deploy/monitoring, what an operator loads
// to watch slackbot: the Grafana dashboard, the Prometheus alert rules
// (plain and as a PrometheusRule), the ServiceMonitor and the kustomize
// component. It is a package of tests only: nothing here is linked into
// slackbot (docs/ARCHITECTURE.md, "Import rules": no test code in the
// binary), and the heavy Prometheus packages it needs (the query engine,
// rulefmt) stay out of every other package's build.
//
// What it proves, file by file:
//   - every PromQL expression (dashboard targets, template variables, rules)
//     parses with Prometheus's own parser, and names only metrics and labels
//     a live `slackbot dev` exports on /metrics (live_test.go);
//   - every alert fires on a failure history and stays silent on a healthy
//     one, honouring its `for` (alerts_test.go);
//   - the rules pass rulefmt, the PrometheusRule carries exactly the same
//     groups, the Operator's objects decode strictly into its API types, and
//     each runbook_url names a section of deploy/README.md (this file);
//   - the dashboard decodes strictly and has the variables, rows, units and
//     thresholds an operator relies on (dashboard_test.go).
package monitoring_test

import (
	"bytes"
	"encoding/json"
	"io"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/goccy/go-yaml"
	"github.com/google/go-cmp/cmp"
	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/rulefmt"
	"github.com/prometheus/prometheus/promql/parser"
)

// promParser parses PromQL as a stock Prometheus does: no experimental
// functions, so an expression that parses here runs on the operator's
// Prometheus.
var promParser = parser.NewParser(parser.Options{})

// readFile reads a file of deploy/monitoring (or, with "..", of deploy/).
func readFile(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// rules parses alerts.yaml with rulefmt, as Prometheus loads a rules
// file, failing the test on any problem it reports.
func rules(t *testing.T) *rulefmt.RuleGroups {
	t.Helper()
	groups, errs := rulefmt.Parse(readFile(t, "alerts.yaml"), false, model.UTF8Validation, promParser, slog.New(slog.DiscardHandler))
	for _, err := range errs {
		t.Errorf("alerts.yaml: %v", err)
	}
	if groups == nil || len(groups.Groups) == 0 {
		t.Fatal("alerts.yaml: no rule groups")
	}
	return groups
}

// alertRules are the alerting rules of alerts.yaml, in file order.
func alertRules(t *testing.T) []rulefmt.Rule {
	t.Helper()
	var out []rulefmt.Rule
	for _, g := range rules(t).Groups {
		for _, r := range g.Rules {
			if r.Alert != "" {
				out = append(out, r)
			}
		}
	}
	return out
}

// decodeStrict decodes a YAML file's single document into v through JSON,
// refusing unknown fields: the Operator's types are JSON-tagged, and a field
// they do not know is one the API server would reject or drop.
func decodeStrict(t *testing.T, name string, v any) {
	t.Helper()
	var generic any
	if err := yaml.Unmarshal(readFile(t, name), &generic); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	raw, err := json.Marshal(generic)
	if err != nil {
		t.Fatal(err)
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		t.Fatalf("%s does not decode strictly into %T: %v", name, v, err)
	}
	if _, err := dec.Token(); err != io.EOF {
		t.Fatalf("%s: trailing data after the object", name)
	}
}

// The rules file is what Prometheus loads: rulefmt accepts it with unknown
// fields refused, and each alert has the labels and annotations the
// runbooks and the routing of notifications rely on.
func TestRulesFileValid(t *testing.T) {
	t.Parallel()
	seen := map[string]bool{}
	for _, r := range alertRules(t) {
		if seen[r.Alert] {
			t.Errorf("alert %s is defined twice", r.Alert)
		}
		seen[r.Alert] = true
		if s := r.Labels["severity"]; s != "critical" && s != "warning" {
			t.Errorf("%s: severity %q; want critical or warning", r.Alert, s)
		}
		for _, k := range []string{"summary", "description", "runbook_url"} {
			if strings.TrimSpace(r.Annotations[k]) == "" {
				t.Errorf("%s: no %s annotation", r.Alert, k)
			}
		}
		if len(r.Annotations) != 3 {
			t.Errorf("%s: annotations %v; want exactly summary, description and runbook_url", r.Alert, slices.Sorted(maps.Keys(r.Annotations)))
		}
	}
	if len(seen) == 0 {
		t.Fatal("alerts.yaml has no alerting rules")
	}
}

// runbookPrefix is where every alert's runbook lives: a section of
// deploy/README.md, one per alert.
const runbookPrefix = "https://github.com/slackapprove/slackbot/blob/main/deploy/README.md#"

// Every runbook_url names a heading of deploy/README.md that exists, so a
// page never leads to a dead anchor.
func TestRunbooksExist(t *testing.T) {
	t.Parallel()
	anchors := markdownAnchors(string(readFile(t, filepath.Join("..", "README.md"))))
	for _, r := range alertRules(t) {
		u := r.Annotations["runbook_url"]
		anchor, ok := strings.CutPrefix(u, runbookPrefix)
		if !ok {
			t.Errorf("%s: runbook_url %q; want %s<section>", r.Alert, u, runbookPrefix)
			continue
		}
		if anchor != strings.ToLower(r.Alert) {
			t.Errorf("%s: runbook anchor %q; want the alert's own section #%s", r.Alert, anchor, strings.ToLower(r.Alert))
		}
		if !anchors[anchor] {
			t.Errorf("%s: deploy/README.md has no heading with anchor #%s", r.Alert, anchor)
		}
	}
}

// markdownAnchors are the anchors GitHub gives the headings of a Markdown
// document: lower case, punctuation but '-' and '_' dropped, spaces as '-'.
func markdownAnchors(doc string) map[string]bool {
	drop := regexp.MustCompile(`[^\p{L}\p{N}\- _]`)
	out := map[string]bool{}
	inFence := false
	for line := range strings.Lines(doc) {
		if strings.HasPrefix(line, "```") {
			inFence = !inFence
		}
		title, ok := strings.CutPrefix(line, "#")
		if inFence || !ok {
			continue
		}
		title = strings.TrimSpace(strings.TrimLeft(title, "#"))
		a := strings.ReplaceAll(drop.ReplaceAllString(strings.ToLower(title), ""), " ", "-")
		out[a] = true
	}
	return out
}

// The PrometheusRule decodes strictly into the Operator's type and carries
// exactly alerts.yaml's groups: the two files are one set of rules in two
// envelopes, and the Helm chart ships alerts.yaml itself.
func TestPrometheusRuleMatchesRulesFile(t *testing.T) {
	t.Parallel()
	var pr monitoringv1.PrometheusRule
	decodeStrict(t, "prometheusrule.yaml", &pr)
	if pr.APIVersion != "monitoring.coreos.com/v1" || pr.Kind != "PrometheusRule" || pr.Name != "slackbot" {
		t.Errorf("prometheusrule.yaml: %s %s/%s; want monitoring.coreos.com/v1 PrometheusRule/slackbot", pr.APIVersion, pr.Kind, pr.Name)
	}

	var plain struct {
		Groups any `yaml:"groups"`
	}
	if err := yaml.UnmarshalWithOptions(readFile(t, "alerts.yaml"), &plain, yaml.DisallowUnknownField()); err != nil {
		t.Fatalf("alerts.yaml: %v", err)
	}
	var wrapped struct {
		Spec struct {
			Groups any `yaml:"groups"`
		} `yaml:"spec"`
	}
	if err := yaml.Unmarshal(readFile(t, "prometheusrule.yaml"), &wrapped); err != nil {
		t.Fatalf("prometheusrule.yaml: %v", err)
	}
	if diff := cmp.Diff(plain.Groups, wrapped.Spec.Groups); diff != "" {
		t.Errorf("prometheusrule.yaml spec.groups differ from alerts.yaml groups (-alerts.yaml +prometheusrule.yaml):\n%s", diff)
	}
}

// service is the part of deploy/kubernetes/service.yaml the ServiceMonitor
// must agree with.
type service struct {
	Metadata struct {
		Name   string            `yaml:"name"`
		Labels map[string]string `yaml:"labels"`
	} `yaml:"metadata"`
	Spec struct {
		Ports []struct {
			Name string `yaml:"name"`
		} `yaml:"ports"`
	} `yaml:"spec"`
}

// The ServiceMonitor decodes strictly, selects slackbot's Service by its
// labels, scrapes /metrics on a port the Service names, and names the job
// "slackbot", which the rules' up{job="slackbot"} assume.
func TestServiceMonitorScrapesTheService(t *testing.T) {
	t.Parallel()
	var sm monitoringv1.ServiceMonitor
	decodeStrict(t, "servicemonitor.yaml", &sm)
	if sm.APIVersion != "monitoring.coreos.com/v1" || sm.Kind != "ServiceMonitor" || sm.Name != "slackbot" {
		t.Errorf("servicemonitor.yaml: %s %s/%s; want monitoring.coreos.com/v1 ServiceMonitor/slackbot", sm.APIVersion, sm.Kind, sm.Name)
	}
	var svc service
	if err := yaml.Unmarshal(readFile(t, filepath.Join("..", "kubernetes", "service.yaml")), &svc); err != nil {
		t.Fatal(err)
	}
	for k, v := range sm.Spec.Selector.MatchLabels {
		if svc.Metadata.Labels[k] != v {
			t.Errorf("selector %s=%s: Service %s has %s=%q", k, v, svc.Metadata.Name, k, svc.Metadata.Labels[k])
		}
	}
	if len(sm.Spec.Selector.MatchLabels) == 0 || len(sm.Spec.Selector.MatchExpressions) > 0 {
		t.Errorf("selector %+v; want matchLabels only", sm.Spec.Selector)
	}
	if got := svc.Metadata.Labels[sm.Spec.JobLabel]; got != "slackbot" {
		t.Errorf("jobLabel %q gives job %q; the rules expect job=\"slackbot\"", sm.Spec.JobLabel, got)
	}
	if len(sm.Spec.Endpoints) != 1 {
		t.Fatalf("%d endpoints; want 1", len(sm.Spec.Endpoints))
	}
	ep := sm.Spec.Endpoints[0]
	if ep.Path != "/metrics" {
		t.Errorf("endpoint path %q; want /metrics", ep.Path)
	}
	var ports []string
	for _, p := range svc.Spec.Ports {
		ports = append(ports, p.Name)
	}
	if !slices.Contains(ports, ep.Port) {
		t.Errorf("endpoint port %v; want one of the Service's ports %q", ep.Port, ports)
	}
}

// The kustomization is a Component (it needs the Operator's CRDs, so it is
// added on top of deploy/kubernetes, never part of it) listing exactly the
// Operator's objects, with the dashboard as a ConfigMap Grafana's sidecar
// picks up.
func TestKustomizeComponent(t *testing.T) {
	t.Parallel()
	var k struct {
		APIVersion         string   `yaml:"apiVersion"`
		Kind               string   `yaml:"kind"`
		Resources          []string `yaml:"resources"`
		ConfigMapGenerator []struct {
			Name    string   `yaml:"name"`
			Files   []string `yaml:"files"`
			Options struct {
				DisableNameSuffixHash bool              `yaml:"disableNameSuffixHash"`
				Labels                map[string]string `yaml:"labels"`
			} `yaml:"options"`
		} `yaml:"configMapGenerator"`
	}
	if err := yaml.UnmarshalWithOptions(readFile(t, "kustomization.yaml"), &k, yaml.DisallowUnknownField()); err != nil {
		t.Fatalf("kustomization.yaml: %v", err)
	}
	if k.APIVersion != "kustomize.config.k8s.io/v1alpha1" || k.Kind != "Component" {
		t.Errorf("kustomization.yaml: %s %s; want a kustomize.config.k8s.io/v1alpha1 Component", k.APIVersion, k.Kind)
	}
	if want := []string{"servicemonitor.yaml", "prometheusrule.yaml"}; !slices.Equal(k.Resources, want) {
		t.Errorf("resources %q; want %q", k.Resources, want)
	}
	if len(k.ConfigMapGenerator) != 1 || !slices.Equal(k.ConfigMapGenerator[0].Files, []string{"dashboard.json"}) ||
		k.ConfigMapGenerator[0].Options.Labels["grafana_dashboard"] != "1" {
		t.Errorf("configMapGenerator %+v; want one ConfigMap of dashboard.json labelled grafana_dashboard=1", k.ConfigMapGenerator)
	}
	base := string(readFile(t, filepath.Join("..", "kubernetes", "kustomization.yaml")))
	if strings.Contains(base, "monitoring") {
		t.Error("deploy/kubernetes/kustomization.yaml mentions monitoring: the base must apply on a cluster without the Prometheus Operator")
	}
}
