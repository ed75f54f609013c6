package main

import (
	"net/http"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/redis/go-redis/v9"

	"github.com/slackapprove/slackbot/store/redistest"
)

// /readyz depends on Redis only: Slack failing auth.test (an outage, a
// rate limit) shows on the slackbot_slack_up gauge and leaves the replica
// ready, and Redis down makes it unready.
func TestReadyzNeedsRedisNotSlack(t *testing.T) {
	t.Parallel()
	rs := redistest.StartServer(t)
	rdb := redis.NewClient(&redis.Options{Addr: rs.Addr(), DialTimeout: 300 * time.Millisecond, MaxRetries: 1})
	t.Cleanup(func() { _ = rdb.Close() })
	e := newEnv(t, envOptions{redis: rdb})
	readyz := func() int {
		t.Helper()
		resp, err := http.Get(e.srv.URL + "/readyz")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}

	for _, status := range []int{http.StatusInternalServerError, http.StatusTooManyRequests} {
		e.slack.FailNext("auth.test", status, 1000)
		e.app.checkSlack(t.Context())
		if got := gaugeValue(t, e.app.metrics.slackUp); got != 0 {
			t.Errorf("auth.test answering %d: slackbot_slack_up = %v, want 0", status, got)
		}
		if got := readyz(); got != http.StatusOK {
			t.Errorf("auth.test answering %d: /readyz got %d, want 200", status, got)
		}
	}
	e.slack.FailNext("auth.test", 0, 0)
	e.app.checkSlack(t.Context())
	if got := gaugeValue(t, e.app.metrics.slackUp); got != 1 {
		t.Errorf("auth.test succeeding: slackbot_slack_up = %v, want 1", got)
	}
	if got := readyz(); got != http.StatusOK {
		t.Errorf("all up: /readyz got %d, want 200", got)
	}

	rs.Kill(t)
	if got := readyz(); got != http.StatusServiceUnavailable {
		t.Errorf("Redis down: /readyz got %d, want 503", got)
	}
}

// gaugeValue reads a Prometheus gauge.
func gaugeValue(t *testing.T, g prometheus.Gauge) float64 {
	t.Helper()
	var m dto.Metric
	if err := g.Write(&m); err != nil {
		t.Fatal(err)
	}
	return m.GetGauge().GetValue()
}
