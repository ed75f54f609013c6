package main

// Tests for deploy/ and .env.example: every YAML file parses, the
// Dockerfile, compose file, Kubernetes manifests and Slack app manifest
// hang together, and every environment variable they set is one that
// Config reads. Docker and a cluster are not available where the tests
// run, so the files are checked as text and YAML, not by running them.

import (
	"bufio"
	"bytes"
	"fmt"
	"io/fs"
	"maps"
	"net/url"
	"os"
	"path"
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
// envconfig tags, with the default each declares ("" when none).
func configVars(t *testing.T) map[string]string {
	t.Helper()
	vars := map[string]string{}
	typ := reflect.TypeFor[Config]()
	for i := range typ.NumField() {
		f := typ.Field(i)
		name := f.Tag.Get("envconfig")
		if name == "" {
			t.Fatalf("Config.%s has no envconfig tag", f.Name)
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
		if _, ok := vars[n]; !ok && !runtimeEnv[n] {
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
	var files []string
	err := filepath.WalkDir(deployDir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
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
			for _, want := range []string{"CGO_ENABLED=0", "-trimpath", "./cmd/slackbot", "main.version="} {
				if !strings.Contains(in.args, want) {
					t.Errorf("line %d: go build without %s", in.line, want)
				}
			}
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
	Restart         string   `yaml:"restart"`
	StopGracePeriod string   `yaml:"stop_grace_period"`
	ReadOnly        bool     `yaml:"read_only"`
	CapDrop         []string `yaml:"cap_drop"`
	SecurityOpt     []string `yaml:"security_opt"`
}

func TestComposeFile(t *testing.T) {
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

	if u, err := url.Parse(sb.Environment["REDIS_URL"]); err != nil || u.Hostname() != "redis" {
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

	var ing ingressSpec
	ingObj := kubeSpec(t, objs, "Ingress/slackbot", &ing)
	if !slices.ContainsFunc(slices.Sorted(maps.Keys(ingObj.Metadata.Annotations)), func(k string) bool { return strings.HasPrefix(k, "cert-manager.io/") }) {
		t.Error("Ingress has no cert-manager annotation")
	}
	var tlsHosts, paths []string
	for _, tls := range ing.Spec.TLS {
		tlsHosts = append(tlsHosts, tls.Hosts...)
	}
	for _, r := range ing.Spec.Rules {
		if !slices.Contains(tlsHosts, r.Host) {
			t.Errorf("Ingress host %q is not covered by TLS (%v)", r.Host, tlsHosts)
		}
		if pub, err := url.Parse(env["PUBLIC_URL"]); err != nil || pub.Host != r.Host {
			t.Errorf("PUBLIC_URL %q is not the Ingress host %q", env["PUBLIC_URL"], r.Host)
		}
		for _, p := range r.HTTP.Paths {
			paths = append(paths, p.Path)
			if b := p.Backend.Service; b.Name != "slackbot" || !svcPorts[b.Port.Name] {
				t.Errorf("Ingress path %s goes to %s:%s, want Service slackbot and one of its ports", p.Path, b.Name, b.Port.Name)
			}
		}
	}
	for _, want := range []string{"/slack", "/v1", "/healthz"} {
		if !slices.Contains(paths, want) {
			t.Errorf("Ingress paths %v lack %s", paths, want)
		}
	}
	if slices.Contains(paths, "/metrics") || slices.Contains(paths, "/") {
		t.Errorf("Ingress paths %v expose /metrics to the internet", paths)
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
				env[v.name] = value
			}
			if _, err := loadConfig(getenvOf(env), ModeServe); err != nil {
				t.Errorf("loadConfig(serve) with .env.example's values: %v", err)
			}
		})
	}
}

func TestSlackAppManifest(t *testing.T) {
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
