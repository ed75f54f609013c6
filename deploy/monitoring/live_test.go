package monitoring_test

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"maps"
	"math"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// scrapeLabels are the labels Prometheus adds to every series it scrapes.
var scrapeLabels = []string{"job", "instance"}

// synthetic are the series Prometheus records about a scrape itself, with
// their labels: they are in no /metrics.
var synthetic = map[string][]string{"up": scrapeLabels}

// liveRoutes is the routing file the live slackbot runs with: two routes
// and an upstream MCP server that is never there (a closed loopback port),
// so every per-route and per-server series has a value to show.
const liveRoutes = `default_timeout: 1h
mcp_servers:
  - name: tickets
    url: http://127.0.0.1:9/mcp
routes:
  - name: deploys
    when:
      tools: ["deploy_*"]
    channel: C0DEPLOYS
    approvers:
      users: ["U0ALICE"]
    timeout: 15m
  - name: default
    channel: C0APPROVALS
    approvers:
      users: ["U0ALICE"]
`

var (
	liveOnce     sync.Once
	liveFamilies map[string]*dto.MetricFamily
	liveErr      error
)

// live returns what a freshly started `slackbot dev` exports on /metrics:
// the real binary, built from this checkout, on a loopback port with its
// embedded Redis, the HTTP API and /mcp on, scraped once right after
// start-up, before anything happened, which is when an alert's series must
// already exist. It is started once for the package's tests.
func live(t *testing.T) map[string]*dto.MetricFamily {
	t.Helper()
	liveOnce.Do(func() { liveFamilies, liveErr = startAndScrape() })
	if liveErr != nil {
		t.Fatal(liveErr)
	}
	return liveFamilies
}

func startAndScrape() (map[string]*dto.MetricFamily, error) {
	dir, err := os.MkdirTemp("", "slackbot-monitoring-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	goTool, err := exec.LookPath("go")
	if err != nil {
		return nil, fmt.Errorf("no go tool to build slackbot: %w", err)
	}
	bin := filepath.Join(dir, "slackbot")
	build := exec.Command(goTool, "build", "-buildvcs=false", "-o", bin, "github.com/slackapprove/slackbot/cmd/slackbot")
	if out, err := build.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("go build slackbot: %v\n%s", err, out)
	}
	routes := filepath.Join(dir, "routes.yaml")
	if err := os.WriteFile(routes, []byte(liveRoutes), 0o600); err != nil {
		return nil, err
	}
	key := make([]byte, 32)
	_, _ = rand.Read(key)

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "dev")
	cmd.Dir = dir
	cmd.Env = []string{
		"PATH=" + os.Getenv("PATH"), "HOME=" + dir, "TMPDIR=" + dir,
		"ADDR=127.0.0.1:0", "ROUTES_FILE=" + routes, "API_KEYS=monitoring=" + hex.EncodeToString(key),
		"LOG_FORMAT=text",
	}
	// Stopped with SIGTERM, as Kubernetes does, and killed if it hangs.
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	cmd.WaitDelay = 30 * time.Second
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	var stderr strings.Builder
	cmd.Stderr = &limitedWriter{w: &stderr, n: 64 << 10}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	defer func() { cancel(); _ = cmd.Wait() }()

	base, err := listenAddr(stdout)
	if err != nil {
		return nil, fmt.Errorf("slackbot dev did not say where it listens: %v\n%s", err, stderr.String())
	}
	go func() { _, _ = io.Copy(io.Discard, stdout) }()
	fams, err := scrape(ctx, base+"/metrics")
	if err != nil {
		return nil, fmt.Errorf("%v\nslackbot's log:\n%s", err, stderr.String())
	}
	return fams, nil
}

// listenAddr reads slackbot's announcement, "slackbot dev listening on
// http://127.0.0.1:PORT", from its standard output.
func listenAddr(stdout io.Reader) (string, error) {
	sc := bufio.NewScanner(stdout)
	for sc.Scan() {
		if _, url, ok := strings.Cut(sc.Text(), " listening on "); ok {
			return strings.TrimSpace(url), nil
		}
	}
	if err := sc.Err(); err != nil {
		return "", err
	}
	return "", io.ErrUnexpectedEOF
}

// scrape fetches and parses a /metrics page in Prometheus's text format.
func scrape(ctx context.Context, url string) (map[string]*dto.MetricFamily, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "text/plain;version=0.0.4")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("scrape %s: %w", url, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("scrape %s: %s", url, resp.Status)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(io.LimitReader(resp.Body, 16<<20))
	if err != nil {
		return nil, fmt.Errorf("parse %s: %w", url, err)
	}
	return fams, nil
}

// limitedWriter keeps the first n bytes written to it.
type limitedWriter struct {
	mu sync.Mutex
	w  io.Writer
	n  int
}

func (l *limitedWriter) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.n > 0 {
		k := min(len(b), l.n)
		l.n -= k
		_, _ = l.w.Write(b[:k])
	}
	return len(b), nil
}

// series is what /metrics exports under one name a query may use: a
// family's own name, or one of a histogram's _bucket, _sum and _count.
type series struct {
	family string
	// values are the label values seen, by label name.
	values map[string]map[string]bool
}

// exportedSeries indexes the scraped families by the names a query uses.
func exportedSeries(fams map[string]*dto.MetricFamily) map[string]*series {
	out := map[string]*series{}
	add := func(name, family string, m *dto.Metric, extra map[string]string) {
		s := out[name]
		if s == nil {
			s = &series{family: family, values: map[string]map[string]bool{}}
			out[name] = s
		}
		put := func(k, v string) {
			if s.values[k] == nil {
				s.values[k] = map[string]bool{}
			}
			s.values[k][v] = true
		}
		for _, lp := range m.GetLabel() {
			put(lp.GetName(), lp.GetValue())
		}
		for k, v := range extra {
			put(k, v)
		}
	}
	for name, f := range fams {
		for _, m := range f.GetMetric() {
			switch f.GetType() {
			case dto.MetricType_HISTOGRAM:
				for _, b := range m.GetHistogram().GetBucket() {
					add(name+"_bucket", name, m, map[string]string{"le": formatLe(b.GetUpperBound())})
				}
				add(name+"_bucket", name, m, map[string]string{"le": "+Inf"})
				add(name+"_sum", name, m, nil)
				add(name+"_count", name, m, nil)
			case dto.MetricType_SUMMARY:
				for _, q := range m.GetSummary().GetQuantile() {
					add(name, name, m, map[string]string{"quantile": strconv.FormatFloat(q.GetQuantile(), 'f', -1, 64)})
				}
				add(name+"_sum", name, m, nil)
				add(name+"_count", name, m, nil)
			default:
				add(name, name, m, nil)
			}
		}
	}
	return out
}

// formatLe writes a bucket's bound as client_golang writes le.
func formatLe(b float64) string {
	if math.IsInf(b, 1) {
		return "+Inf"
	}
	return strconv.FormatFloat(b, 'f', -1, 64)
}

// checkUse returns what is wrong with u against the exported series: a
// metric slackbot does not export, a label it does not carry, a label value
// (matched literally) it never takes.
func checkUse(u use, exported map[string]*series) []string {
	var problems []string
	if ls, ok := synthetic[u.name]; ok {
		for _, l := range u.labels {
			if !slices.Contains(ls, l) {
				problems = append(problems, fmt.Sprintf("%s: %s has no label %q", u.where, u.name, l))
			}
		}
		return problems
	}
	s, ok := exported[u.name]
	if !ok {
		return []string{fmt.Sprintf("%s: slackbot exports no metric %s", u.where, u.name)}
	}
	hasLabel := func(l string) bool { return s.values[l] != nil || slices.Contains(scrapeLabels, l) }
	for _, l := range u.labels {
		if !hasLabel(l) {
			problems = append(problems, fmt.Sprintf("%s: %s has no label %q (it has %q)", u.where, u.name, l, labelNames(s)))
		}
	}
	for _, m := range u.matchers {
		if !hasLabel(m.Name) {
			problems = append(problems, fmt.Sprintf("%s: %s has no label %q (it has %q)", u.where, u.name, m.Name, labelNames(s)))
			continue
		}
		if slices.Contains(scrapeLabels, m.Name) {
			continue
		}
		for _, v := range matcherValues(m) {
			if !s.values[m.Name][v] {
				problems = append(problems, fmt.Sprintf("%s: %s{%s=%q}: no such series at start-up (values: %q)", u.where, u.name, m.Name, v, slices.Sorted(maps.Keys(s.values[m.Name]))))
			}
		}
	}
	return problems
}

func labelNames(s *series) []string { return slices.Sorted(maps.Keys(s.values)) }

// Every metric the dashboard and the rules name is one a live slackbot
// exports, from start-up, with every label they match or group by, and
// every label value they match literally: an expression over a metric that
// does not exist (a typo, a rename, a series that appears only after the
// first failure) is silently empty in Grafana and never fires in
// Prometheus.
func TestExpressionsNameExportedMetrics(t *testing.T) {
	t.Parallel()
	exported := exportedSeries(live(t))
	for _, e := range allExprs(t) {
		pe, err := promParser.ParseExpr(e.query)
		if err != nil {
			t.Errorf("%s: %v", e.where, err)
			continue
		}
		us, err := uses(e.where, pe, e.labels)
		if err != nil {
			t.Error(err)
		}
		for _, u := range us {
			for _, p := range checkUse(u, exported) {
				t.Error(p)
			}
		}
	}
}

// The dashboard shows every slackbot_ metric slackbot exports: a metric
// added to the code without a panel fails here.
func TestDashboardShowsEveryMetric(t *testing.T) {
	t.Parallel()
	exported := exportedSeries(live(t))
	shown := map[string]bool{}
	for _, e := range dashboardExprs(t) {
		pe, err := promParser.ParseExpr(e.query)
		if err != nil {
			continue // TestExpressionsParse reports it
		}
		us, _ := uses(e.where, pe, nil)
		for _, u := range us {
			if s, ok := exported[u.name]; ok {
				shown[s.family] = true
			}
		}
	}
	for name := range live(t) {
		if strings.HasPrefix(name, "slackbot_") && !shown[name] {
			t.Errorf("slackbot exports %s but no dashboard panel shows it", name)
		}
	}
}
