package helm_test

// The chart against the rest of the repository: slackbot's configuration
// and routes (read from cmd/slackbot's source: this package cannot import
// package main), the README's configuration table, deploy/kubernetes and
// deploy/monitoring.

import (
	"go/ast"
	"go/parser"
	"go/token"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
	"sigs.k8s.io/yaml"
)

// runtimeVars are variables set for the Go runtime, not read by slackbot.
var runtimeVars = []string{"GOMEMLIMIT"}

var (
	readsOnce sync.Once
	reads     map[string]bool
	readsErr  error
)

// slackbotReads returns every variable slackbot reads: the env tags of
// Config (cmd/slackbot/config.go), the tracingVars (tracing.go), and the
// Go runtime's.
func slackbotReads(t *testing.T) map[string]bool {
	t.Helper()
	readsOnce.Do(func() {
		reads = map[string]bool{}
		for _, v := range runtimeVars {
			reads[v] = true
		}
		fset := token.NewFileSet()
		for _, name := range []string{"config.go", "tracing.go"} {
			f, err := parser.ParseFile(fset, filepath.Join(repoRoot, "cmd/slackbot", name), nil, parser.SkipObjectResolution)
			if err != nil {
				readsErr = err
				return
			}
			ast.Inspect(f, func(n ast.Node) bool {
				switch n := n.(type) {
				case *ast.TypeSpec:
					if st, ok := n.Type.(*ast.StructType); ok && n.Name.Name == "Config" {
						for _, field := range st.Fields.List {
							if field.Tag != nil {
								tag, _ := strconv.Unquote(field.Tag.Value)
								if env := reflect.StructTag(tag).Get("env"); env != "" {
									reads[env] = true
								}
							}
						}
					}
				case *ast.ValueSpec:
					if len(n.Names) == 1 && n.Names[0].Name == "tracingVars" && len(n.Values) == 1 {
						for _, elt := range n.Values[0].(*ast.CompositeLit).Elts {
							if s, err := strconv.Unquote(elt.(*ast.BasicLit).Value); err == nil {
								reads[s] = true
							}
						}
					}
				}
				return true
			})
		}
		if !reads["SLACK_BOT_TOKEN"] || !reads["OTEL_EXPORTER_OTLP_ENDPOINT"] {
			readsErr = errNotFound("Config's env tags or tracingVars in cmd/slackbot")
		}
	})
	if readsErr != nil {
		t.Fatal(readsErr)
	}
	return reads
}

type errNotFound string

func (e errNotFound) Error() string { return "not found: " + string(e) }

// slackbotRoutes returns the patterns cmd/slackbot/routes.go serves
// ("GET /healthz", "/v1/", …): the string literals mux.Handle is given.
func slackbotRoutes(t *testing.T) map[string]bool {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), filepath.Join(repoRoot, "cmd/slackbot/routes.go"), nil, parser.SkipObjectResolution)
	if err != nil {
		t.Fatal(err)
	}
	routes := map[string]bool{}
	ast.Inspect(f, func(n ast.Node) bool {
		call, ok := n.(*ast.CallExpr)
		if !ok || len(call.Args) != 2 {
			return true
		}
		if sel, ok := call.Fun.(*ast.SelectorExpr); ok && sel.Sel.Name == "Handle" {
			if lit, ok := call.Args[0].(*ast.BasicLit); ok {
				if s, err := strconv.Unquote(lit.Value); err == nil {
					routes[s] = true
				}
			}
		}
		return true
	})
	if !routes["GET /healthz"] {
		t.Fatalf("found no GET /healthz in cmd/slackbot/routes.go (found %v)", slices.Sorted(maps.Keys(routes)))
	}
	return routes
}

// readmeVars returns the variables of the README's configuration table.
func readmeVars(t *testing.T) []string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(repoRoot, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(data), "\n## Configuration\n")
	if !ok {
		t.Fatal("README.md has no Configuration section")
	}
	section, _, _ = strings.Cut(section, "\n## ")
	var vars []string
	for line := range strings.SplitSeq(section, "\n") {
		if !strings.HasPrefix(line, "| `") {
			continue
		}
		first := strings.Split(line, "|")[1]
		for _, m := range regexp.MustCompile("`([A-Z][A-Z0-9_]*)`").FindAllStringSubmatch(first, -1) {
			vars = append(vars, m[1])
		}
	}
	if len(vars) < 10 {
		t.Fatalf("found only %v in README.md's configuration table", vars)
	}
	return vars
}

// Every setting of the README's configuration table can be set through
// the chart: some value set renders it.
func TestChartSetsEveryReadmeVariable(t *testing.T) {
	t.Parallel()
	c := loadChart(t)
	set := map[string]bool{}
	for name := range valueSets {
		dep := get[appsv1.Deployment](t, render(t, c, values(t, name)), deploymentKey(name))
		for _, e := range dep.Spec.Template.Spec.Containers[0].Env {
			set[e.Name] = true
		}
	}
	for _, v := range readmeVars(t) {
		if !set[v] {
			t.Errorf("README.md's configuration table lists %s, and no value of the chart sets it", v)
		}
	}
}

func deploymentKey(valueSet string) string {
	if valueSet == "existing-secret" {
		return "Deployment/approvals"
	}
	return "Deployment/" + release
}

// The variables each value set asks for, and nothing of a secret but a
// reference to the existing Secret.
func TestChartEnvironment(t *testing.T) {
	t.Parallel()
	c := loadChart(t)
	for _, tt := range []struct {
		set  string
		want map[string]string // name: value, or "secret:NAME/KEY"
	}{
		{"default", map[string]string{
			"SLACK_BOT_TOKEN": "secret:slackbot/SLACK_BOT_TOKEN", "SLACK_SIGNING_SECRET": "secret:slackbot/SLACK_SIGNING_SECRET",
			"REDIS_URL": "secret:slackbot/REDIS_URL", "REDIS_WAIT_REPLICAS": "0", "PUBLIC_URL": "https://slackbot.example.com",
			"ROUTES_FILE": routesPath, "ADDR": ":8080", "GOMEMLIMIT": "230MiB",
		}},
		{"existing-secret", map[string]string{
			"SLACK_BOT_TOKEN": "secret:team-a-slackbot/SLACK_BOT_TOKEN", "REDIS_URL": "secret:team-a-slackbot/REDIS_URL",
			"API_KEYS": "secret:team-a-slackbot/API_KEYS?",
		}},
		{"sentinel", map[string]string{
			"SLACKBOT_REDIS_PASSWORD": "secret:slackbot-redis/password",
			"REDIS_URL": "redis+sentinel://:$(SLACKBOT_REDIS_PASSWORD)@slackbot-redis-node-0.slackbot-redis-headless:26379," +
				"slackbot-redis-node-1.slackbot-redis-headless:26379/slackbot/0?sentinel_password=$(SLACKBOT_REDIS_PASSWORD)",
			"REDIS_WAIT_REPLICAS": "1",
		}},
		{"standalone", map[string]string{
			"SLACKBOT_REDIS_PASSWORD": "secret:slackbot/REDIS_PASSWORD",
			"REDIS_URL":               "rediss://:$(SLACKBOT_REDIS_PASSWORD)@my-redis.example.com:6380/0",
		}},
		{"everything", map[string]string{
			"SLACK_APP_TOKEN": "secret:slackbot/SLACK_APP_TOKEN", "SLACK_SIGNING_SECRET": "secret:slackbot/SLACK_SIGNING_SECRET?",
			"SLACK_API_URL": "https://slack.example.com/api/", "PUBLIC_URL": "https://approvals.example.com",
			"TLS_CERT_FILE": "/etc/slackbot-tls/tls.crt", "TLS_KEY_FILE": "/etc/slackbot-tls/tls.key",
			"MODEL": "openai:gpt-4o-mini", "OPENAI_BASE_URL": "http://llm.internal:8000/v1", "TOOLS": "demo",
			"API_MAX_OPEN": "50", "API_RATE": "5", "LOG_LEVEL": "debug", "LOG_FORMAT": "text",
			"OTEL_EXPORTER_OTLP_ENDPOINT": "http://otel-collector:4318", "OTEL_TRACES_SAMPLER_ARG": "0.1",
		}},
	} {
		t.Run(tt.set, func(t *testing.T) {
			t.Parallel()
			dep := get[appsv1.Deployment](t, render(t, c, values(t, tt.set)), deploymentKey(tt.set))
			got := map[string]string{}
			var order []string
			for _, e := range dep.Spec.Template.Spec.Containers[0].Env {
				order = append(order, e.Name)
				got[e.Name] = e.Value
				if ref := e.ValueFrom; ref != nil && ref.SecretKeyRef != nil {
					got[e.Name] = "secret:" + ref.SecretKeyRef.Name + "/" + ref.SecretKeyRef.Key
					if ref.SecretKeyRef.Optional != nil && *ref.SecretKeyRef.Optional {
						got[e.Name] += "?"
					}
				}
			}
			for name, want := range tt.want {
				if got[name] != want {
					t.Errorf("%s = %q, want %q", name, got[name], want)
				}
			}
			// Kubernetes expands $(NAME) only for a variable defined before.
			if i := slices.Index(order, "SLACKBOT_REDIS_PASSWORD"); i > slices.Index(order, "REDIS_URL") {
				t.Errorf("SLACKBOT_REDIS_PASSWORD comes after REDIS_URL, which refers to it: %v", order)
			}
		})
	}
}

// A change of the routing file changes the pods' checksum annotation, so
// `helm upgrade` rolls them onto the new routes.
func TestChartRoutesChangeRollsPods(t *testing.T) {
	t.Parallel()
	c := loadChart(t)
	sum := func(set string) string {
		return get[appsv1.Deployment](t, render(t, c, values(t, set)), "Deployment/"+release).Spec.Template.Annotations["checksum/routes"]
	}
	if a, b := sum("default"), sum("everything"); a == "" || a == b {
		t.Errorf("checksum/routes %q with the default routes and %q with others: want two different checksums", a, b)
	}
}

// The monitoring objects: the ServiceMonitor scrapes /metrics on the
// Service's port, the PrometheusRule carries deploy/monitoring/alerts.yaml's
// groups as they are, and the dashboard ConfigMap its JSON.
func TestChartMonitoring(t *testing.T) {
	t.Parallel()
	c := loadChart(t)
	r := render(t, c, values(t, "monitoring"))
	svc := get[corev1.Service](t, r, "Service/"+release)
	sm := get[monitoringv1.ServiceMonitor](t, r, "ServiceMonitor/"+release)
	if !selects(sm.Spec.Selector.MatchLabels, svc.Labels) {
		t.Errorf("ServiceMonitor selects %v; the Service is labelled %v", sm.Spec.Selector.MatchLabels, svc.Labels)
	}
	if len(sm.Spec.Endpoints) != 1 || sm.Spec.Endpoints[0].Port != svc.Spec.Ports[0].Name ||
		sm.Spec.Endpoints[0].Path != "/metrics" {
		t.Errorf("ServiceMonitor endpoints %+v, want /metrics on port %s", sm.Spec.Endpoints, svc.Spec.Ports[0].Name)
	}
	if !slackbotRoutes(t)["GET /metrics"] {
		t.Error("cmd/slackbot/routes.go does not serve GET /metrics")
	}
	if job := svc.Labels[sm.Spec.JobLabel]; sm.Spec.JobLabel == "" || job != "slackbot" {
		t.Errorf("ServiceMonitor jobLabel %q gives the job %q; deploy/monitoring/alerts.yaml's rules expect job=\"slackbot\"", sm.Spec.JobLabel, job)
	}
	if sm.Labels["release"] != "prometheus" {
		t.Errorf("ServiceMonitor labels %v: serviceMonitor.labels are missing", sm.Labels)
	}

	raw, err := os.ReadFile(filepath.Join(repoRoot, "deploy/monitoring/alerts.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var file struct {
		Groups []monitoringv1.RuleGroup `json:"groups"`
	}
	if err := yaml.UnmarshalStrict(raw, &file); err != nil {
		t.Fatalf("deploy/monitoring/alerts.yaml: %v", err)
	}
	rule := get[monitoringv1.PrometheusRule](t, r, "PrometheusRule/"+release)
	if len(file.Groups) == 0 || !reflect.DeepEqual(rule.Spec.Groups, file.Groups) {
		t.Errorf("PrometheusRule groups differ from deploy/monitoring/alerts.yaml's:\n got %+v\nwant %+v", rule.Spec.Groups, file.Groups)
	}

	dash, err := os.ReadFile(filepath.Join(repoRoot, "deploy/monitoring/dashboard.json"))
	if err != nil {
		t.Fatal(err)
	}
	cm := get[corev1.ConfigMap](t, r, "ConfigMap/"+release+"-dashboard")
	if cm.Labels["grafana_dashboard"] != "1" {
		t.Errorf("dashboard ConfigMap labels %v, want grafana_dashboard: \"1\" for Grafana's sidecar", cm.Labels)
	}
	if got := cm.Data["slackbot.json"]; strings.TrimSpace(got) != strings.TrimSpace(string(dash)) {
		t.Errorf("the dashboard ConfigMap's JSON is not deploy/monitoring/dashboard.json")
	}

	// Off by default: a cluster without the Operator's CRDs installs the
	// chart as it is.
	for _, k := range kinds(render(t, c, values(t, "default"))) {
		if strings.HasPrefix(k, "ServiceMonitor/") || strings.HasPrefix(k, "PrometheusRule/") || strings.HasSuffix(k, "-dashboard") {
			t.Errorf("%s rendered with the default values", k)
		}
	}
}

// The chart's Deployment runs slackbot as deploy/kubernetes does (security
// contexts, probes, shutdown, rollout, resources), and its HTTPRoute
// routes exactly the kustomize HTTPRoute's paths with the same timeouts.
func TestChartMatchesKustomize(t *testing.T) {
	t.Parallel()
	c := loadChart(t)
	r := render(t, c, values(t, "default"))
	kdep := decodeFile[appsv1.Deployment](t, "deploy/kubernetes/deployment.yaml", "Deployment")
	kroute := decodeFile[gatewayv1.HTTPRoute](t, "deploy/kubernetes/httproute.yaml", "HTTPRoute/slackbot")
	dep := get[appsv1.Deployment](t, r, "Deployment/"+release)

	kpod, pod := kdep.Spec.Template.Spec, dep.Spec.Template.Spec
	kctr, ctr := kpod.Containers[0], pod.Containers[0]
	scheme := func(p *corev1.Probe) *corev1.Probe {
		// The chart names the scheme (HTTPS with tlsSecret); HTTP is the default.
		q := p.DeepCopy()
		if q.HTTPGet.Scheme == corev1.URISchemeHTTP {
			q.HTTPGet.Scheme = ""
		}
		return q
	}
	for _, f := range []struct {
		what      string
		got, want any
	}{
		{"pod securityContext", pod.SecurityContext, kpod.SecurityContext},
		{"container securityContext", ctr.SecurityContext, kctr.SecurityContext},
		{"automountServiceAccountToken", pod.AutomountServiceAccountToken, kpod.AutomountServiceAccountToken},
		{"terminationGracePeriodSeconds", pod.TerminationGracePeriodSeconds, kpod.TerminationGracePeriodSeconds},
		{"strategy", dep.Spec.Strategy, kdep.Spec.Strategy},
		{"replicas", dep.Spec.Replicas, kdep.Spec.Replicas},
		{"resources", ctr.Resources, kctr.Resources},
		{"lifecycle", ctr.Lifecycle, kctr.Lifecycle},
		{"startupProbe", scheme(ctr.StartupProbe), kctr.StartupProbe},
		{"livenessProbe", scheme(ctr.LivenessProbe), kctr.LivenessProbe},
		{"readinessProbe", scheme(ctr.ReadinessProbe), kctr.ReadinessProbe},
		{"ports", ctr.Ports, kctr.Ports},
		{"args", ctr.Args, kctr.Args},
		{"volume mounts", ctr.VolumeMounts, kctr.VolumeMounts},
		{"topology spread keys", spreadKeys(pod), spreadKeys(kpod)},
	} {
		if !reflect.DeepEqual(f.got, f.want) {
			t.Errorf("%s differs from deploy/kubernetes/deployment.yaml's:\n chart     %+v\n kustomize %+v", f.what, f.got, f.want)
		}
	}

	route := get[gatewayv1.HTTPRoute](t, r, "HTTPRoute/"+release)
	got, want := httpRoutePaths(t, route, nil), httpRoutePaths(t, kroute, nil)
	if !maps.Equal(got, want) {
		t.Errorf("the chart's HTTPRoute routes (path: timeout) %v, the kustomize HTTPRoute %v", got, want)
	}
}

func spreadKeys(pod corev1.PodSpec) []string {
	var keys []string
	for _, c := range pod.TopologySpreadConstraints {
		keys = append(keys, c.TopologyKey+" "+string(c.WhenUnsatisfiable))
	}
	return keys
}

// decodeFile decodes the object key ("Kind" or "Kind/name") of a
// multi-document manifest of the repository strictly into T.
func decodeFile[T any](t *testing.T, file, key string) *T {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(repoRoot, file))
	if err != nil {
		t.Fatal(err)
	}
	for i, doc := range splitDocs(string(data)) {
		o := decodeStrictly(t, file+" document "+strconv.Itoa(i+1), doc)
		if o.key == key || strings.HasPrefix(o.key, key+"/") {
			if v, ok := o.value.(*T); ok {
				return v
			}
		}
	}
	t.Fatalf("%s has no %s", file, key)
	return nil
}

// With expose: ingress, the chart's Ingresses are deploy/kubernetes/
// ingress.yaml's: the same names, paths and annotations (timeouts,
// buffering, the certificate's issuer on one only).
func TestChartIngressMatchesKustomize(t *testing.T) {
	t.Parallel()
	r := render(t, loadChart(t), map[string]any{"expose": "ingress"})
	data, err := os.ReadFile(filepath.Join(repoRoot, "deploy/kubernetes/ingress.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]*networkingv1.Ingress{}
	for i, doc := range splitDocs(string(data)) {
		o := decodeStrictly(t, "ingress.yaml document "+strconv.Itoa(i+1), doc)
		want[o.key] = o.value.(*networkingv1.Ingress)
	}
	got := map[string]*networkingv1.Ingress{}
	for k, o := range r.objects {
		if ing, ok := o.value.(*networkingv1.Ingress); ok {
			got[k] = ing
		}
	}
	if !slices.Equal(slices.Sorted(maps.Keys(got)), slices.Sorted(maps.Keys(want))) {
		t.Fatalf("the chart renders %v, deploy/kubernetes/ingress.yaml has %v", slices.Sorted(maps.Keys(got)), slices.Sorted(maps.Keys(want)))
	}
	for k, w := range want {
		g := got[k]
		if !maps.Equal(g.Annotations, w.Annotations) {
			t.Errorf("%s annotations:\n chart     %v\n kustomize %v", k, g.Annotations, w.Annotations)
		}
		if !reflect.DeepEqual(g.Spec, w.Spec) {
			t.Errorf("%s spec:\n chart     %+v\n kustomize %+v", k, g.Spec, w.Spec)
		}
	}
}
