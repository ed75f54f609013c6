package main

// Every endpoint slackbot serves that deploy/README.md calls public is
// routed by both the HTTPRoute and the alternative Ingress, with a timeout
// that fits what it waits for; nothing else is routed, /metrics above all.
// The endpoints come from the mux patterns in routes.go, read from the
// source, so a new endpoint fails here until the README classifies it and
// the manifests route it (or deliberately do not).

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	networkingv1 "k8s.io/api/networking/v1"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/slackapprove/slackbot/httpapi"
	"github.com/slackapprove/slackbot/routing"
)

// muxPaths returns the path of every pattern (app).handler registers with a
// literal, from routes.go's syntax tree: "POST /slack/events" →
// "/slack/events", the subtree "/v1/" as is. The dev emulator's extra
// handlers (a.deps.Extra, not literals) are not served by `serve`.
func muxPaths(t *testing.T) []string {
	t.Helper()
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "routes.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	var paths []string
	for _, d := range f.Decls {
		fn, ok := d.(*ast.FuncDecl)
		if !ok || fn.Name.Name != "handler" || fn.Recv == nil {
			continue
		}
		ast.Inspect(fn.Body, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok || len(call.Args) == 0 {
				return true
			}
			sel, ok := call.Fun.(*ast.SelectorExpr)
			if !ok || (sel.Sel.Name != "Handle" && sel.Sel.Name != "HandleFunc") {
				return true
			}
			if x, ok := sel.X.(*ast.Ident); !ok || x.Name != "mux" {
				return true
			}
			lit, ok := call.Args[0].(*ast.BasicLit)
			if !ok || lit.Kind != token.STRING {
				return true // a.deps.Extra's patterns: dev only
			}
			pattern, err := strconv.Unquote(lit.Value)
			if err != nil {
				t.Fatalf("%s: %v", fset.Position(lit.Pos()), err)
			}
			// [METHOD ][HOST]/PATH; no host is used.
			p := pattern
			if _, after, ok := strings.Cut(pattern, " "); ok {
				p = strings.TrimSpace(after)
			}
			if !strings.HasPrefix(p, "/") {
				t.Fatalf("%s: pattern %q names a host or has no path: teach this test", fset.Position(lit.Pos()), pattern)
			}
			paths = append(paths, p)
			return true
		})
	}
	if len(paths) < 5 {
		t.Fatalf("found %d mux patterns in routes.go's handler (%v): has it moved?", len(paths), paths)
	}
	return paths
}

// docPath is how deploy/README.md writes a mux path: a subtree "/v1/" as
// "/v1/*".
func docPath(p string) string {
	if strings.HasSuffix(p, "/") {
		return p + "*"
	}
	return p
}

var (
	// gatewayDurationRE is gatewayv1.Duration's validation pattern: the
	// API server refuses any other string ("1.5h", "1m0.5s" pass
	// time.ParseDuration, not this).
	gatewayDurationRE = regexp.MustCompile(`^([0-9]{1,5}(h|m|s|ms)){1,4}$`)
	endpointRowRE     = regexp.MustCompile(`^\|([^|]*)\|[^|]*\|([^|]*)\|`)
	backtickPathRE    = regexp.MustCompile("`(/[^`]*)`")
)

// publicPaths reads deploy/README.md's "Public endpoints" table: for each
// path it lists (in backticks, first column), whether its third column
// says it is public ("yes…") or not ("no…").
func publicPaths(t *testing.T) map[string]bool {
	t.Helper()
	section := docSection(t, readDoc(t, filepath.Join(deployDir, "README.md")), "## Public endpoints")
	public := map[string]bool{}
	for line := range strings.Lines(section) {
		m := endpointRowRE.FindStringSubmatch(strings.TrimSpace(line))
		if m == nil || strings.HasPrefix(strings.TrimSpace(m[1]), "-") {
			continue
		}
		verdict := strings.ToLower(strings.Trim(strings.TrimSpace(m[2]), "*"))
		for _, p := range backtickPathRE.FindAllStringSubmatch(m[1], -1) {
			switch {
			case strings.HasPrefix(verdict, "yes"):
				public[p[1]] = true
			case strings.HasPrefix(verdict, "no"):
				public[p[1]] = false
			default:
				t.Errorf("deploy/README.md, Public endpoints: %s is neither yes nor no (%q)", p[1], m[2])
			}
		}
	}
	if len(public) == 0 {
		t.Fatal("deploy/README.md's Public endpoints section has no table of paths")
	}
	return public
}

// pathMatch is one path match of a manifest, with the timeouts and
// buffering of the rule or Ingress that holds it.
type pathMatch struct {
	where string
	exact bool   // Exact; else a prefix matched path element by path element
	value string // the path
	// timeouts by proxy: "HTTPRoute", or an Ingress controller's name.
	// Absent: unset (the implementation's default); 0: none.
	timeouts map[string]time.Duration
	// buffered by Ingress controller: response buffering not turned off.
	buffered map[string]bool
}

// matches applies the Gateway API's and Ingress's path semantics, which
// agree: Exact is the whole path, case-sensitive; a prefix matches by path
// elements, a trailing slash ignored ("/v1" matches "/v1" and "/v1/x", not
// "/v1x").
func (m pathMatch) matches(p string) bool {
	if m.exact {
		return p == m.value
	}
	v := strings.TrimSuffix(m.value, "/")
	return v == "" || p == v || strings.HasPrefix(p, v+"/")
}

// route is the match that serves p: an Exact match, else the longest
// prefix (both APIs' precedence).
func route(ms []pathMatch, p string) (pathMatch, bool) {
	var best pathMatch
	found := false
	for _, m := range ms {
		if !m.matches(p) {
			continue
		}
		if !found || (m.exact && !best.exact) || (m.exact == best.exact && len(m.value) > len(best.value)) {
			best, found = m, true
		}
	}
	return best, found
}

// ingressControllers are the Ingress controllers whose annotations
// ingress.yaml sets: the timeout keys, how their values read, and the
// buffering key with its "off" value.
var ingressControllers = []struct {
	name                     string
	readTimeout, sendTimeout string
	parse                    func(string) (time.Duration, error)
	buffering, off           string
}{
	{"ingress-nginx", "nginx.ingress.kubernetes.io/proxy-read-timeout", "nginx.ingress.kubernetes.io/proxy-send-timeout",
		func(s string) (time.Duration, error) {
			n, err := strconv.Atoi(s)
			return time.Duration(n) * time.Second, err
		},
		"nginx.ingress.kubernetes.io/proxy-buffering", "off"},
	{"F5 NGINX Ingress Controller", "nginx.org/proxy-read-timeout", "nginx.org/proxy-send-timeout",
		time.ParseDuration, "nginx.org/proxy-buffering", "False"},
}

// httpRouteMatches returns the HTTPRoute's path matches with each rule's
// effective timeout: the shorter of request and backendRequest, "0s"
// being none.
func httpRouteMatches(t *testing.T, r *gatewayv1.HTTPRoute) []pathMatch {
	t.Helper()
	var out []pathMatch
	for i, rule := range r.Spec.Rules {
		timeouts := map[string]time.Duration{}
		if to := rule.Timeouts; to != nil {
			for _, d := range []*gatewayv1.Duration{to.Request, to.BackendRequest} {
				if d == nil {
					continue
				}
				v, err := time.ParseDuration(string(*d))
				if err != nil || !gatewayDurationRE.MatchString(string(*d)) {
					t.Errorf("HTTPRoute %s rule %d: timeout %q is not a Gateway API duration (GEP-2257: %s; %v)", r.Name, i+1, *d, gatewayDurationRE, err)
					continue
				}
				if cur, set := timeouts["HTTPRoute"]; !set || cur == 0 || (v != 0 && v < cur) {
					timeouts["HTTPRoute"] = v
				}
			}
		}
		for _, m := range rule.Matches {
			if m.Path == nil || m.Path.Type == nil || m.Path.Value == nil {
				t.Errorf("HTTPRoute %s rule %d: a match without a path type and value matches every path", r.Name, i+1)
				continue
			}
			switch *m.Path.Type {
			case gatewayv1.PathMatchExact, gatewayv1.PathMatchPathPrefix:
			default:
				t.Errorf("HTTPRoute %s rule %d: path match %s: use Exact or PathPrefix, whose meaning is portable", r.Name, i+1, *m.Path.Type)
				continue
			}
			out = append(out, pathMatch{
				where: "HTTPRoute " + r.Name + " rule " + strconv.Itoa(i+1), exact: *m.Path.Type == gatewayv1.PathMatchExact,
				value: *m.Path.Value, timeouts: timeouts,
			})
		}
	}
	return out
}

// ingressMatches returns the path matches of every Ingress, with its
// controllers' timeout and buffering annotations.
func ingressMatches(t *testing.T, ings []*networkingv1.Ingress) []pathMatch {
	t.Helper()
	var out []pathMatch
	for _, ing := range ings {
		timeouts := map[string]time.Duration{}
		buffered := map[string]bool{}
		for _, c := range ingressControllers {
			read, okRead := ing.Annotations[c.readTimeout]
			send, okSend := ing.Annotations[c.sendTimeout]
			if okRead != okSend || read != send {
				t.Errorf("Ingress %s: %s read timeout %q and send timeout %q: set both, alike", ing.Name, c.name, read, send)
			}
			if okRead {
				d, err := c.parse(read)
				if err != nil {
					t.Errorf("Ingress %s: %s=%q: %v", ing.Name, c.readTimeout, read, err)
				}
				timeouts[c.name] = d
			}
			buffered[c.name] = ing.Annotations[c.buffering] != c.off
		}
		if ing.Spec.DefaultBackend != nil {
			t.Errorf("Ingress %s has a default backend: every path, /metrics too, would be public", ing.Name)
		}
		for _, r := range ing.Spec.Rules {
			if r.HTTP == nil {
				continue
			}
			for _, p := range r.HTTP.Paths {
				if p.PathType == nil || (*p.PathType != networkingv1.PathTypeExact && *p.PathType != networkingv1.PathTypePrefix) {
					t.Errorf("Ingress %s path %s: pathType %v; use Exact or Prefix (ImplementationSpecific means what the controller likes)", ing.Name, p.Path, p.PathType)
					continue
				}
				out = append(out, pathMatch{
					where: "Ingress " + ing.Name, exact: *p.PathType == networkingv1.PathTypeExact, value: p.Path,
					timeouts: timeouts, buffered: buffered,
				})
			}
		}
	}
	return out
}

// kubeIngresses decodes every Ingress in deploy/kubernetes strictly.
func kubeIngresses(t *testing.T, objs map[string]*kubeObject) []*networkingv1.Ingress {
	t.Helper()
	var ings []*networkingv1.Ingress
	for _, key := range slices.Sorted(func(yield func(string) bool) {
		for k := range objs {
			if strings.HasPrefix(k, "Ingress/") && !yield(k) {
				return
			}
		}
	}) {
		ings = append(ings, strictKube(t, objs[key]).(*networkingv1.Ingress))
	}
	if len(ings) == 0 {
		t.Fatal("no Ingress in deploy/kubernetes: it is the documented alternative to the Gateway API")
	}
	return ings
}

// longestRouteWait is how long an MCP call may wait for a decision with
// deploy/kubernetes/routes.yaml: its longest route timeout, plus the minute
// the gateway waits past a request's deadline (mcpgateway, ask.go).
func longestRouteWait(t *testing.T) time.Duration {
	t.Helper()
	rs, err := routing.LoadRoutes(filepath.Join(deployDir, "kubernetes", "routes.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	longest := rs.DefaultTimeout
	for _, r := range rs.Routes {
		longest = max(longest, r.Timeout)
	}
	return longest + time.Minute
}

// Slack gives up on a webhook after 3 s; a proxy timeout below that cuts
// answers Slack still waits for, and one above shortWaitMax is not short.
const (
	slackAckDeadline = 3 * time.Second
	shortWaitMax     = 30 * time.Second
	// longPollSlack is the time a long poll's answer may take after its
	// longest wait.
	longPollSlack = 15 * time.Second
)

func TestDeployRoutesEveryPublicEndpoint(t *testing.T) {
	t.Parallel()
	objs, _ := kubeObjects(t)
	hr := strictKube(t, objs["HTTPRoute/slackbot"]).(*gatewayv1.HTTPRoute)
	manifests := map[string][]pathMatch{
		"httproute.yaml": httpRouteMatches(t, hr),
		"ingress.yaml":   ingressMatches(t, kubeIngresses(t, objs)),
	}
	public := publicPaths(t)
	mcpWait := longestRouteWait(t)

	served := map[string]bool{}
	for _, p := range muxPaths(t) {
		doc := docPath(p)
		served[doc] = true
		isPublic, ok := public[doc]
		if !ok {
			t.Errorf("routes.go serves %s; deploy/README.md's Public endpoints table does not say whether it is public", doc)
			continue
		}
		// The requests that must (or must not) get through: the path,
		// and for a subtree a path inside it.
		probes := []string{p}
		if strings.HasSuffix(p, "/") {
			probes = []string{p + "x", p + "approvals/tok/results"}
		}
		for file, ms := range manifests {
			for _, probe := range probes {
				m, routed := route(ms, probe)
				switch {
				case !isPublic && routed:
					t.Errorf("%s: %s routes %s (%s %s), which deploy/README.md keeps inside the cluster", file, m.where, probe, kind(m), m.value)
				case isPublic && !routed:
					t.Errorf("%s routes no %s: deploy/README.md says it is public", file, probe)
				case isPublic:
					checkTimeouts(t, file, probe, m, mcpWait)
				}
			}
		}
	}
	for doc := range public {
		if !served[doc] {
			t.Errorf("deploy/README.md's Public endpoints table lists %s, which routes.go does not serve", doc)
		}
	}

	// /metrics above all: whatever the tables say, it is never routed.
	for file, ms := range manifests {
		for _, p := range []string{"/metrics", "/readyz"} {
			if m, ok := route(ms, p); ok {
				t.Errorf("%s: %s exposes %s to the internet (%s %s)", file, m.where, p, kind(m), m.value)
			}
		}
	}
}

func kind(m pathMatch) string {
	if m.exact {
		return "Exact"
	}
	return "Prefix"
}

// checkTimeouts checks that the match serving a public path has, for every
// proxy that reads it, a timeout that fits what the path waits for, and
// for the long waits response buffering off.
func checkTimeouts(t *testing.T, file, p string, m pathMatch, mcpWait time.Duration) {
	t.Helper()
	var (
		lo, hi time.Duration // 0: no bound
		long   bool
		why    string
	)
	switch {
	case strings.HasPrefix(p, "/v1/"):
		lo, long, why = httpapi.MaxWait+longPollSlack, true, "a /v1 long poll waits up to httpapi.MaxWait, then answers"
	case p == "/mcp":
		lo, long, why = mcpWait, true, "an MCP call waits up to routes.yaml's longest route timeout plus a minute, and a cut call is cancelled"
	case strings.HasPrefix(p, "/slack/"):
		lo, hi, why = slackAckDeadline, shortWaitMax, "Slack waits 3 s for an answer"
	default:
		hi, why = shortWaitMax, "it answers at once"
	}
	proxies := []string{"HTTPRoute"}
	if file == "ingress.yaml" {
		proxies = nil
		for _, c := range ingressControllers {
			proxies = append(proxies, c.name)
		}
	}
	for _, proxy := range proxies {
		d, set := m.timeouts[proxy]
		switch {
		case !set:
			t.Errorf("%s: %s (%s %s) sets no %s timeout: the default is the implementation's; %s", file, p, kind(m), m.value, proxy, why)
		case d == 0 && hi > 0:
			t.Errorf("%s: %s has no %s timeout, want at most %s: %s", file, p, proxy, hi, why)
		case d != 0 && d < lo:
			t.Errorf("%s: %s: %s timeout %s, want at least %s: %s", file, p, proxy, d, lo, why)
		case hi > 0 && d > hi:
			t.Errorf("%s: %s: %s timeout %s, want at most %s: %s", file, p, proxy, d, hi, why)
		}
		// The Gateway API has no buffering setting: its implementations
		// stream. An Ingress controller must be told.
		if long && m.buffered[proxy] {
			t.Errorf("%s: %s: %s buffers responses; turn it off for a streamed or long-polled answer", file, p, proxy)
		}
	}
}
