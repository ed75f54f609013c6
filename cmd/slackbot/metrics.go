package main

import (
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// metrics are what operators watch, on a registry of their own so tests
// can run several servers in one process.
type metrics struct {
	reg        *prometheus.Registry
	decisions  *prometheus.CounterVec
	refused    *prometheus.CounterVec
	slackErrs  *prometheus.CounterVec
	webhook    *prometheus.HistogramVec
	resumes    *prometheus.CounterVec
	runs       *prometheus.CounterVec
	apiLatency *prometheus.HistogramVec
	slackUp    prometheus.Gauge
	// unconfirmed counts writes REDIS_WAIT_REPLICAS replicas did not
	// confirm, by store operation.
	unconfirmed *prometheus.CounterVec
	// unchecked counts answers posted without looking for an earlier
	// post, because Slack refused the look-up, by its error code.
	unchecked *prometheus.CounterVec
}

func newMetrics(pending func() float64) *metrics {
	m := &metrics{
		reg: prometheus.NewRegistry(),
		decisions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "slackbot_decisions_total", Help: "Decisions recorded and calls ended without one, by outcome (approved, denied, answered, failed, pending vote, expired, cancelled).",
		}, []string{"outcome"}),
		refused: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "slackbot_refused_clicks_total", Help: "Clicks refused, by reason.",
		}, []string{"reason"}),
		slackErrs: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "slackbot_slack_api_errors_total", Help: "Failed Slack Web API calls, by method.",
		}, []string{"method"}),
		webhook: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "slackbot_webhook_duration_seconds", Help: "Time to acknowledge requests from Slack, by endpoint and status.",
			Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5},
		}, []string{"endpoint", "status"}),
		resumes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "slackbot_resumes_total", Help: "Waiting runs resumed, by how (direct: by the process that ended the request; queue).",
		}, []string{"how"}),
		runs: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "slackbot_runs_total", Help: "Agent runs finished, by result.",
		}, []string{"result"}),
		apiLatency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "slackbot_api_duration_seconds", Help: "HTTP API request duration, by route and status.",
		}, []string{"route", "status"}),
		unconfirmed: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "slackbot_redis_unconfirmed_writes_total", Help: "Writes fewer than REDIS_WAIT_REPLICAS replicas confirmed in time (a new request answered as not recorded; a decision, answer, cancellation or failure held with no effect until they do), by operation (create, decide, answer, cancel, fail).",
		}, []string{"op"}),
		unchecked: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "slackbot_answers_unchecked_total", Help: "Answers (and reminders) posted without first looking for an earlier post of them, because Slack refused the look-up for good (missing_scope, not_in_channel, unknown_method…), by its error code: each may be a duplicate.",
		}, []string{"reason"}),
		slackUp: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "slackbot_slack_up", Help: "1 when Slack's auth.test last succeeded with the bot token, 0 when it failed (checked every 30s; not part of readiness).",
		}),
	}
	m.reg.MustRegister(m.decisions, m.refused, m.slackErrs, m.webhook, m.resumes, m.runs, m.apiLatency, m.slackUp, m.unconfirmed, m.unchecked,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	if pending != nil {
		m.reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "slackbot_pending_approvals", Help: "Resume tokens waiting for a decision.",
		}, pending))
	}
	return m
}

// Decision implements bot.Metrics.
func (m *metrics) Decision(outcome string) { m.decisions.WithLabelValues(outcome).Inc() }

// Refused implements bot.Metrics.
func (m *metrics) Refused(reason string) { m.refused.WithLabelValues(reason).Inc() }

// UnconfirmedWrite is the store's Options.OnUnconfirmed.
func (m *metrics) UnconfirmedWrite(op string) { m.unconfirmed.WithLabelValues(op).Inc() }

// SlackError implements bot.Metrics.
func (m *metrics) SlackError(method string) { m.slackErrs.WithLabelValues(method).Inc() }

// AnswerUnchecked implements bot.Metrics.
func (m *metrics) AnswerUnchecked(reason string) { m.unchecked.WithLabelValues(reason).Inc() }

// RunEnded implements runs.Metrics.
func (m *metrics) RunEnded(result string) { m.runs.WithLabelValues(result).Inc() }

// RunResumed implements runs.Metrics.
func (m *metrics) RunResumed(path string) { m.resumes.WithLabelValues(path).Inc() }

func (m *metrics) handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{Registry: m.reg})
}

// timed observes how long h takes to answer, by status.
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
