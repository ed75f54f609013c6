package monitoring_test

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql/parser"
)

// promExpr is one PromQL expression of the dashboard or the rules.
type promExpr struct {
	where string // the file and the panel, variable or alert it is in
	query string
	// labels are labels the expression's user relies on beyond the
	// expression itself: a label_values() variable's label.
	labels []string
}

// ruleExprs are the expressions of alerts.yaml.
func ruleExprs(t *testing.T) []promExpr {
	t.Helper()
	var out []promExpr
	for _, g := range rules(t).Groups {
		for _, r := range g.Rules {
			out = append(out, promExpr{where: "alerts.yaml " + r.Alert + r.Record, query: r.Expr})
		}
	}
	return out
}

// allExprs are every PromQL expression deploy/monitoring holds.
func allExprs(t *testing.T) []promExpr {
	t.Helper()
	return append(dashboardExprs(t), ruleExprs(t)...)
}

// Every expression parses with Prometheus's own parser.
func TestExpressionsParse(t *testing.T) {
	t.Parallel()
	exprs := allExprs(t)
	if len(exprs) < 20 {
		t.Fatalf("%d expressions found; the dashboard and rules hold more: is the loader broken?", len(exprs))
	}
	for _, e := range exprs {
		if _, err := promParser.ParseExpr(e.query); err != nil {
			t.Errorf("%s: %q does not parse: %v", e.where, e.query, err)
		}
	}
}

// use is what an expression asks of one metric: the label matchers of a
// selector, and the labels it groups or matches by.
type use struct {
	where    string
	name     string // as written: a histogram's series carry _bucket, _sum, _count
	matchers []*labels.Matcher
	labels   []string
}

// uses walks an expression's syntax tree and returns what it asks of each
// metric it names. A label an aggregation groups by (or a binary operator
// matches on) is asked of every metric under it, except the labels the
// expression itself makes up (none here: no label_replace).
func uses(where string, e parser.Expr, extra []string) ([]use, error) {
	var out []use
	var errs []string
	selectors := func(n parser.Node) []*parser.VectorSelector {
		var vs []*parser.VectorSelector
		parser.Inspect(n, func(n parser.Node, _ []parser.Node) error {
			if v, ok := n.(*parser.VectorSelector); ok {
				vs = append(vs, v)
			}
			return nil
		})
		return vs
	}
	grouped := map[*parser.VectorSelector][]string{}
	parser.Inspect(e, func(n parser.Node, _ []parser.Node) error {
		if n == nil { // Walk's last visit
			return nil
		}
		var ls []string
		switch n := n.(type) {
		case *parser.AggregateExpr:
			ls = n.Grouping
		case *parser.BinaryExpr:
			if n.VectorMatching != nil {
				ls = append(slices.Clone(n.VectorMatching.MatchingLabels), n.VectorMatching.Include...)
			}
		}
		for _, v := range selectors(n) {
			grouped[v] = append(grouped[v], ls...)
		}
		return nil
	})
	for _, v := range selectors(e) {
		name := v.Name
		if name == "" {
			for _, m := range v.LabelMatchers {
				if m.Name == model.MetricNameLabel && m.Type == labels.MatchEqual {
					name = m.Value
				}
			}
		}
		if name == "" {
			errs = append(errs, fmt.Sprintf("selector %s names no metric", v))
			continue
		}
		var ms []*labels.Matcher
		for _, m := range v.LabelMatchers {
			if m.Name != model.MetricNameLabel {
				ms = append(ms, m)
			}
		}
		out = append(out, use{where: where, name: name, matchers: ms, labels: append(slices.Clone(grouped[v]), extra...)})
	}
	if len(errs) > 0 {
		return out, fmt.Errorf("%s: %s", where, strings.Join(errs, "; "))
	}
	return out, nil
}

// literalAlternatives matches a regular expression that is only literal
// values joined by '|' ("failed|refused"): its values can be checked one by
// one against what slackbot exports.
var literalAlternatives = regexp.MustCompile(`^[\w.:+/-]+(\|[\w.:+/-]+)*$`)

// matcherValues returns the label values a matcher names literally (an
// equality, or a regular expression of literal alternatives); none for
// negative matchers and real regular expressions.
func matcherValues(m *labels.Matcher) []string {
	switch m.Type {
	case labels.MatchEqual:
		if m.Value != "" {
			return []string{m.Value}
		}
	case labels.MatchRegexp:
		if literalAlternatives.MatchString(m.Value) {
			return strings.Split(m.Value, "|")
		}
	}
	return nil
}

// The AST walk on made-up expressions: the metrics named, the labels asked
// of each, and the values matched literally.
func TestUsesWalk(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		expr       string
		wantNames  []string
		wantLabels []string
		wantValues []string
	}{
		{`sum by (route, le) (rate(a_bucket{outcome=~"x|y"}[5m]))`, []string{"a_bucket"}, []string{"le", "outcome", "route"}, []string{"x", "y"}},
		{`max by (route) (b) > on (route) group_left (door) c{k=~".*"}`, []string{"b", "c"}, []string{"door", "k", "route"}, nil},
		{`absent(up{job="slackbot"} == 1)`, []string{"up"}, []string{"job"}, []string{"slackbot"}},
		{`{__name__="d", s!="x"}`, []string{"d"}, []string{"s"}, nil},
	} {
		e, err := promParser.ParseExpr(tt.expr)
		if err != nil {
			t.Fatal(err)
		}
		us, err := uses("test", e, nil)
		if err != nil {
			t.Fatal(err)
		}
		var names, ls, vs []string
		for _, u := range us {
			names = append(names, u.name)
			ls = append(ls, u.labels...)
			for _, m := range u.matchers {
				ls = append(ls, m.Name)
				vs = append(vs, matcherValues(m)...)
			}
		}
		slices.Sort(ls)
		ls = slices.Compact(ls)
		if !slices.Equal(names, tt.wantNames) || !slices.Equal(ls, tt.wantLabels) || !slices.Equal(vs, tt.wantValues) {
			t.Errorf("%s: names %q labels %q values %q; want %q %q %q", tt.expr, names, ls, vs, tt.wantNames, tt.wantLabels, tt.wantValues)
		}
	}
	e, _ := promParser.ParseExpr(`sum({job="x"})`)
	if _, err := uses("test", e, nil); err == nil {
		t.Error("a selector without a metric name passed")
	}
}
