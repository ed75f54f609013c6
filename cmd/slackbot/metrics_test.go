package main

import (
	"bytes"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/slack-go/slack"

	"github.com/slackapprove/slackbot/approval"
	"github.com/slackapprove/slackbot/bot"
	"github.com/slackapprove/slackbot/httpapi"
	"github.com/slackapprove/slackbot/internal/apitest"
	"github.com/slackapprove/slackbot/routing"
	"github.com/slackapprove/slackbot/runs"
	"github.com/slackapprove/slackbot/store"
)

// contractMetrics are the metrics the dashboard and alert rules in deploy/
// are built on (issue 31's metrics contract): each must be exported from
// start-up.
var contractMetrics = []string{
	"slackbot_pending_approvals", "slackbot_pending_oldest_seconds", "slackbot_decisions_total",
	"slackbot_decision_duration_seconds", "slackbot_refused_clicks_total", "slackbot_webhook_duration_seconds",
	"slackbot_api_request_duration_seconds", "slackbot_slack_api_errors_total", "slackbot_slack_api_rate_limited_total",
	"slackbot_slack_up", "slackbot_resumes_total", "slackbot_resume_lag_seconds", "slackbot_runs_total",
	"slackbot_callbacks_total", "slackbot_redis_unconfirmed_writes_total", "slackbot_answers_unchecked_total",
	"slackbot_mcp_upstream_up", "slackbot_mcp_upstream_calls_total",
}

// scrape reads the app's live /metrics with the Prometheus text parser.
func scrape(t *testing.T, base string) map[string]*dto.MetricFamily {
	t.Helper()
	resp, err := http.Get(base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	parser := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("parse /metrics: %v", err)
	}
	return fams
}

// series finds the series of fam whose labels include want, or nil.
func series(fam *dto.MetricFamily, want map[string]string) *dto.Metric {
	if fam == nil {
		return nil
	}
	for _, m := range fam.Metric {
		ok := true
		for k, v := range want {
			if !slices.ContainsFunc(m.Label, func(l *dto.LabelPair) bool { return l.GetName() == k && l.GetValue() == v }) {
				ok = false
			}
		}
		if ok {
			return m
		}
	}
	return nil
}

// value is a counter's or gauge's value, or a histogram's count.
func value(m *dto.Metric) float64 {
	switch {
	case m.Counter != nil:
		return m.Counter.GetValue()
	case m.Gauge != nil:
		return m.Gauge.GetValue()
	case m.Histogram != nil:
		return float64(m.Histogram.GetSampleCount())
	}
	return -1
}

// TestMetricsContract scrapes a live app: every metric of the contract is
// there from start-up with its known label values at zero; a /v1 long
// poll is timed in the API histogram and not in Slack's; a click is timed
// in Slack's, and moves decisions and their duration by route and outcome.
func TestMetricsContract(t *testing.T) {
	t.Parallel()
	x := apiE2E{env: newAPIEnv(t), doc: apitest.Load(t)}
	fams := scrape(t, x.srv.URL)
	for _, name := range contractMetrics {
		if fams[name] == nil && !strings.HasPrefix(name, "slackbot_mcp_upstream_") { // no mcp_servers here: no series
			t.Errorf("/metrics lacks %s at start-up", name)
		}
	}
	if fams["slackbot_api_duration_seconds"] != nil {
		t.Error("slackbot_api_duration_seconds (never observed) is still exported")
	}
	routes, err := routing.ParseRoutes([]byte(apitest.Routes), "routes.yaml")
	if err != nil {
		t.Fatal(err)
	}
	zero := func(name string, labels map[string]string) {
		t.Helper()
		m := series(fams[name], labels)
		if m == nil {
			t.Errorf("%s%v does not exist at start-up", name, labels)
		} else if v := value(m); v != 0 {
			t.Errorf("%s%v is %v at start-up, want 0", name, labels, v)
		}
	}
	for _, r := range routeNames(routes) {
		for _, o := range approval.Outcomes {
			zero("slackbot_decisions_total", map[string]string{"route": r, "outcome": o})
		}
		zero("slackbot_decision_duration_seconds", map[string]string{"route": r, "outcome": "approved"})
		zero("slackbot_pending_approvals", map[string]string{"route": r})
		zero("slackbot_pending_oldest_seconds", map[string]string{"route": r})
	}
	for _, c := range approval.RefusalCodes {
		zero("slackbot_refused_clicks_total", map[string]string{"reason": c})
	}
	for _, m := range bot.SlackMethods {
		zero("slackbot_slack_api_errors_total", map[string]string{"method": m})
		zero("slackbot_slack_api_rate_limited_total", map[string]string{"method": m})
	}
	for _, h := range runs.ResumeHows {
		zero("slackbot_resumes_total", map[string]string{"how": h})
		zero("slackbot_resume_lag_seconds", map[string]string{"how": h})
	}
	for _, r := range runs.RunResults {
		zero("slackbot_runs_total", map[string]string{"result": r})
	}
	for _, r := range httpapi.CallbackResults {
		zero("slackbot_callbacks_total", map[string]string{"result": r})
	}
	for _, r := range bot.UncheckedReasons() {
		zero("slackbot_answers_unchecked_total", map[string]string{"reason": r})
	}
	for _, op := range store.UnconfirmedOps {
		zero("slackbot_redis_unconfirmed_writes_total", map[string]string{"op": op})
	}
	for _, op := range httpapi.Operations {
		zero("slackbot_api_request_duration_seconds", map[string]string{"door": "v1", "operation": op, "status": "2xx"})
	}
	for _, op := range []string{http.MethodPost, http.MethodGet, http.MethodDelete} {
		zero("slackbot_api_request_duration_seconds", map[string]string{"door": "mcp", "operation": op, "status": "2xx"})
	}
	zero("slackbot_webhook_duration_seconds", map[string]string{"endpoint": "interactivity", "status": "200"})

	// A request waits on the deletions route; its long poll ends after a
	// second with it still pending.
	a := x.create(t, deletion("call_1", "/tmp/report.csv", ""))
	if status, _ := x.get(t, a.Token, "1s"); status != http.StatusOK {
		t.Fatalf("long poll: got %d", status)
	}
	fams = scrape(t, x.srv.URL)
	poll := series(fams["slackbot_api_request_duration_seconds"], map[string]string{"door": "v1", "operation": httpapi.OpGet, "status": "2xx"})
	if poll == nil || poll.Histogram.GetSampleCount() != 1 || poll.Histogram.GetSampleSum() < 1 {
		t.Errorf("the long poll is not timed in the API histogram: %v", poll)
	}
	for _, m := range fams["slackbot_webhook_duration_seconds"].Metric {
		for _, l := range m.Label {
			if l.GetName() == "endpoint" && !slices.Contains(webhookEndpoints, l.GetValue()) {
				t.Errorf("the webhook histogram times a request that is not Slack's: endpoint %q", l.GetValue())
			}
		}
		if m.Histogram.GetSampleCount() != 0 {
			t.Errorf("the webhook histogram timed a request before Slack sent any: %v", m)
		}
	}
	if m := series(fams["slackbot_pending_approvals"], map[string]string{"route": "deletions"}); m == nil || value(m) != 1 {
		t.Errorf("pending on deletions: got %v, want 1", m)
	}
	if m := series(fams["slackbot_pending_oldest_seconds"], map[string]string{"route": "deletions"}); m == nil || value(m) < 1 {
		t.Errorf("oldest pending on deletions: got %v, want at least the second the poll waited", m)
	}

	card := x.apiCard(a.Token, "call_1")
	if status := x.click(alice, card, bot.ActionIDApprove); status != http.StatusOK {
		t.Fatalf("click: got %d", status)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		fams = scrape(t, x.srv.URL)
		d := series(fams["slackbot_decisions_total"], map[string]string{"route": "deletions", "outcome": "approved"})
		if d != nil && value(d) == 1 || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	want := map[string]map[string]string{
		"slackbot_decisions_total":           {"route": "deletions", "outcome": "approved"},
		"slackbot_decision_duration_seconds": {"route": "deletions", "outcome": "approved"},
		"slackbot_webhook_duration_seconds":  {"endpoint": "interactivity", "status": "200"},
	}
	for name, labels := range want {
		if m := series(fams[name], labels); m == nil || value(m) != 1 {
			t.Errorf("after the click %s%v: got %v, want 1", name, labels, m)
		}
	}
	if m := series(fams["slackbot_pending_approvals"], map[string]string{"route": "deletions"}); m == nil || value(m) != 0 {
		t.Errorf("pending on deletions after the decision: got %v, want 0", m)
	}
}

// TestAPIBuckets: the API histogram's top bucket is the longest wait a
// route allows, so a wait for a person never lands in +Inf alone.
func TestAPIBuckets(t *testing.T) {
	routes, err := routing.ParseRoutes([]byte(apitest.Routes), "routes.yaml")
	if err != nil {
		t.Fatal(err)
	}
	longest := longestWait(routes)
	if longest < httpapi.MaxWait || longest < time.Hour+time.Minute {
		t.Errorf("longest wait %s is shorter than a long poll or the default route timeout and the gateway's minute", longest)
	}
	b := apiBuckets(longest)
	if b[0] != .005 || b[len(b)-1] != longest.Seconds() || !slices.IsSorted(b) {
		t.Errorf("buckets %v: want .005 up to %v, sorted", b, longest.Seconds())
	}
	if got := apiBuckets(30 * time.Second); got[len(got)-1] != 30 || slices.Contains(got, 60) {
		t.Errorf("buckets of a 30s longest wait: %v", got)
	}
}

// TestAuthTestCounted: watchSlack's auth.test is not retried, so a 429 is
// counted as a rate limit and as a failed call; success counts nothing.
func TestAuthTestCounted(t *testing.T) {
	m := newMetrics(metricsConfig{})
	m.authTested(nil)
	m.authTested(&slack.RateLimitedError{RetryAfter: time.Second})
	m.authTested(slack.SlackErrorResponse{Err: "invalid_auth"})
	count := func(c prometheus.Counter) float64 {
		var d dto.Metric
		if err := c.Write(&d); err != nil {
			t.Fatal(err)
		}
		return d.GetCounter().GetValue()
	}
	if got := count(m.slackLimited.WithLabelValues(bot.MethodAuthTest)); got != 1 {
		t.Errorf("auth.test rate limited: %v, want 1", got)
	}
	if got := count(m.slackErrs.WithLabelValues(bot.MethodAuthTest)); got != 2 {
		t.Errorf("auth.test errors: %v, want 2", got)
	}
}
