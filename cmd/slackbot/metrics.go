package main

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/slack-go/slack"

	"github.com/slackapprove/slackbot/agentrunner/mcptools"
	"github.com/slackapprove/slackbot/approval"
	"github.com/slackapprove/slackbot/bot"
	"github.com/slackapprove/slackbot/httpapi"
	"github.com/slackapprove/slackbot/routing"
	"github.com/slackapprove/slackbot/runs"
	"github.com/slackapprove/slackbot/store"
)

// metrics are what operators watch, on a registry of their own so tests
// can run several servers in one process. The domain packages never see
// Prometheus (docs/ARCHITECTURE.md, "Import rules"): they are told of
// events through small interfaces (approval.Metrics, bot.Metrics,
// runs.Metrics, httpapi.CallbackMetrics, the store's OnUnconfirmed) that
// metrics implements.
//
// Every labelled series whose label values are known in advance exists
// at zero from start-up (zero), so that rate() and alerts have a series
// before the first event: the routes of the routing file (and
// routing.NoRouteName), the outcomes, refusal codes, Slack methods, resume
// paths, run and callback results, store operations, /v1 operations and
// MCP servers, each from the list its package exports.
type metrics struct {
	reg          *prometheus.Registry
	decisions    *prometheus.CounterVec
	decisionTime *prometheus.HistogramVec
	refused      *prometheus.CounterVec
	slackErrs    *prometheus.CounterVec
	slackLimited *prometheus.CounterVec
	webhook      *prometheus.HistogramVec
	api          *prometheus.HistogramVec
	resumes      *prometheus.CounterVec
	resumeLag    *prometheus.HistogramVec
	runs         *prometheus.CounterVec
	callbacks    *prometheus.CounterVec
	slackUp      prometheus.Gauge
	// unconfirmed counts writes REDIS_WAIT_REPLICAS replicas did not
	// confirm, by store operation.
	unconfirmed *prometheus.CounterVec
	// unchecked counts answers posted without looking for an earlier
	// post, because Slack refused the look-up, by its error code.
	unchecked     *prometheus.CounterVec
	upstreamUp    *prometheus.GaugeVec
	upstreamCalls *prometheus.CounterVec
}

// metricsConfig is what the metrics' known label values and buckets come
// from.
type metricsConfig struct {
	// Routes is the routing file; nil: no routes (only NoRouteName).
	Routes *routing.Routes
	// Pending reads the open requests by route at scrape time; nil: the
	// pending gauges are not registered.
	Pending func(ctx context.Context) (map[string]store.RoutePending, error)
	// MCPStatus reports the upstream MCP servers' state at scrape time
	// (mcptools.Toolset.Status); nil: none configured.
	MCPStatus func() []mcptools.ServerStatus
}

// Doors of the API request histogram.
const (
	doorV1  = "v1"
	doorMCP = "mcp"
)

// mcpOperations are the operations of /mcp: its HTTP methods (the
// streamable HTTP transport's POST, GET and DELETE), since the JSON-RPC
// method could be learnt only by reading the body a second time.
var mcpOperations = []string{http.MethodPost, http.MethodGet, http.MethodDelete, httpapi.OpOther}

// statusClasses are the status label values of the API request
// histogram: the class of the HTTP status, bounded whatever a handler
// answers.
var statusClasses = []string{"2xx", "4xx", "5xx"}

// webhookEndpoints are the endpoint label values of the webhook
// histogram: Slack's requests only.
var webhookEndpoints = []string{"interactivity", "events"}

// decisionBuckets time a request from opened to decided or ended: from
// a second (a policy's or a quick click) to MaxTimeout's week.
var decisionBuckets = []float64{1, 5, 15, 30, 60, 120, 300, 600, 1800, 3600, 7200, 14400, 43200, 86400, 259200, 604800}

// webhookBuckets time the acknowledgement of Slack's requests, with 3 s
// (Slack's deadline) and 5 s above the usual 2.5 s, so a late ack is seen
// as late rather than lost in +Inf.
var webhookBuckets = []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 3, 5}

// resumeLagBuckets time a decision recorded to its run resumed: direct
// resumes take milliseconds, queued ones up to the queue's block and a
// takeover's reclaim.
var resumeLagBuckets = []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 120, 300}

// apiLadder is the ladder apiBuckets climbs.
var apiLadder = []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1800, 3600, 7200, 14400, 43200, 86400, 259200, 604800}

// apiBuckets are the API request histogram's buckets, computed once at
// start-up: apiLadder up to the longest a request may take (longestWait),
// that longest itself the top bucket, so that a call that waits the whole
// time for a person lands in a bucket of its own, not in +Inf.
func apiBuckets(longest time.Duration) []float64 {
	top := longest.Seconds()
	var b []float64
	for _, v := range apiLadder {
		if v >= top {
			break
		}
		b = append(b, v)
	}
	return append(b, top)
}

// longestWait is the longest a /v1 or /mcp request may take: a /v1 long
// poll waits at most httpapi.MaxWait; an /mcp call waits for a person up
// to its request's timeout (the longest route's, or the file's default)
// and a minute more (mcpgateway), then runs the upstream tool up to its
// server's timeout.
func longestWait(rs *routing.Routes) time.Duration {
	longest := httpapi.MaxWait
	if rs == nil {
		return longest
	}
	route := max(rs.DefaultTimeout, routing.DefaultRouteTimeout)
	for _, r := range rs.Routes {
		route = max(route, r.Timeout)
	}
	var tool time.Duration
	for _, s := range rs.MCPServers {
		tool = max(tool, s.Timeout)
	}
	return max(longest, route+time.Minute+tool)
}

// routeNames are the route label values: the routing file's routes and
// NoRouteName, which decisions without a matching route are counted
// under.
func routeNames(rs *routing.Routes) []string {
	var names []string
	if rs != nil {
		for _, r := range rs.Routes {
			names = append(names, r.Name)
		}
	}
	return append(names, routing.NoRouteName)
}

// mcpServerNames are the server label values: the routing file's
// mcp_servers.
func mcpServerNames(rs *routing.Routes) []string {
	var names []string
	if rs != nil {
		for _, s := range rs.MCPServers {
			names = append(names, s.Name)
		}
	}
	return names
}

func newMetrics(cfg metricsConfig) *metrics {
	m := &metrics{
		reg: prometheus.NewRegistry(),
		decisions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "slackbot_decisions_total", Help: "Decisions recorded and calls ended without one, by route and outcome (approved, denied, answered, failed, expired, cancelled; pending: a vote recorded short of its quorum).",
		}, []string{"route", "outcome"}),
		decisionTime: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "slackbot_decision_duration_seconds", Help: "Time from a request opened to its call decided or ended without a decision, by route and outcome.",
			Buckets: decisionBuckets,
		}, []string{"route", "outcome"}),
		refused: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "slackbot_refused_clicks_total", Help: "Clicks refused, by reason.",
		}, []string{"reason"}),
		slackErrs: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "slackbot_slack_api_errors_total", Help: "Failed Slack Web API calls, by method.",
		}, []string{"method"}),
		slackLimited: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "slackbot_slack_api_rate_limited_total", Help: "Slack Web API answers of HTTP 429 (rate limited; each Retry-After is honoured), by method.",
		}, []string{"method"}),
		webhook: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "slackbot_webhook_duration_seconds", Help: "Time to acknowledge Slack's requests (/slack/*; Slack gives up after 3s), by endpoint and status.",
			Buckets: webhookBuckets,
		}, []string{"endpoint", "status"}),
		api: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "slackbot_api_request_duration_seconds", Help: "Duration of HTTP API (/v1) and MCP gateway (/mcp) requests, long polls and waits for a person included, by door, operation (the /v1 route pattern, the /mcp HTTP method) and status class.",
			Buckets: apiBuckets(longestWait(cfg.Routes)),
		}, []string{"door", "operation", "status"}),
		resumes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "slackbot_resumes_total", Help: "Waiting runs resumed, by how (direct: by the process that ended the request; queue).",
		}, []string{"how"}),
		resumeLag: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "slackbot_resume_lag_seconds", Help: "Time from a request's end (its decision recorded) to its run resumed, by how.",
			Buckets: resumeLagBuckets,
		}, []string{"how"}),
		runs: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "slackbot_runs_total", Help: "Agent runs finished, by result.",
		}, []string{"result"}),
		callbacks: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "slackbot_callbacks_total", Help: "Signed /v1 callback attempts, by result (delivered; retried: failed, another attempt scheduled; failed: no attempt left; refused: not made).",
		}, []string{"result"}),
		unconfirmed: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "slackbot_redis_unconfirmed_writes_total", Help: "Writes fewer than REDIS_WAIT_REPLICAS replicas confirmed in time (a new request answered as not recorded; a decision, answer, cancellation or failure held with no effect until they do), by operation (create, decide, answer, cancel, fail).",
		}, []string{"op"}),
		unchecked: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "slackbot_answers_unchecked_total", Help: "Answers (and reminders) posted without first looking for an earlier post of them, because Slack refused the look-up for good (missing_scope, not_in_channel, unknown_method…), by its error code: each may be a duplicate.",
		}, []string{"reason"}),
		slackUp: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "slackbot_slack_up", Help: "1 when Slack's auth.test last succeeded with the bot token, 0 when it failed (checked every 30s; not part of readiness).",
		}),
		upstreamUp: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "slackbot_mcp_upstream_up", Help: "1 when the upstream MCP server (routing file mcp_servers) last answered, 0 when it did not.",
		}, []string{"server"}),
		upstreamCalls: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "slackbot_mcp_upstream_calls_total", Help: "Calls to upstream MCP servers, by server and result (ok, error).",
		}, []string{"server", "result"}),
	}
	m.reg.MustRegister(m.decisions, m.decisionTime, m.refused, m.slackErrs, m.slackLimited, m.webhook, m.api,
		m.resumes, m.resumeLag, m.runs, m.callbacks, m.slackUp, m.unconfirmed, m.unchecked,
		&upstreamCollector{up: m.upstreamUp, status: cfg.MCPStatus}, m.upstreamCalls,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	routes := routeNames(cfg.Routes)
	if cfg.Pending != nil {
		m.reg.MustRegister(&pendingCollector{read: cfg.Pending, routes: routes})
	}
	m.zero(routes, mcpServerNames(cfg.Routes))
	return m
}

// Upstream MCP call results.
const (
	upstreamOK    = "ok"
	upstreamError = "error"
)

// zero creates every series whose label values are known, at zero.
func (m *metrics) zero(routes, servers []string) {
	for _, route := range routes {
		for _, outcome := range approval.Outcomes {
			m.decisions.WithLabelValues(route, outcome)
			if outcome != string(approval.CallPending) {
				m.decisionTime.WithLabelValues(route, outcome)
			}
		}
	}
	for _, reason := range approval.RefusalCodes {
		m.refused.WithLabelValues(reason)
	}
	for _, method := range bot.SlackMethods {
		m.slackErrs.WithLabelValues(method)
		m.slackLimited.WithLabelValues(method)
	}
	for _, reason := range bot.UncheckedReasons() {
		m.unchecked.WithLabelValues(reason)
	}
	for _, endpoint := range webhookEndpoints {
		m.webhook.WithLabelValues(endpoint, strconv.Itoa(http.StatusOK))
	}
	for _, status := range statusClasses {
		for _, op := range append(slices.Clone(httpapi.Operations), httpapi.OpOther) {
			m.api.WithLabelValues(doorV1, op, status)
		}
		for _, op := range mcpOperations {
			m.api.WithLabelValues(doorMCP, op, status)
		}
	}
	for _, how := range runs.ResumeHows {
		m.resumes.WithLabelValues(how)
		m.resumeLag.WithLabelValues(how)
	}
	for _, result := range runs.RunResults {
		m.runs.WithLabelValues(result)
	}
	for _, result := range httpapi.CallbackResults {
		m.callbacks.WithLabelValues(result)
	}
	for _, op := range store.UnconfirmedOps {
		m.unconfirmed.WithLabelValues(op)
	}
	for _, s := range servers {
		m.upstreamUp.WithLabelValues(s)
		m.upstreamCalls.WithLabelValues(s, upstreamOK)
		m.upstreamCalls.WithLabelValues(s, upstreamError)
	}
}

// Decision implements approval.Metrics: a call of route decided or ended
// with outcome, waited after its request opened (negative: not timed, a
// policy's decision or a vote short of its quorum).
func (m *metrics) Decision(route, outcome string, waited time.Duration) {
	m.decisions.WithLabelValues(route, outcome).Inc()
	if waited >= 0 {
		m.decisionTime.WithLabelValues(route, outcome).Observe(waited.Seconds())
	}
}

// Refused implements bot.Metrics.
func (m *metrics) Refused(reason string) { m.refused.WithLabelValues(reason).Inc() }

// UnconfirmedWrite is the store's Options.OnUnconfirmed.
func (m *metrics) UnconfirmedWrite(op string) { m.unconfirmed.WithLabelValues(op).Inc() }

// SlackError implements bot.Metrics.
func (m *metrics) SlackError(method string) { m.slackErrs.WithLabelValues(method).Inc() }

// SlackRateLimited implements bot.Metrics: a 429 from Slack, by method.
func (m *metrics) SlackRateLimited(method string) { m.slackLimited.WithLabelValues(method).Inc() }

// authTested counts a failed auth.test of watchSlack (err nil: it
// succeeded) as bot counts its calls: it is not retried, so a 429 is a
// failed call as well as a rate limit.
func (m *metrics) authTested(err error) {
	if err == nil {
		return
	}
	if rl := (*slack.RateLimitedError)(nil); errors.As(err, &rl) {
		m.SlackRateLimited(bot.MethodAuthTest)
	}
	m.SlackError(bot.MethodAuthTest)
}

// AnswerUnchecked implements bot.Metrics.
func (m *metrics) AnswerUnchecked(reason string) { m.unchecked.WithLabelValues(reason).Inc() }

// RunEnded implements runs.Metrics.
func (m *metrics) RunEnded(result string) { m.runs.WithLabelValues(result).Inc() }

// RunResumed implements runs.Metrics.
func (m *metrics) RunResumed(how string, lag time.Duration) {
	m.resumes.WithLabelValues(how).Inc()
	if lag >= 0 {
		m.resumeLag.WithLabelValues(how).Observe(lag.Seconds())
	}
}

// Callback implements httpapi.CallbackMetrics.
func (m *metrics) Callback(result string) { m.callbacks.WithLabelValues(result).Inc() }

// UpstreamCall counts a call to an upstream MCP server and records
// whether it answered.
func (m *metrics) UpstreamCall(server string, err error) {
	result, up := upstreamOK, 1.0
	if err != nil {
		result, up = upstreamError, 0
	}
	m.upstreamCalls.WithLabelValues(server, result).Inc()
	m.upstreamUp.WithLabelValues(server).Set(up)
}

func (m *metrics) handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{Registry: m.reg})
}

// timed observes how long Slack's requests to h take to be answered, by
// status, in the webhook histogram: only Slack's, whose 3 s deadline its
// buckets show (the API's requests wait for people: timedAPI).
func (m *metrics) timed(endpoint string, h http.Handler) http.Handler {
	ok := m.webhook.WithLabelValues(endpoint, strconv.Itoa(http.StatusOK)) // looked up once: most requests
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		sw := &statusWriter{ResponseWriter: w, status: http.StatusOK}
		h.ServeHTTP(sw, r)
		obs := ok
		if sw.status != http.StatusOK {
			obs = m.webhook.WithLabelValues(endpoint, strconv.Itoa(sw.status))
		}
		obs.Observe(time.Since(start).Seconds())
	})
}

// timedAPI observes how long the requests of door (/v1 or /mcp) take,
// long polls and waits for a person included, in the API request
// histogram, by operation (op, read once the request is served) and
// status class.
func (m *metrics) timedAPI(door string, op func(*http.Request) string, h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		sw := &statusWriter{ResponseWriter: w, status: http.StatusOK}
		h.ServeHTTP(sw, r)
		m.api.WithLabelValues(door, op(r), statusClass(sw.status)).Observe(time.Since(start).Seconds())
	})
}

// statusClass is "2xx", "4xx" or "5xx" (a 1xx or 3xx counts as 2xx: the
// request was served), so the status label stays bounded.
func statusClass(status int) string {
	switch {
	case status >= 500:
		return "5xx"
	case status >= 400:
		return "4xx"
	}
	return "2xx"
}

// mcpOperation is the operation of an /mcp request: its HTTP method, or
// OpOther for a method the transport does not serve.
func mcpOperation(r *http.Request) string {
	if slices.Contains(mcpOperations, r.Method) {
		return r.Method
	}
	return httpapi.OpOther
}

// pendingCollector reads the open requests by route from Redis at scrape
// time: slackbot_pending_approvals and slackbot_pending_oldest_seconds,
// one series per known route (a route removed from the routing file
// while requests on it are open is shown too, until they end). A scrape
// waits at most a second for Redis; when it does not answer, every
// route's series is -1.
type pendingCollector struct {
	read   func(ctx context.Context) (map[string]store.RoutePending, error)
	routes []string
}

var (
	pendingDesc = prometheus.NewDesc("slackbot_pending_approvals",
		"Open requests (resume tokens waiting for a decision), by route of their calls; -1 when Redis did not answer within a second.", []string{"route"}, nil)
	oldestDesc = prometheus.NewDesc("slackbot_pending_oldest_seconds",
		"Age of the oldest open request, by route of its calls (0 when none); -1 when Redis did not answer within a second.", []string{"route"}, nil)
)

func (c *pendingCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- pendingDesc
	ch <- oldestDesc
}

func (c *pendingCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	byRoute, err := c.read(ctx)
	emit := func(route string, n, oldest float64) {
		ch <- prometheus.MustNewConstMetric(pendingDesc, prometheus.GaugeValue, n, route)
		ch <- prometheus.MustNewConstMetric(oldestDesc, prometheus.GaugeValue, oldest, route)
	}
	if err != nil {
		for _, route := range c.routes {
			emit(route, -1, -1)
		}
		return
	}
	for _, route := range c.routes {
		p := byRoute[route]
		emit(route, float64(p.Open), p.Oldest.Seconds())
	}
	for route, p := range byRoute {
		if !slices.Contains(c.routes, route) {
			emit(route, float64(p.Open), p.Oldest.Seconds())
		}
	}
}

// upstreamCollector sets slackbot_mcp_upstream_up from the servers'
// state (connected: its session answers its health checks and calls) as
// it is scraped, so the gauge is never staler than the Toolset.
type upstreamCollector struct {
	up     *prometheus.GaugeVec
	status func() []mcptools.ServerStatus
}

func (c *upstreamCollector) Describe(ch chan<- *prometheus.Desc) { c.up.Describe(ch) }

func (c *upstreamCollector) Collect(ch chan<- prometheus.Metric) {
	if c.status != nil {
		for _, s := range c.status() {
			c.up.WithLabelValues(s.Name).Set(map[bool]float64{true: 1, false: 0}[s.Connected])
		}
	}
	c.up.Collect(ch)
}

type statusWriter struct {
	http.ResponseWriter
	status int
	wrote  bool
}

func (w *statusWriter) WriteHeader(code int) {
	if !w.wrote {
		w.status, w.wrote = code, true
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	w.wrote = true
	return w.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the underlying writer.
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
