package main

import (
	"fmt"
	"maps"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/goccy/go-yaml/ast"
	"github.com/slackapprove/slackbot/routing"
)

// Kubernetes objects, with only the fields the tests look at.
type (
	kubeObject struct {
		APIVersion string `yaml:"apiVersion"`
		Kind       string `yaml:"kind"`
		Metadata   struct {
			Name        string            `yaml:"name"`
			Namespace   string            `yaml:"namespace"`
			Labels      map[string]string `yaml:"labels"`
			Annotations map[string]string `yaml:"annotations"`
		} `yaml:"metadata"`

		file string
		doc  ast.Node
	}
	kustomization struct {
		Resources          []string `yaml:"resources"`
		ConfigMapGenerator []struct {
			Name  string   `yaml:"name"`
			Files []string `yaml:"files"`
		} `yaml:"configMapGenerator"`
	}
	labelSelector struct {
		MatchLabels map[string]string `yaml:"matchLabels"`
	}
	deploymentSpec struct {
		Spec struct {
			Replicas int           `yaml:"replicas"`
			Selector labelSelector `yaml:"selector"`
			Strategy struct {
				Type          string `yaml:"type"`
				RollingUpdate struct {
					MaxUnavailable any `yaml:"maxUnavailable"`
				} `yaml:"rollingUpdate"`
			} `yaml:"strategy"`
			Template struct {
				Metadata struct {
					Labels map[string]string `yaml:"labels"`
				} `yaml:"metadata"`
				Spec podSpec `yaml:"spec"`
			} `yaml:"template"`
		} `yaml:"spec"`
	}
	podSpec struct {
		TerminationGracePeriodSeconds int `yaml:"terminationGracePeriodSeconds"`
		SecurityContext               struct {
			RunAsNonRoot   bool `yaml:"runAsNonRoot"`
			RunAsUser      int  `yaml:"runAsUser"`
			SeccompProfile struct {
				Type string `yaml:"type"`
			} `yaml:"seccompProfile"`
		} `yaml:"securityContext"`
		TopologySpreadConstraints []any       `yaml:"topologySpreadConstraints"`
		Affinity                  any         `yaml:"affinity"`
		Containers                []container `yaml:"containers"`
		Volumes                   []struct {
			Name      string `yaml:"name"`
			ConfigMap *struct {
				Name string `yaml:"name"`
			} `yaml:"configMap"`
		} `yaml:"volumes"`
	}
	container struct {
		Name  string `yaml:"name"`
		Image string `yaml:"image"`
		Ports []struct {
			Name          string `yaml:"name"`
			ContainerPort int    `yaml:"containerPort"`
		} `yaml:"ports"`
		Env []struct {
			Name      string `yaml:"name"`
			Value     string `yaml:"value"`
			ValueFrom *struct {
				SecretKeyRef *struct {
					Name     string `yaml:"name"`
					Key      string `yaml:"key"`
					Optional bool   `yaml:"optional"`
				} `yaml:"secretKeyRef"`
			} `yaml:"valueFrom"`
		} `yaml:"env"`
		EnvFrom      []any `yaml:"envFrom"`
		VolumeMounts []struct {
			Name      string `yaml:"name"`
			MountPath string `yaml:"mountPath"`
			ReadOnly  bool   `yaml:"readOnly"`
		} `yaml:"volumeMounts"`
		Resources struct {
			Requests map[string]string `yaml:"requests"`
			Limits   map[string]string `yaml:"limits"`
		} `yaml:"resources"`
		StartupProbe    *probe `yaml:"startupProbe"`
		LivenessProbe   *probe `yaml:"livenessProbe"`
		ReadinessProbe  *probe `yaml:"readinessProbe"`
		SecurityContext struct {
			AllowPrivilegeEscalation *bool `yaml:"allowPrivilegeEscalation"`
			ReadOnlyRootFilesystem   bool  `yaml:"readOnlyRootFilesystem"`
			Capabilities             struct {
				Drop []string `yaml:"drop"`
			} `yaml:"capabilities"`
		} `yaml:"securityContext"`
		Lifecycle struct {
			PreStop *struct {
				Sleep *struct {
					Seconds int `yaml:"seconds"`
				} `yaml:"sleep"`
			} `yaml:"preStop"`
		} `yaml:"lifecycle"`
		Args []string `yaml:"args"`
	}
	probe struct {
		HTTPGet *struct {
			Path string `yaml:"path"`
			Port string `yaml:"port"`
		} `yaml:"httpGet"`
	}
	secretSpec struct {
		StringData map[string]string `yaml:"stringData"`
	}
	serviceSpec struct {
		Spec struct {
			Type      string            `yaml:"type"`
			ClusterIP string            `yaml:"clusterIP"`
			Selector  map[string]string `yaml:"selector"`
			Ports     []struct {
				Name       string `yaml:"name"`
				Port       int    `yaml:"port"`
				TargetPort string `yaml:"targetPort"`
			} `yaml:"ports"`
		} `yaml:"spec"`
	}
	ingressBackend struct {
		Service struct {
			Name string `yaml:"name"`
			Port struct {
				Name string `yaml:"name"`
			} `yaml:"port"`
		} `yaml:"service"`
	}
	ingressSpec struct {
		Spec struct {
			TLS []struct {
				Hosts      []string `yaml:"hosts"`
				SecretName string   `yaml:"secretName"`
			} `yaml:"tls"`
			Rules []struct {
				Host string `yaml:"host"`
				HTTP struct {
					Paths []struct {
						Path    string         `yaml:"path"`
						Backend ingressBackend `yaml:"backend"`
					} `yaml:"paths"`
				} `yaml:"http"`
			} `yaml:"rules"`
		} `yaml:"spec"`
	}
	pdbSpec struct {
		Spec struct {
			MinAvailable int           `yaml:"minAvailable"`
			Selector     labelSelector `yaml:"selector"`
		} `yaml:"spec"`
	}
	statefulSetSpec struct {
		Spec struct {
			ServiceName string `yaml:"serviceName"`
			Replicas    int    `yaml:"replicas"`
			Template    struct {
				Spec podSpec `yaml:"spec"`
			} `yaml:"template"`
			VolumeClaimTemplates []any `yaml:"volumeClaimTemplates"`
		} `yaml:"spec"`
	}
	networkPolicySpec struct {
		Spec struct {
			PodSelector labelSelector `yaml:"podSelector"`
			Ingress     []struct {
				From []struct {
					PodSelector labelSelector `yaml:"podSelector"`
				} `yaml:"from"`
			} `yaml:"ingress"`
		} `yaml:"spec"`
	}
)

// kubeObjects reads every object in deploy/kubernetes, keyed by
// "Kind/name", and the kustomization.
func kubeObjects(t *testing.T) (map[string]*kubeObject, kustomization) {
	t.Helper()
	dir := filepath.Join(deployDir, "kubernetes")
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	objs := map[string]*kubeObject{}
	var k kustomization
	for _, file := range files {
		switch filepath.Base(file) {
		case "kustomization.yaml":
			decodeYAML(t, file, yamlDocs(t, file)[0], &k)
			continue
		case "routes.yaml": // a routing file, for the ConfigMap generator
			continue
		}
		for i, doc := range yamlDocs(t, file) {
			o := &kubeObject{file: filepath.Base(file), doc: doc}
			decodeYAML(t, fmt.Sprintf("%s document %d", file, i+1), doc, o)
			if o.APIVersion == "" || o.Kind == "" || o.Metadata.Name == "" {
				t.Errorf("%s document %d: apiVersion, kind and metadata.name are required", file, i+1)
			}
			if o.Metadata.Namespace != "" {
				t.Errorf("%s: %s/%s names namespace %s; leave it to kubectl -n", file, o.Kind, o.Metadata.Name, o.Metadata.Namespace)
			}
			key := o.Kind + "/" + o.Metadata.Name
			if _, dup := objs[key]; dup {
				t.Errorf("%s: %s is defined twice", file, key)
			}
			objs[key] = o
		}
	}
	return objs, k
}

// kubeSpec decodes the object named key into v.
func kubeSpec(t *testing.T, objs map[string]*kubeObject, key string, v any) *kubeObject {
	t.Helper()
	o, ok := objs[key]
	if !ok {
		t.Fatalf("no %s in deploy/kubernetes (have %s)", key, strings.Join(slices.Sorted(maps.Keys(objs)), ", "))
	}
	decodeYAML(t, o.file+" "+key, o.doc, v)
	return o
}

// selects reports whether a selector's labels are all among labels.
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

func TestKubeManifests(t *testing.T) {
	t.Parallel()
	objs, kust := kubeObjects(t)

	// The kustomization lists every manifest but the Secret, whose
	// placeholders must never overwrite real values on `apply -k`, and
	// the Ingress, the alternative to the Gateway API routes it lists
	// (TestKubeGatewayRoutes).
	for _, r := range kust.Resources {
		if _, err := os.Stat(filepath.Join(deployDir, "kubernetes", r)); err != nil {
			t.Errorf("kustomization resource %s: %v", r, err)
		}
	}
	for _, o := range objs {
		listed := slices.Contains(kust.Resources, o.file)
		if o.Kind == "Secret" && listed {
			t.Errorf("kustomization lists %s: apply -k would overwrite real secrets with placeholders", o.file)
		}
		if o.Kind != "Secret" && o.Kind != "Ingress" && !listed {
			t.Errorf("%s (%s/%s) is not in kustomization.yaml", o.file, o.Kind, o.Metadata.Name)
		}
	}
	routesConfigMap := map[string]string{} // generated ConfigMap name → file key
	for _, g := range kust.ConfigMapGenerator {
		for _, f := range g.Files {
			if _, err := routing.LoadRoutes(filepath.Join(deployDir, "kubernetes", f)); err != nil {
				t.Errorf("configMapGenerator %s: %v", g.Name, err)
			}
			routesConfigMap[g.Name] = path.Base(f)
		}
	}

	var d deploymentSpec
	kubeSpec(t, objs, "Deployment/slackbot", &d)
	pod := d.Spec.Template.Spec
	podLabels := d.Spec.Template.Metadata.Labels
	if d.Spec.Replicas != 2 {
		t.Errorf("replicas %d, want 2", d.Spec.Replicas)
	}
	if !selects(d.Spec.Selector.MatchLabels, podLabels) {
		t.Errorf("selector %v does not select the pod labels %v", d.Spec.Selector.MatchLabels, podLabels)
	}
	if got := fmt.Sprint(d.Spec.Strategy.RollingUpdate.MaxUnavailable); d.Spec.Strategy.Type != "RollingUpdate" || got != "0" {
		t.Errorf("strategy %s maxUnavailable %s, want RollingUpdate with maxUnavailable 0", d.Spec.Strategy.Type, got)
	}
	if sc := pod.SecurityContext; !sc.RunAsNonRoot || sc.RunAsUser == 0 || sc.SeccompProfile.Type != "RuntimeDefault" {
		t.Errorf("pod securityContext %+v, want runAsNonRoot, a non-zero runAsUser, seccomp RuntimeDefault", sc)
	}
	if len(pod.TopologySpreadConstraints) == 0 && pod.Affinity == nil {
		t.Error("nothing spreads the replicas across nodes")
	}
	if len(pod.Containers) != 1 || pod.Containers[0].Name != "slackbot" {
		t.Fatalf("containers %+v, want one named slackbot", pod.Containers)
	}
	c := pod.Containers[0]
	if sc := c.SecurityContext; sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation || !sc.ReadOnlyRootFilesystem || !slices.Equal(sc.Capabilities.Drop, []string{"ALL"}) {
		t.Errorf("container securityContext %+v, want no privilege escalation, read-only root, capabilities dropped", sc)
	}
	for _, r := range []struct {
		what string
		m    map[string]string
		key  string
	}{{"requests", c.Resources.Requests, "cpu"}, {"requests", c.Resources.Requests, "memory"}, {"limits", c.Resources.Limits, "memory"}} {
		if r.m[r.key] == "" {
			t.Errorf("resources.%s.%s is not set", r.what, r.key)
		}
	}

	ports := map[string]int{}
	for _, p := range c.Ports {
		ports[p.Name] = p.ContainerPort
	}
	if _, port, _ := strings.Cut(configVars(t)["ADDR"], ":"); fmt.Sprint(ports["http"]) != port {
		t.Errorf("container port http is %d, want ADDR's default port %s", ports["http"], port)
	}
	for _, p := range []struct {
		name  string
		probe *probe
		path  string
	}{{"startupProbe", c.StartupProbe, "/healthz"}, {"livenessProbe", c.LivenessProbe, "/healthz"}, {"readinessProbe", c.ReadinessProbe, "/readyz"}} {
		switch {
		case p.probe == nil || p.probe.HTTPGet == nil:
			t.Errorf("%s: none, want GET %s", p.name, p.path)
		case p.probe.HTTPGet.Path != p.path:
			t.Errorf("%s GET %s, want %s", p.name, p.probe.HTTPGet.Path, p.path)
		case ports[p.probe.HTTPGet.Port] == 0:
			t.Errorf("%s port %q is not a named container port", p.name, p.probe.HTTPGet.Port)
		}
	}
	// The kubelet kills the pod terminationGracePeriodSeconds after preStop
	// starts: leave room for the sleep, then for serve's shutdown.
	if ps := c.Lifecycle.PreStop; ps == nil || ps.Sleep == nil || ps.Sleep.Seconds <= 0 {
		t.Errorf("preStop %+v: want a sleep, so the Service stops routing before SIGTERM", ps)
	} else if pod.TerminationGracePeriodSeconds <= ps.Sleep.Seconds+shutdownBudgetSeconds {
		t.Errorf("terminationGracePeriodSeconds %d, want more than preStop %ds + shutdown %ds", pod.TerminationGracePeriodSeconds, ps.Sleep.Seconds, shutdownBudgetSeconds)
	}

	// Environment: every name is Config's; secrets come from Secret
	// slackbot, which has each required key.
	var secret secretSpec
	kubeSpec(t, objs, "Secret/slackbot", &secret)
	checkEnvNames(t, "Secret slackbot", slices.Sorted(maps.Keys(secret.StringData)))
	if len(c.EnvFrom) > 0 {
		t.Error("envFrom hides which variables are set; list them under env")
	}
	env := map[string]string{}
	var names []string
	for _, e := range c.Env {
		names = append(names, e.Name)
		env[e.Name] = e.Value
		if e.ValueFrom == nil || e.ValueFrom.SecretKeyRef == nil {
			continue
		}
		ref := e.ValueFrom.SecretKeyRef
		if ref.Name != "slackbot" {
			t.Errorf("env %s comes from Secret %s, want slackbot", e.Name, ref.Name)
		}
		if _, ok := secret.StringData[ref.Key]; !ok && !ref.Optional {
			t.Errorf("env %s needs key %s, which secret.yaml lacks", e.Name, ref.Key)
		}
	}
	checkEnvNames(t, "Deployment slackbot", names)
	for _, secretVar := range []string{"SLACK_BOT_TOKEN", "SLACK_SIGNING_SECRET", "API_KEYS", "REDIS_URL"} {
		if v, ok := env[secretVar]; !ok || v != "" {
			t.Errorf("env %s: want it from Secret slackbot", secretVar)
		}
	}
	routesDir, routesFile := path.Split(env["ROUTES_FILE"])
	var routesMounted bool
	for _, m := range c.VolumeMounts {
		if path.Clean(m.MountPath) != path.Clean(routesDir) {
			continue
		}
		for _, v := range pod.Volumes {
			if v.Name == m.Name && v.ConfigMap != nil && routesConfigMap[v.ConfigMap.Name] == routesFile && m.ReadOnly {
				routesMounted = true
			}
		}
	}
	if !routesMounted {
		t.Errorf("ROUTES_FILE %q is not the routing file of a generated ConfigMap mounted read-only", env["ROUTES_FILE"])
	}

	var svc serviceSpec
	kubeSpec(t, objs, "Service/slackbot", &svc)
	if svc.Spec.Type != "ClusterIP" || !selects(svc.Spec.Selector, podLabels) {
		t.Errorf("Service type %s selector %v, want ClusterIP selecting %v", svc.Spec.Type, svc.Spec.Selector, podLabels)
	}
	svcPorts := map[string]bool{}
	for _, p := range svc.Spec.Ports {
		svcPorts[p.Name] = true
		if p.Port != 80 || ports[p.TargetPort] == 0 {
			t.Errorf("Service port %d → %s, want 80 → a named container port", p.Port, p.TargetPort)
		}
	}

	// The Ingresses (which paths they route: TestDeployRoutesEveryPublicEndpoint).
	ingObj := kubeSpec(t, objs, "Ingress/slackbot", &ingressSpec{})
	if !slices.ContainsFunc(slices.Sorted(maps.Keys(ingObj.Metadata.Annotations)), func(k string) bool { return strings.HasPrefix(k, "cert-manager.io/") }) {
		t.Error("Ingress slackbot has no cert-manager annotation")
	}
	for _, key := range slices.Sorted(maps.Keys(objs)) {
		if !strings.HasPrefix(key, "Ingress/") {
			continue
		}
		var ing ingressSpec
		kubeSpec(t, objs, key, &ing)
		var tlsHosts []string
		for _, tls := range ing.Spec.TLS {
			tlsHosts = append(tlsHosts, tls.Hosts...)
		}
		for _, r := range ing.Spec.Rules {
			if !slices.Contains(tlsHosts, r.Host) {
				t.Errorf("%s host %q is not covered by TLS (%v)", key, r.Host, tlsHosts)
			}
			if pub, err := url.Parse(env["PUBLIC_URL"]); err != nil || pub.Host != r.Host {
				t.Errorf("PUBLIC_URL %q is not the %s host %q", env["PUBLIC_URL"], key, r.Host)
			}
			for _, p := range r.HTTP.Paths {
				if b := p.Backend.Service; b.Name != "slackbot" || !svcPorts[b.Port.Name] {
					t.Errorf("%s path %s goes to %s:%s, want Service slackbot and one of its ports", key, p.Path, b.Name, b.Port.Name)
				}
			}
		}
	}

	var pdb pdbSpec
	kubeSpec(t, objs, "PodDisruptionBudget/slackbot", &pdb)
	if pdb.Spec.MinAvailable != 1 || !selects(pdb.Spec.Selector.MatchLabels, podLabels) {
		t.Errorf("PodDisruptionBudget minAvailable %d selector %v, want 1 selecting %v", pdb.Spec.MinAvailable, pdb.Spec.Selector.MatchLabels, podLabels)
	}

	// The in-cluster Redis: persistent, reachable as REDIS_URL says, with
	// the password REDIS_URL carries, and only from slackbot.
	var sts statefulSetSpec
	kubeSpec(t, objs, "StatefulSet/redis", &sts)
	redisArgs := strings.Join(sts.Spec.Template.Spec.Containers[0].Args, " ")
	if sts.Spec.Replicas != 1 || !strings.Contains(redisArgs, "--appendonly yes") || len(sts.Spec.VolumeClaimTemplates) == 0 {
		t.Errorf("Redis replicas %d args %q claims %d: want 1 replica with AOF on a volume", sts.Spec.Replicas, redisArgs, len(sts.Spec.VolumeClaimTemplates))
	}
	redisURL, err := url.Parse(secret.StringData["REDIS_URL"])
	if err != nil {
		t.Fatalf("REDIS_URL in secret.yaml: %v", err)
	}
	if _, ok := objs["Service/"+redisURL.Hostname()]; !ok || redisURL.Hostname() != sts.Spec.ServiceName {
		t.Errorf("REDIS_URL host %q is not the Redis StatefulSet's Service %q", redisURL.Hostname(), sts.Spec.ServiceName)
	}
	var redisSecret secretSpec
	kubeSpec(t, objs, "Secret/slackbot-redis", &redisSecret)
	if pw, _ := redisURL.User.Password(); pw != redisSecret.StringData["password"] {
		t.Errorf("REDIS_URL's password %q differs from Secret slackbot-redis's %q", pw, redisSecret.StringData["password"])
	}
	var np networkPolicySpec
	kubeSpec(t, objs, "NetworkPolicy/redis", &np)
	admitted := false
	for _, in := range np.Spec.Ingress {
		for _, f := range in.From {
			admitted = admitted || selects(f.PodSelector.MatchLabels, podLabels)
		}
	}
	if !admitted {
		t.Error("the Redis NetworkPolicy does not admit slackbot's pods")
	}
}
