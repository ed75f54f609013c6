package monitoring_test

import (
	"context"
	"maps"
	"regexp"
	"slices"
	"testing"
	"time"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/rulefmt"
	"github.com/prometheus/prometheus/promql"
	"github.com/prometheus/prometheus/storage"
	"github.com/prometheus/prometheus/template"
)

// evalInterval is how often the tests evaluate a rule, as a rule group's
// default evaluation_interval does.
const evalInterval = time.Minute

// scenario is a history of series and the alert's verdict on it at one
// moment: the unit test of an alert, in Go rather than promtool's format
// so that it runs in `go test` without promtool (whose rules package pulls
// in every service discovery and remote-storage client).
type scenario struct {
	alert string
	name  string
	// series are promqltest load lines: one series a line, its values one
	// evalInterval apart from time 0 ("0+1x30": 0, 1, ... 30; "1x5": six 1s).
	series string
	at     time.Duration
	// fires are labels the firing alert must carry; nil: it must not fire.
	fires map[string]string
}

// ackBuckets is a Slack webhook histogram for 10 requests a minute, fast
// of them answered within 100 ms, under3s within 3 s.
func ackBuckets(fast, under3s int) string {
	l := `{endpoint="/slack/interactivity", status="200"`
	return "slackbot_webhook_duration_seconds_bucket" + l + `, le="0.1"} 0+` + itoa(fast) + "x40\n" +
		"slackbot_webhook_duration_seconds_bucket" + l + `, le="2.5"} 0+` + itoa(fast) + "x40\n" +
		"slackbot_webhook_duration_seconds_bucket" + l + `, le="3"} 0+` + itoa(under3s) + "x40\n" +
		"slackbot_webhook_duration_seconds_bucket" + l + `, le="+Inf"} 0+10x40` + "\n" +
		"slackbot_webhook_duration_seconds_count" + l + `} 0+10x40`
}

// decisionBuckets is a route's history of approvals, one a minute, all
// decided within usual seconds.
func decisionBuckets(route, usual string) string {
	l := `{route="` + route + `", outcome="approved"`
	return "slackbot_decision_duration_seconds_bucket" + l + `, le="1"} 0x40` + "\n" +
		"slackbot_decision_duration_seconds_bucket" + l + `, le="` + usual + `"} 0+1x40` + "\n" +
		"slackbot_decision_duration_seconds_bucket" + l + `, le="+Inf"} 0+1x40`
}

func itoa(n int) string { return model.SampleValue(n).String() }

var scenarios = []scenario{
	{alert: "SlackbotDown", name: "down for 20m",
		series: `up{job="slackbot", instance="a:8080"} 1x10 0x20`, at: 30 * time.Minute,
		fires: map[string]string{"instance": "a:8080", "severity": "warning"}},
	{alert: "SlackbotDown", name: "down 3m, shorter than for",
		series: `up{job="slackbot", instance="a:8080"} 1x25 0x3`, at: 28 * time.Minute},

	{alert: "SlackbotAllReplicasDown", name: "both replicas down",
		series: "up{job=\"slackbot\", instance=\"a:8080\"} 1x5 0x10\nup{job=\"slackbot\", instance=\"b:8080\"} 1x5 0x10", at: 15 * time.Minute,
		fires: map[string]string{"severity": "critical"}},
	{alert: "SlackbotAllReplicasDown", name: "never scraped",
		series: `slackbot_slack_up{instance="a:8080"} 1x15`, at: 15 * time.Minute,
		fires: map[string]string{"severity": "critical"}},
	{alert: "SlackbotAllReplicasDown", name: "one replica of two up",
		series: "up{job=\"slackbot\", instance=\"a:8080\"} 1x15\nup{job=\"slackbot\", instance=\"b:8080\"} 1x5 0x10", at: 15 * time.Minute},

	{alert: "SlackbotRedisUnreachable", name: "Redis down for one replica",
		series: "slackbot_pending_approvals{route=\"deploys\", instance=\"a:8080\"} 3x5 -1x10\nslackbot_pending_approvals{route=\"deploys\", instance=\"b:8080\"} 3x15", at: 15 * time.Minute,
		fires: map[string]string{"instance": "a:8080", "severity": "critical"}},
	{alert: "SlackbotRedisUnreachable", name: "no request pending",
		series: "slackbot_pending_approvals{route=\"deploys\", instance=\"a:8080\"} 0x15\nslackbot_pending_approvals{route=\"default\", instance=\"a:8080\"} 2x15", at: 15 * time.Minute},

	{alert: "SlackbotSlackUnreachable", name: "auth.test failing 15m",
		series: `slackbot_slack_up{instance="a:8080"} 1x5 0x15`, at: 20 * time.Minute,
		fires: map[string]string{"instance": "a:8080", "severity": "critical"}},
	{alert: "SlackbotSlackUnreachable", name: "Slack up",
		series: `slackbot_slack_up{instance="a:8080"} 1x20`, at: 20 * time.Minute},

	{alert: "SlackbotAckNearDeadline", name: "1 in 10 acks between 2.5 and 3 s",
		series: ackBuckets(9, 10), at: 40 * time.Minute, fires: map[string]string{"severity": "warning"}},
	{alert: "SlackbotAckNearDeadline", name: "all acks within 100 ms",
		series: ackBuckets(10, 10), at: 40 * time.Minute},

	{alert: "SlackbotAckOverDeadline", name: "1 in 10 acks after 3 s",
		series: ackBuckets(9, 9), at: 40 * time.Minute, fires: map[string]string{"severity": "critical"}},
	{alert: "SlackbotAckOverDeadline", name: "slow acks but within 3 s",
		series: ackBuckets(9, 10), at: 40 * time.Minute},
	{alert: "SlackbotAckOverDeadline", name: "no requests at all",
		series: `slackbot_webhook_duration_seconds_count{endpoint="/slack/events", status="200"} 0x40`, at: 40 * time.Minute},

	{alert: "SlackbotSlackRateLimited", name: "429s every minute",
		series: `slackbot_slack_api_rate_limited_total{method="chat.update"} 0+1x40`, at: 40 * time.Minute,
		fires: map[string]string{"method": "chat.update"}},
	{alert: "SlackbotSlackRateLimited", name: "a burst of 429s, then none",
		series: `slackbot_slack_api_rate_limited_total{method="chat.update"} 0+1x10 10x30`, at: 40 * time.Minute},

	{alert: "SlackbotSlackAPIErrors", name: "chat.postMessage failing",
		series: `slackbot_slack_api_errors_total{method="chat.postMessage"} 0+2x40`, at: 40 * time.Minute,
		fires: map[string]string{"method": "chat.postMessage"}},
	{alert: "SlackbotSlackAPIErrors", name: "one error",
		series: `slackbot_slack_api_errors_total{method="chat.postMessage"} 0x10 1x30`, at: 40 * time.Minute},

	{alert: "SlackbotRedisUnconfirmedWrites", name: "a decision not confirmed",
		series: `slackbot_redis_unconfirmed_writes_total{op="decide"} 0x10 1x5`, at: 12 * time.Minute,
		fires: map[string]string{"op": "decide"}},
	{alert: "SlackbotRedisUnconfirmedWrites", name: "an old one, 20m ago",
		series: `slackbot_redis_unconfirmed_writes_total{op="decide"} 0x10 1x20`, at: 30 * time.Minute},

	{alert: "SlackbotCallbacksFailing", name: "callbacks failing",
		series: "slackbot_callbacks_total{result=\"failed\"} 0x10 0+1x10\nslackbot_callbacks_total{result=\"delivered\"} 0+5x20", at: 20 * time.Minute,
		fires: map[string]string{"result": "failed"}},
	{alert: "SlackbotCallbacksFailing", name: "callbacks delivered, some retried",
		series: "slackbot_callbacks_total{result=\"failed\"} 0x30\nslackbot_callbacks_total{result=\"retried\"} 0+1x30\nslackbot_callbacks_total{result=\"delivered\"} 0+5x30", at: 30 * time.Minute},

	{alert: "SlackbotResumeLagHigh", name: "queue resumes take minutes",
		series: "slackbot_resume_lag_seconds_bucket{how=\"queue\", le=\"1\"} 0x40\nslackbot_resume_lag_seconds_bucket{how=\"queue\", le=\"60\"} 0x40\n" +
			"slackbot_resume_lag_seconds_bucket{how=\"queue\", le=\"300\"} 0+2x40\nslackbot_resume_lag_seconds_bucket{how=\"queue\", le=\"+Inf\"} 0+2x40",
		at: 40 * time.Minute, fires: map[string]string{"how": "queue"}},
	{alert: "SlackbotResumeLagHigh", name: "resumes within a second",
		series: "slackbot_resume_lag_seconds_bucket{how=\"queue\", le=\"1\"} 0+2x40\nslackbot_resume_lag_seconds_bucket{how=\"queue\", le=\"60\"} 0+2x40\n" +
			"slackbot_resume_lag_seconds_bucket{how=\"queue\", le=\"300\"} 0+2x40\nslackbot_resume_lag_seconds_bucket{how=\"queue\", le=\"+Inf\"} 0+2x40",
		at: 40 * time.Minute},

	{alert: "SlackbotApprovalWaitingLong", name: "40m wait on a route decided within a minute",
		series: decisionBuckets("deploys", "60") + "\n" + `slackbot_pending_oldest_seconds{route="deploys", instance="a:8080"} 0+60x40`,
		at:     40 * time.Minute, fires: map[string]string{"route": "deploys"}},
	{alert: "SlackbotApprovalWaitingLong", name: "40m wait on a route decided within hours",
		series: decisionBuckets("deploys", "3600") + "\n" + `slackbot_pending_oldest_seconds{route="deploys", instance="a:8080"} 0+60x40`,
		at:     40 * time.Minute},
	{alert: "SlackbotApprovalWaitingLong", name: "2m wait",
		series: decisionBuckets("deploys", "60") + "\n" + `slackbot_pending_oldest_seconds{route="deploys", instance="a:8080"} 120x40`,
		at:     40 * time.Minute},

	{alert: "SlackbotApprovalsExpiring", name: "a request expired",
		series: `slackbot_decisions_total{route="deploys", outcome="expired"} 0x10 1x10`, at: 20 * time.Minute,
		fires: map[string]string{"route": "deploys"}},
	{alert: "SlackbotApprovalsExpiring", name: "requests decided",
		series: "slackbot_decisions_total{route=\"deploys\", outcome=\"expired\"} 0x20\nslackbot_decisions_total{route=\"deploys\", outcome=\"approved\"} 0+1x20", at: 20 * time.Minute},

	{alert: "SlackbotMCPUpstreamDown", name: "upstream down 10m",
		series: `slackbot_mcp_upstream_up{server="tickets", instance="a:8080"} 1x5 0x10`, at: 15 * time.Minute,
		fires: map[string]string{"server": "tickets", "instance": "a:8080"}},
	{alert: "SlackbotMCPUpstreamDown", name: "upstream up",
		series: `slackbot_mcp_upstream_up{server="tickets", instance="a:8080"} 1x15`, at: 15 * time.Minute},

	{alert: "SlackbotAnswersUnchecked", name: "missing scope",
		series: `slackbot_answers_unchecked_total{reason="missing_scope"} 0x5 1x5`, at: 10 * time.Minute,
		fires: map[string]string{"reason": "missing_scope"}},
	{alert: "SlackbotAnswersUnchecked", name: "none",
		series: `slackbot_answers_unchecked_total{reason="missing_scope"} 0x10`, at: 10 * time.Minute},
}

// labelRef finds the labels an annotation's template reads.
var labelRef = regexp.MustCompile(`\$labels\.(\w+)`)

// Each alert fires on its failure history and stays silent on a healthy
// one, evaluated every minute as Prometheus does, firing only once its
// expression has held for the rule's whole `for`; a firing alert carries
// the labels its annotations name, and they expand without error.
func TestAlerts(t *testing.T) {
	t.Parallel()
	byName := map[string]rulefmt.Rule{}
	for _, r := range alertRules(t) {
		byName[r.Alert] = r
	}
	engine := promql.NewEngine(promql.EngineOpts{MaxSamples: 1e6, Timeout: time.Minute, Parser: promParser})
	t.Cleanup(func() { _ = engine.Close() })
	for _, sc := range scenarios {
		t.Run(sc.alert+"/"+sc.name, func(t *testing.T) {
			t.Parallel()
			r, ok := byName[sc.alert]
			if !ok {
				t.Fatalf("alerts.yaml has no alert %s", sc.alert)
			}
			storage, err := loadSeries(sc.series, evalInterval)
			if err != nil {
				t.Fatal(err)
			}
			firing := evalAlert(t, engine, storage, r, time.Unix(0, 0).UTC().Add(sc.at))
			if sc.fires == nil {
				for _, f := range firing {
					t.Errorf("fired at %s with %s; want silent", sc.at, f.Metric)
				}
				return
			}
			if len(firing) == 0 {
				t.Fatalf("silent at %s; want it firing with %v", sc.at, sc.fires)
			}
			found := false
			for _, f := range firing {
				got := f.Metric.Map()
				found = found || isSubset(sc.fires, got)
				checkAnnotations(t, r, f, got)
			}
			if !found {
				t.Errorf("fired with %v; want labels %v", firing, sc.fires)
			}
		})
	}
}

// Every alert has a failure and a healthy scenario.
func TestEveryAlertHasScenarios(t *testing.T) {
	t.Parallel()
	fires, silent := map[string]bool{}, map[string]bool{}
	for _, sc := range scenarios {
		if sc.fires != nil {
			fires[sc.alert] = true
		} else {
			silent[sc.alert] = true
		}
	}
	for _, r := range alertRules(t) {
		if !fires[r.Alert] || !silent[r.Alert] {
			t.Errorf("%s: firing scenario %t, silent scenario %t; want both", r.Alert, fires[r.Alert], silent[r.Alert])
		}
	}
}

// evalAlert evaluates r's expression every evalInterval over its `for`
// ending at at, and returns the series present at every evaluation: the
// alerts firing at at (an alert is pending from the first evaluation that
// returns its series and fires once it has been returned for `for`). Each
// carries the rule's labels and its alertname, as Prometheus sends it.
func evalAlert(t *testing.T, engine *promql.Engine, storage storage.Queryable, r rulefmt.Rule, at time.Time) []promql.Sample {
	t.Helper()
	hold := time.Duration(r.For)
	q, err := engine.NewRangeQuery(context.Background(), storage, nil, r.Expr, at.Add(-hold), at, evalInterval)
	if err != nil {
		t.Fatalf("%s: %v", r.Alert, err)
	}
	defer q.Close()
	res := q.Exec(context.Background())
	if res.Err != nil {
		t.Fatalf("%s: %v", r.Alert, res.Err)
	}
	m, err := res.Matrix()
	if err != nil {
		t.Fatalf("%s: %v", r.Alert, err)
	}
	steps := int(hold/evalInterval) + 1
	var firing []promql.Sample
	for _, s := range m {
		if len(s.Floats) != steps {
			continue
		}
		b := labels.NewBuilder(s.Metric)
		b.Del(model.MetricNameLabel)
		for k, v := range r.Labels {
			b.Set(k, v)
		}
		b.Set(labels.AlertName, r.Alert)
		firing = append(firing, promql.Sample{Metric: b.Labels(), T: s.Floats[steps-1].T, F: s.Floats[steps-1].F})
	}
	return firing
}

// checkAnnotations expands r's annotations for the firing alert f as
// Prometheus does, and checks that every label they read is on it: a
// missing one expands to nothing, and the page says "on " with no replica.
func checkAnnotations(t *testing.T, r rulefmt.Rule, f promql.Sample, got map[string]string) {
	t.Helper()
	defs := "{{$labels := .Labels}}{{$externalLabels := .ExternalLabels}}{{$externalURL := .ExternalURL}}{{$value := .Value}}"
	for _, k := range slices.Sorted(maps.Keys(r.Annotations)) {
		text := r.Annotations[k]
		for _, m := range labelRef.FindAllStringSubmatch(text, -1) {
			if _, ok := got[m[1]]; !ok {
				t.Errorf("annotation %s reads $labels.%s, which the firing alert %v does not carry", k, m[1], got)
			}
		}
		data := template.AlertTemplateData(got, nil, "", f)
		exp := template.NewTemplateExpander(context.Background(), defs+text, "__alert_"+r.Alert, data, model.Time(f.T), nil, nil, nil)
		if _, err := exp.Expand(); err != nil {
			t.Errorf("annotation %s does not expand: %v", k, err)
		}
	}
}

func isSubset(want, got map[string]string) bool {
	for k, v := range want {
		if got[k] != v {
			return false
		}
	}
	return true
}
