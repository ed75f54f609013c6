// Package helm_test tests the Helm chart deploy/helm/slackbot with Helm's
// own Go packages: the chart loader, the template engine and the linter.
// It is a package of tests alone, apart from cmd/slackbot, so that Helm
// and the Kubernetes client it brings are compiled into this test binary
// only (docs/ARCHITECTURE.md, "Tests").
//
// Every object the chart renders, with its default values and with each
// value set below, is decoded strictly (unknown fields refused) into its
// real API type — k8s.io/api, sigs.k8s.io/gateway-api, the Prometheus
// Operator's monitoring/v1 — and checked against slackbot itself: every
// variable the Deployment sets is one slackbot reads, the probes' paths
// are routes of cmd/slackbot/routes.go, the routing file loads with
// slackbot's loader, and the public paths are the kustomize HTTPRoute's.
package helm_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"log/slog"
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

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	"github.com/slackapprove/slackbot/routing"
	"helm.sh/helm/v4/pkg/chart/common"
	chartutil "helm.sh/helm/v4/pkg/chart/common/util"
	chart "helm.sh/helm/v4/pkg/chart/v2"
	"helm.sh/helm/v4/pkg/chart/v2/lint"
	"helm.sh/helm/v4/pkg/chart/v2/lint/support"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	"helm.sh/helm/v4/pkg/engine"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
	"sigs.k8s.io/yaml"
)

const (
	chartDir   = "slackbot"
	repoRoot   = "../.."
	release    = "slackbot"
	namespace  = "slackbot"
	routesPath = "/etc/slackbot/routes.yaml"
)

// apiTypes are the API types of every kind the chart may render.
var apiTypes = map[string]reflect.Type{
	"v1/Service":                              reflect.TypeFor[corev1.Service](),
	"v1/ConfigMap":                            reflect.TypeFor[corev1.ConfigMap](),
	"apps/v1/Deployment":                      reflect.TypeFor[appsv1.Deployment](),
	"policy/v1/PodDisruptionBudget":           reflect.TypeFor[policyv1.PodDisruptionBudget](),
	"networking.k8s.io/v1/Ingress":            reflect.TypeFor[networkingv1.Ingress](),
	"networking.k8s.io/v1/NetworkPolicy":      reflect.TypeFor[networkingv1.NetworkPolicy](),
	"gateway.networking.k8s.io/v1/HTTPRoute":  reflect.TypeFor[gatewayv1.HTTPRoute](),
	"monitoring.coreos.com/v1/ServiceMonitor": reflect.TypeFor[monitoringv1.ServiceMonitor](),
	"monitoring.coreos.com/v1/PrometheusRule": reflect.TypeFor[monitoringv1.PrometheusRule](),
}

// publicPaths are the paths the README calls public, as Gateway API path
// matches: Slack's webhooks, the HTTP API, the MCP gateway, the receipt
// keys, the liveness check and the step-up and passkey pages. /readyz and
// /metrics stay in the cluster.
var publicPaths = []string{
	"Exact /.well-known/jwks.json", "Exact /healthz", "Exact /mcp", "PathPrefix /passkeys", "PathPrefix /slack", "PathPrefix /step-up", "PathPrefix /v1",
}

// secretVars are the variables that hold secrets: the Deployment may only
// take them from a Secret, never from a value.
var secretVars = []string{
	"SLACK_BOT_TOKEN", "SLACK_SIGNING_SECRET", "SLACK_APP_TOKEN", "API_KEYS", "RECEIPT_KEY",
	"RECEIPT_KEY_PREVIOUS", "OPENAI_API_KEY", "ANTHROPIC_API_KEY",
}

// valueSets are the installs the tests render, by name: the defaults and
// each way an operator departs from them.
var valueSets = map[string]string{
	"default": ``,
	"ingress": `
expose: ingress
ingress:
  className: contour
  annotations: {team: approvals}
  mcp: {annotations: {projectcontour.io/response-timeout: 2h5m}}
`,
	"sentinel": `
redis:
  mode: sentinel
  waitReplicas: 1
  sentinel:
    hosts: ["slackbot-redis-node-0.slackbot-redis-headless:26379", "slackbot-redis-node-1.slackbot-redis-headless:26379"]
    masterName: slackbot
  auth:
    existingSecret: slackbot-redis
    passwordKey: password
`,
	"standalone": `
redis:
  mode: standalone
  tls: true
  standalone: {host: my-redis.example.com, port: 6380}
  auth: {passwordKey: REDIS_PASSWORD}
`,
	"monitoring": `
serviceMonitor: {enabled: true, labels: {release: prometheus}}
prometheusRule: {enabled: true, labels: {release: prometheus}}
dashboard: {enabled: true, annotations: {grafana_folder: slackbot}}
`,
	"existing-secret": `
existingSecret: team-a-slackbot
fullnameOverride: approvals
`,
	// Every setting of the README's configuration table that the chart
	// sets from a value.
	"everything": `
slack: {socketMode: true, apiURL: "https://slack.example.com/api/"}
publicURL: https://approvals.example.com
tlsSecret: slackbot-pod-tls
model: openai:gpt-4o-mini
openaiBaseURL: http://llm.internal:8000/v1
tools: demo
api: {maxOpen: 50, rate: 5}
log: {level: debug, format: text}
tracing: {endpoint: "http://otel-collector:4318", protocol: http/protobuf, sampler: parentbased_traceidratio, samplerArg: "0.1"}
serviceMonitor: {enabled: true, tlsConfig: {insecureSkipVerify: true}}
networkPolicy:
  ingressFrom: [{namespaceSelector: {matchLabels: {kubernetes.io/metadata.name: gateway}}}]
  extraEgress: [{ports: [{port: 4318, protocol: TCP}]}]
expose: none
routesFile: |
  # a file keeps its comments
  routes:
    - name: everything
      channel: C0EVERYTHING
      approvers:
        users: ["U0ALICE"]
`,
}

// object is one rendered object: its template, its kind and its value
// decoded into its API type.
type object struct {
	template string
	key      string // Kind/name
	value    any
}

// rendered is one install's objects by Kind/name, and its notes.
type rendered struct {
	objects map[string]object
	notes   string
}

// TestMain quiets Helm's loader, which logs every symlink it follows
// (files/, see TestChartFilesLinkToMonitoring) at each load; anything
// else it logs still shows.
func TestMain(m *testing.M) {
	next := slog.Default().Handler()
	slog.SetDefault(slog.New(quiet{next}))
	os.Exit(m.Run())
}

// quiet drops the loader's "found symbolic link" records.
type quiet struct{ slog.Handler }

func (q quiet) Handle(ctx context.Context, r slog.Record) error {
	if strings.HasPrefix(r.Message, "found symbolic link") {
		return nil
	}
	return q.Handler.Handle(ctx, r)
}

// loadChart loads the chart directory as `helm install ./slackbot` would.
func loadChart(t *testing.T) *chart.Chart {
	t.Helper()
	c, err := loader.LoadDir(chartDir)
	if err != nil {
		t.Fatalf("load chart: %v", err)
	}
	return c
}

// values parses a value set as `--values` would.
func values(t *testing.T, name string) map[string]any {
	t.Helper()
	src, ok := valueSets[name]
	if !ok {
		t.Fatalf("no value set %q", name)
	}
	v, err := common.ReadValues([]byte(src))
	if err != nil {
		t.Fatalf("value set %s: %v", name, err)
	}
	return v
}

// render renders the chart with vals, as `helm template` does, in strict
// mode (a reference to a value that does not exist is an error), and
// decodes every object strictly.
func render(t *testing.T, c *chart.Chart, vals map[string]any) rendered {
	t.Helper()
	top, err := chartutil.ToRenderValues(c, vals, common.ReleaseOptions{Name: release, Namespace: namespace, IsInstall: true}, nil)
	if err != nil {
		t.Fatalf("values: %v", err)
	}
	out, err := engine.Engine{Strict: true}.RenderWithContext(t.Context(), c, top)
	if err != nil {
		t.Fatalf("render: %v", err)
	}
	r := rendered{objects: map[string]object{}}
	for _, name := range slices.Sorted(maps.Keys(out)) {
		text := out[name]
		switch {
		case strings.HasSuffix(name, "NOTES.txt"):
			r.notes = text
			continue
		case strings.HasSuffix(name, ".tpl"):
			continue
		}
		for i, doc := range splitDocs(text) {
			o := decodeStrictly(t, fmt.Sprintf("%s document %d", filepath.Base(name), i+1), doc)
			if _, dup := r.objects[o.key]; dup {
				t.Errorf("%s: %s rendered twice", name, o.key)
			}
			r.objects[o.key] = o
		}
	}
	return r
}

// splitDocs splits a rendered template into its YAML documents, leaving
// out those that are empty or only comments.
func splitDocs(text string) []string {
	var docs []string
	for doc := range strings.SplitSeq("\n"+text, "\n---") {
		meaningful := false
		for line := range strings.SplitSeq(doc, "\n") {
			if l := strings.TrimSpace(line); l != "" && !strings.HasPrefix(l, "#") {
				meaningful = true
				break
			}
		}
		if meaningful {
			docs = append(docs, doc)
		}
	}
	return docs
}

// decodeStrictly decodes one YAML document into its API type, refusing
// duplicate keys and unknown fields (a typo, or a field of another API
// version, that the API server would reject or drop).
func decodeStrictly(t *testing.T, where, doc string) object {
	t.Helper()
	raw, err := yaml.YAMLToJSONStrict([]byte(doc))
	if err != nil {
		t.Fatalf("%s: %v\n%s", where, err, doc)
	}
	var meta struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
		Metadata   struct {
			Name      string `json:"name"`
			Namespace string `json:"namespace"`
		} `json:"metadata"`
	}
	if err := json.Unmarshal(raw, &meta); err != nil {
		t.Fatalf("%s: %v", where, err)
	}
	typ, ok := apiTypes[meta.APIVersion+"/"+meta.Kind]
	if !ok {
		t.Fatalf("%s: %s %s has no API type in apiTypes: add it", where, meta.APIVersion, meta.Kind)
	}
	if meta.Metadata.Name == "" {
		t.Errorf("%s: %s has no name", where, meta.Kind)
	}
	if meta.Metadata.Namespace != "" {
		t.Errorf("%s: %s/%s names namespace %s; leave it to helm -n", where, meta.Kind, meta.Metadata.Name, meta.Metadata.Namespace)
	}
	v := reflect.New(typ).Interface()
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		t.Errorf("%s: %s/%s does not decode strictly into %s: %v", where, meta.Kind, meta.Metadata.Name, typ, err)
	}
	return object{template: where, key: meta.Kind + "/" + meta.Metadata.Name, value: v}
}

// get returns the object key of r as T, failing the test when it is absent.
func get[T any](t *testing.T, r rendered, key string) *T {
	t.Helper()
	o, ok := r.objects[key]
	if !ok {
		t.Fatalf("no %s rendered (have %s)", key, strings.Join(slices.Sorted(maps.Keys(r.objects)), ", "))
	}
	v, ok := o.value.(*T)
	if !ok {
		t.Fatalf("%s is a %T", key, o.value)
	}
	return v
}

// kinds returns the rendered objects' keys, sorted.
func kinds(r rendered) []string { return slices.Sorted(maps.Keys(r.objects)) }

// The chart passes Helm's linter, with its default values and every value
// set, with no error and no warning.
func TestChartLints(t *testing.T) {
	t.Parallel()
	for _, name := range slices.Sorted(maps.Keys(valueSets)) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			res := lint.RunAll(chartDir, values(t, name), namespace)
			for _, m := range res.Messages {
				if m.Severity >= support.WarningSev {
					t.Error(m)
				} else {
					t.Log(m)
				}
			}
		})
	}
}

// files/alerts.yaml and files/dashboard.json are symlinks to the canonical
// files in deploy/monitoring, and Helm's loader follows them: the chart
// carries their contents.
func TestChartFilesLinkToMonitoring(t *testing.T) {
	t.Parallel()
	c := loadChart(t)
	for _, f := range []struct{ inChart, canonical string }{
		{"files/alerts.yaml", "deploy/monitoring/alerts.yaml"},
		{"files/dashboard.json", "deploy/monitoring/dashboard.json"},
	} {
		fi, err := os.Lstat(filepath.Join(chartDir, f.inChart))
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode()&os.ModeSymlink == 0 {
			t.Errorf("%s is a copy: make it a symlink to %s, so the two never drift", f.inChart, f.canonical)
		}
		want, err := os.ReadFile(filepath.Join(repoRoot, f.canonical))
		if err != nil {
			t.Fatal(err)
		}
		var got []byte
		for _, cf := range c.Files {
			if cf.Name == f.inChart {
				got = cf.Data
			}
		}
		if !bytes.Equal(got, want) {
			t.Errorf("the loaded chart's %s (%d bytes) is not %s (%d bytes)", f.inChart, len(got), f.canonical, len(want))
		}
	}
}

// Each value set renders what it asks for, every object decodes strictly,
// and the Deployment agrees with slackbot, the Service and the routes.
func TestChartRenders(t *testing.T) {
	t.Parallel()
	c := loadChart(t)
	base := []string{"ConfigMap/slackbot-routes", "Deployment/slackbot", "NetworkPolicy/slackbot", "PodDisruptionBudget/slackbot", "Service/slackbot"}
	gateway := []string{"HTTPRoute/slackbot", "HTTPRoute/slackbot-https-redirect"}
	want := map[string][]string{
		"default":         append(slices.Clone(base), gateway...),
		"ingress":         append(slices.Clone(base), "Ingress/slackbot", "Ingress/slackbot-mcp", "Ingress/slackbot-v1"),
		"sentinel":        append(slices.Clone(base), gateway...),
		"standalone":      append(slices.Clone(base), gateway...),
		"monitoring":      append(slices.Clone(base), append(slices.Clone(gateway), "ConfigMap/slackbot-dashboard", "PrometheusRule/slackbot", "ServiceMonitor/slackbot")...),
		"existing-secret": {"ConfigMap/approvals-routes", "Deployment/approvals", "HTTPRoute/approvals", "HTTPRoute/approvals-https-redirect", "NetworkPolicy/approvals", "PodDisruptionBudget/approvals", "Service/approvals"},
		"everything":      append(slices.Clone(base), "ServiceMonitor/slackbot"),
	}
	for _, name := range slices.Sorted(maps.Keys(valueSets)) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			vals := values(t, name)
			r := render(t, c, vals)
			got, w := kinds(r), slices.Sorted(slices.Values(want[name]))
			if !slices.Equal(got, w) {
				t.Errorf("rendered %v, want %v", got, w)
			}
			checkInstall(t, r, vals)
			if r.notes == "" {
				t.Error("NOTES.txt rendered empty")
			}
		})
	}
}

// checkInstall checks what holds for every install: the Deployment's
// variables, Secrets, probes, volumes and labels, the Service, the routes,
// the PodDisruptionBudget, the NetworkPolicy and the ConfigMaps.
func checkInstall(t *testing.T, r rendered, vals map[string]any) {
	t.Helper()
	fullname := release
	if s, _ := vals["fullnameOverride"].(string); s != "" {
		fullname = s
	}
	secret := "slackbot"
	if s, _ := vals["existingSecret"].(string); s != "" {
		secret = s
	}
	dep := get[appsv1.Deployment](t, r, "Deployment/"+fullname)
	svc := get[corev1.Service](t, r, "Service/"+fullname)
	routes := get[corev1.ConfigMap](t, r, "ConfigMap/"+fullname+"-routes")
	pod := dep.Spec.Template
	if len(pod.Spec.Containers) != 1 {
		t.Fatalf("%d containers, want 1", len(pod.Spec.Containers))
	}
	ctr := pod.Spec.Containers[0]

	// Labels: the Deployment selects its pods; the Service, the PDB, the
	// NetworkPolicy and the topology spread select the same pods.
	podLabels := pod.Labels
	if !selects(dep.Spec.Selector.MatchLabels, podLabels) {
		t.Errorf("Deployment selector %v does not select its pods %v", dep.Spec.Selector.MatchLabels, podLabels)
	}
	if !selects(svc.Spec.Selector, podLabels) {
		t.Errorf("Service selector %v does not select the pods %v", svc.Spec.Selector, podLabels)
	}
	for _, tsc := range pod.Spec.TopologySpreadConstraints {
		if tsc.LabelSelector == nil || !selects(tsc.LabelSelector.MatchLabels, podLabels) {
			t.Errorf("topology spread on %s does not select the pods", tsc.TopologyKey)
		}
	}
	if o, ok := r.objects["PodDisruptionBudget/"+fullname]; ok {
		pdb := o.value.(*policyv1.PodDisruptionBudget)
		if !selects(pdb.Spec.Selector.MatchLabels, podLabels) {
			t.Error("PodDisruptionBudget does not select the pods")
		}
		if pdb.Spec.MinAvailable == nil || pdb.Spec.MinAvailable.IntValue() >= int(*dep.Spec.Replicas) {
			t.Errorf("PodDisruptionBudget minAvailable %v with %d replicas: a drain could never evict one", pdb.Spec.MinAvailable, *dep.Spec.Replicas)
		}
	}

	// Environment: every variable is one slackbot reads, or is referred
	// to as $(NAME) by one; secrets come only from Secrets; the routing
	// file is where ROUTES_FILE points.
	reads := slackbotReads(t)
	env := map[string]corev1.EnvVar{}
	for _, e := range ctr.Env {
		if _, dup := env[e.Name]; dup {
			t.Errorf("%s is set twice", e.Name)
		}
		env[e.Name] = e
	}
	for name, e := range env {
		if !reads[name] && !referred(ctr.Env, name) {
			t.Errorf("the Deployment sets %s, which slackbot does not read (cmd/slackbot/config.go, tracing.go)", name)
		}
		if slices.Contains(secretVars, name) || name == "SLACKBOT_REDIS_PASSWORD" {
			if e.ValueFrom == nil || e.ValueFrom.SecretKeyRef == nil {
				t.Errorf("%s is a secret but not taken from a Secret: %+v", name, e)
			}
		}
		if ref := e.ValueFrom; ref != nil && ref.SecretKeyRef != nil && name != "SLACKBOT_REDIS_PASSWORD" && ref.SecretKeyRef.Name != secret {
			t.Errorf("%s comes from Secret %s, want existingSecret %s", name, ref.SecretKeyRef.Name, secret)
		}
	}
	for _, required := range []string{"SLACK_BOT_TOKEN", "REDIS_URL", "ROUTES_FILE", "ADDR", "REDIS_WAIT_REPLICAS"} {
		if _, ok := env[required]; !ok {
			t.Errorf("%s is not set", required)
		}
	}
	if u := env["REDIS_URL"]; u.ValueFrom == nil {
		// A built URL carries the password only as a reference.
		parsed, err := url.Parse(strings.NewReplacer("$(", "", ")", "").Replace(u.Value))
		if err != nil {
			t.Errorf("REDIS_URL %q: %v", u.Value, err)
		} else if p, ok := parsed.User.Password(); ok && !strings.Contains(u.Value, ":$(SLACKBOT_REDIS_PASSWORD)@") {
			t.Errorf("REDIS_URL carries a password (%d characters) as a value", len(p))
		}
	}
	if got := env["ROUTES_FILE"].Value; got != routesPath {
		t.Errorf("ROUTES_FILE %q, want %s", got, routesPath)
	}
	if got, want := env["ADDR"].Value, fmt.Sprintf(":%d", ctr.Ports[0].ContainerPort); got != want {
		t.Errorf("ADDR %q, want %q (the container port)", got, want)
	}

	// The routing file: mounted where ROUTES_FILE points, loads with
	// slackbot's loader, and the pods carry its checksum so a change
	// rolls them.
	mounted := false
	for _, m := range ctr.VolumeMounts {
		if m.MountPath == filepath.Dir(routesPath) {
			for _, v := range pod.Spec.Volumes {
				if v.Name == m.Name && v.ConfigMap != nil && v.ConfigMap.Name == routes.Name {
					mounted = true
				}
			}
		}
	}
	if !mounted {
		t.Errorf("ConfigMap %s is not mounted at %s", routes.Name, filepath.Dir(routesPath))
	}
	file := routes.Data[filepath.Base(routesPath)]
	tmp := filepath.Join(t.TempDir(), "routes.yaml")
	if err := os.WriteFile(tmp, []byte(file), 0o600); err != nil {
		t.Fatal(err)
	}
	rs, err := routing.LoadRoutes(tmp)
	if err != nil {
		t.Fatalf("the rendered routing file does not load: %v\n%s", err, file)
	}
	sum := sha256.Sum256([]byte(strings.TrimSuffix(file, "\n")))
	if got := pod.Annotations["checksum/routes"]; got != hex.EncodeToString(sum[:]) {
		t.Errorf("checksum/routes %q is not the routing file's sha256", got)
	}

	// Probes on slackbot's routes, on the container's port.
	handled := slackbotRoutes(t)
	for name, p := range map[string]*corev1.Probe{"startup": ctr.StartupProbe, "liveness": ctr.LivenessProbe, "readiness": ctr.ReadinessProbe} {
		if p == nil || p.HTTPGet == nil {
			t.Errorf("no HTTP %s probe", name)
			continue
		}
		if !handled["GET "+p.HTTPGet.Path] {
			t.Errorf("%s probe on %s, which cmd/slackbot/routes.go does not serve", name, p.HTTPGet.Path)
		}
		if p.HTTPGet.Port.String() != ctr.Ports[0].Name {
			t.Errorf("%s probe on port %s, want %s", name, p.HTTPGet.Port.String(), ctr.Ports[0].Name)
		}
	}
	if ctr.LivenessProbe.HTTPGet.Path != "/healthz" || ctr.ReadinessProbe.HTTPGet.Path != "/readyz" {
		t.Errorf("liveness on %s, readiness on %s; want /healthz and /readyz (readiness checks Redis, liveness must not)",
			ctr.LivenessProbe.HTTPGet.Path, ctr.ReadinessProbe.HTTPGet.Path)
	}

	// The Service sends its port to the container's.
	if len(svc.Spec.Ports) != 1 || svc.Spec.Ports[0].TargetPort.String() != ctr.Ports[0].Name {
		t.Errorf("Service ports %+v, want one to the container's port %s", svc.Spec.Ports, ctr.Ports[0].Name)
	}

	// No ConfigMap carries a secret.
	for _, o := range r.objects {
		if cm, ok := o.value.(*corev1.ConfigMap); ok {
			for k, v := range cm.Data {
				if m := secretLike.FindString(v); m != "" {
					t.Errorf("ConfigMap %s key %s carries what looks like a secret (%.8s…)", cm.Name, k, m)
				}
			}
		}
	}

	// The public routes, whichever way in.
	for _, o := range r.objects {
		switch v := o.value.(type) {
		case *gatewayv1.HTTPRoute:
			if strings.HasSuffix(v.Name, "-https-redirect") {
				checkRedirect(t, v)
				continue
			}
			got := httpRoutePaths(t, v, svc)
			if !slices.Equal(slices.Sorted(maps.Keys(got)), publicPaths) {
				t.Errorf("HTTPRoute %s routes %v, want exactly %v", v.Name, slices.Sorted(maps.Keys(got)), publicPaths)
			}
			// An MCP call waits as long as its route's timeout, and a
			// minute past it; the Gateway must not cut it first.
			longest := time.Duration(0)
			for _, route := range rs.Routes {
				longest = max(longest, route.Timeout)
			}
			if d, err := time.ParseDuration(got["Exact /mcp"]); err != nil || (d != 0 && d < longest+time.Minute) {
				t.Errorf("/mcp's request timeout %q is shorter than the routing file's longest timeout %s plus a minute", got["Exact /mcp"], longest)
			}
		case *networkingv1.NetworkPolicy:
			checkNetworkPolicy(t, v, podLabels, ctr.Ports[0].Name)
		}
	}
	if ing := ingressPaths(t, r, svc); len(ing) > 0 && !slices.Equal(ing, publicPaths) {
		t.Errorf("the Ingresses route %v, want exactly %v", ing, publicPaths)
	}
}

// secretLike matches what must never be in a ConfigMap: Slack tokens, a
// URL with a password, an API key or private key.
var secretLike = regexp.MustCompile(`xox[abpe]-|xapp-|sk-[A-Za-z0-9]{8}|://[^/\s:@]*:[^@/\s$][^@/\s]*@|-----BEGIN [A-Z ]*PRIVATE KEY`)

// selects reports whether selector's labels are all among labels.
func selects(selector, labels map[string]string) bool {
	if len(selector) == 0 {
		return false
	}
	for k, v := range selector {
		if labels[k] != v {
			return false
		}
	}
	return true
}

// referred reports whether another variable refers to name as $(name).
func referred(env []corev1.EnvVar, name string) bool {
	for _, e := range env {
		if e.Name != name && strings.Contains(e.Value, "$("+name+")") {
			return true
		}
	}
	return false
}

// httpRoutePaths returns the route's path matches ("Type value") with
// their request timeouts, checking that every rule sends to the Service.
func httpRoutePaths(t *testing.T, route *gatewayv1.HTTPRoute, svc *corev1.Service) map[string]string {
	t.Helper()
	paths := map[string]string{}
	for _, rule := range route.Spec.Rules {
		for _, b := range rule.BackendRefs {
			if svc != nil && (string(b.Name) != svc.Name || b.Port == nil || int32(*b.Port) != svc.Spec.Ports[0].Port) {
				t.Errorf("HTTPRoute %s sends to %s:%v, want Service %s port %d", route.Name, b.Name, b.Port, svc.Name, svc.Spec.Ports[0].Port)
			}
		}
		timeout := ""
		if rule.Timeouts != nil && rule.Timeouts.Request != nil {
			timeout = string(*rule.Timeouts.Request)
		}
		for _, m := range rule.Matches {
			if m.Path != nil && m.Path.Type != nil && m.Path.Value != nil {
				paths[fmt.Sprintf("%s %s", *m.Path.Type, *m.Path.Value)] = timeout
			}
		}
	}
	return paths
}

// ingressPaths returns the paths of every rendered Ingress, as Gateway API
// matches, checking that each sends to the Service's port.
func ingressPaths(t *testing.T, r rendered, svc *corev1.Service) []string {
	t.Helper()
	var paths []string
	for _, o := range r.objects {
		ing, ok := o.value.(*networkingv1.Ingress)
		if !ok {
			continue
		}
		for _, rule := range ing.Spec.Rules {
			for _, p := range rule.HTTP.Paths {
				if p.Backend.Service == nil || p.Backend.Service.Name != svc.Name || p.Backend.Service.Port.Name != svc.Spec.Ports[0].Name {
					t.Errorf("Ingress %s path %s does not send to Service %s port %s", ing.Name, p.Path, svc.Name, svc.Spec.Ports[0].Name)
				}
				typ := map[networkingv1.PathType]string{networkingv1.PathTypePrefix: "PathPrefix", networkingv1.PathTypeExact: "Exact"}[*p.PathType]
				paths = append(paths, typ+" "+p.Path)
			}
		}
	}
	slices.Sort(paths)
	return paths
}

// checkRedirect checks that a route only redirects to HTTPS.
func checkRedirect(t *testing.T, r *gatewayv1.HTTPRoute) {
	t.Helper()
	if len(r.Spec.Rules) != 1 || len(r.Spec.Rules[0].BackendRefs) != 0 || len(r.Spec.Rules[0].Filters) != 1 ||
		r.Spec.Rules[0].Filters[0].RequestRedirect == nil || r.Spec.Rules[0].Filters[0].RequestRedirect.Scheme == nil ||
		*r.Spec.Rules[0].Filters[0].RequestRedirect.Scheme != "https" {
		t.Errorf("HTTPRoute %s: want one rule that only redirects to https", r.Name)
	}
}

// checkNetworkPolicy checks that the policy covers slackbot's pods, lets
// in only the HTTP port, and lets out DNS, Redis and HTTPS.
func checkNetworkPolicy(t *testing.T, np *networkingv1.NetworkPolicy, podLabels map[string]string, port string) {
	t.Helper()
	if !selects(np.Spec.PodSelector.MatchLabels, podLabels) {
		t.Error("NetworkPolicy does not select the pods")
	}
	if !slices.Equal(np.Spec.PolicyTypes, []networkingv1.PolicyType{networkingv1.PolicyTypeIngress, networkingv1.PolicyTypeEgress}) {
		t.Errorf("NetworkPolicy policyTypes %v, want Ingress and Egress", np.Spec.PolicyTypes)
	}
	for _, in := range np.Spec.Ingress {
		if len(in.Ports) != 1 || in.Ports[0].Port == nil || in.Ports[0].Port.String() != port {
			t.Errorf("NetworkPolicy lets in %+v, want only port %s", in.Ports, port)
		}
	}
	out := map[string]bool{}
	for _, e := range np.Spec.Egress {
		for _, p := range e.Ports {
			out[fmt.Sprintf("%s/%s", *p.Protocol, p.Port.String())] = true
		}
	}
	for _, want := range []string{"UDP/53", "TCP/53", "TCP/6379", "TCP/26379", "TCP/443"} {
		if !out[want] {
			t.Errorf("NetworkPolicy does not let out %s (have %v)", want, slices.Sorted(maps.Keys(out)))
		}
	}
}
