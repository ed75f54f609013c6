package monitoring_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// dashboardSchemaVersion is the schema version of the dashboard JSON that
// current Grafana (12) writes; Grafana migrates older dashboards on load,
// and a dashboard of a newer version than it knows may not load at all.
const dashboardSchemaVersion = 42

// dashboard is dashboard.json with every field it holds: decoding refuses
// any other, so a field Grafana would ignore (a typo) fails the test. The
// panels' options differ by panel type and are Grafana's to interpret.
type dashboard struct {
	UID           string   `json:"uid"`
	Title         string   `json:"title"`
	Description   string   `json:"description"`
	Tags          []string `json:"tags"`
	Editable      bool     `json:"editable"`
	GraphTooltip  int      `json:"graphTooltip"`
	Refresh       string   `json:"refresh"`
	SchemaVersion int      `json:"schemaVersion"`
	Version       int      `json:"version"`
	Time          struct {
		From string `json:"from"`
		To   string `json:"to"`
	} `json:"time"`
	Timezone    string            `json:"timezone"`
	Links       []json.RawMessage `json:"links"`
	Annotations struct {
		List []struct {
			BuiltIn    int        `json:"builtIn"`
			Datasource datasource `json:"datasource"`
			Enable     bool       `json:"enable"`
			Hide       bool       `json:"hide"`
			IconColor  string     `json:"iconColor"`
			Name       string     `json:"name"`
			Type       string     `json:"type"`
		} `json:"list"`
	} `json:"annotations"`
	Templating struct {
		List []variable `json:"list"`
	} `json:"templating"`
	Panels []panel `json:"panels"`
}

type datasource struct {
	Type string `json:"type"`
	UID  string `json:"uid"`
}

// variable is a template variable: the Prometheus data source to query,
// or a query variable whose values come from label_values().
type variable struct {
	Type       string      `json:"type"`
	Name       string      `json:"name"`
	Label      string      `json:"label"`
	Datasource *datasource `json:"datasource"`
	// Query is the plugin type for a datasource variable ("prometheus"),
	// an object for a query variable.
	Query      json.RawMessage `json:"query"`
	Definition string          `json:"definition"`
	Refresh    int             `json:"refresh"`
	IncludeAll bool            `json:"includeAll"`
	Multi      bool            `json:"multi"`
	AllValue   string          `json:"allValue"`
	Sort       int             `json:"sort"`
	Hide       int             `json:"hide"`
}

// variableQuery is a Prometheus query variable's query, as Grafana's
// variable editor saves it.
type variableQuery struct {
	QryType int    `json:"qryType"`
	Query   string `json:"query"`
	RefID   string `json:"refId"`
}

type panel struct {
	Type        string `json:"type"`
	ID          int    `json:"id"`
	Title       string `json:"title"`
	Description string `json:"description"`
	Collapsed   bool   `json:"collapsed"`
	// Panels are a collapsed row's; this dashboard's rows are open.
	Panels     []json.RawMessage `json:"panels"`
	Datasource *datasource       `json:"datasource"`
	GridPos    struct {
		X int `json:"x"`
		Y int `json:"y"`
		W int `json:"w"`
		H int `json:"h"`
	} `json:"gridPos"`
	Targets []struct {
		RefID        string     `json:"refId"`
		Datasource   datasource `json:"datasource"`
		Expr         string     `json:"expr"`
		LegendFormat string     `json:"legendFormat"`
	} `json:"targets"`
	FieldConfig struct {
		Defaults struct {
			Unit       string   `json:"unit"`
			Min        *float64 `json:"min"`
			Max        *float64 `json:"max"`
			Thresholds struct {
				Mode  string `json:"mode"`
				Steps []struct {
					Color string   `json:"color"`
					Value *float64 `json:"value"`
				} `json:"steps"`
			} `json:"thresholds"`
			Mappings []json.RawMessage `json:"mappings"`
			Custom   struct {
				ThresholdsStyle struct {
					Mode string `json:"mode"`
				} `json:"thresholdsStyle"`
				ScaleDistribution struct {
					Type string `json:"type"`
					Log  int    `json:"log"`
				} `json:"scaleDistribution"`
			} `json:"custom"`
		} `json:"defaults"`
		Overrides []json.RawMessage `json:"overrides"`
	} `json:"fieldConfig"`
	Options json.RawMessage `json:"options"`
}

// loadDashboard decodes dashboard.json strictly.
func loadDashboard(t *testing.T) *dashboard {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(readFile(t, "dashboard.json")))
	dec.DisallowUnknownFields()
	var d dashboard
	if err := dec.Decode(&d); err != nil {
		t.Fatalf("dashboard.json does not decode strictly: %v", err)
	}
	return &d
}

// wantRows are the dashboard's rows, in the order an operator asks.
var wantRows = []string{"Is slackbot healthy?", "Is anyone waiting?", "What happened?"}

// wantPanels are panels the issue asks for, each in its row.
var wantPanels = map[string]string{
	"Slack ack latency vs Slack's 3 s deadline": "Is slackbot healthy?",
	"Slack API errors and 429s by method":       "Is slackbot healthy?",
	"Upstream MCP servers":                      "Is slackbot healthy?",
	"Redis writes not confirmed by replicas":    "Is slackbot healthy?",
	"Slack reachable":                           "Is slackbot healthy?",
	"Pending approvals by route":                "Is anyone waiting?",
	"Oldest pending approval by route":          "Is anyone waiting?",
	"Time to decision by route":                 "Is anyone waiting?",
	"Resume lag":                                "Is anyone waiting?",
	"Decisions by route and outcome":            "What happened?",
	"Callbacks by result":                       "What happened?",
	"/v1 and /mcp requests by door and status":  "What happened?",
	"/v1 and /mcp request duration":             "What happened?",
}

// The dashboard loads in current Grafana, asks for its Prometheus data
// source and offers a route filter; its rows come in the operator's order
// with the panels asked for; every panel queries the chosen data source,
// has a title, a description and a unit, and the panels tile the grid
// without overlapping.
func TestDashboardShape(t *testing.T) {
	t.Parallel()
	d := loadDashboard(t)
	if d.SchemaVersion != dashboardSchemaVersion || d.UID == "" || d.Title == "" {
		t.Errorf("schemaVersion %d, uid %q, title %q; want schemaVersion %d and a uid and title", d.SchemaVersion, d.UID, d.Title, dashboardSchemaVersion)
	}
	vars := map[string]variable{}
	for _, v := range d.Templating.List {
		vars[v.Name] = v
	}
	if ds := vars["datasource"]; ds.Type != "datasource" || string(ds.Query) != `"prometheus"` {
		t.Errorf("variable datasource: type %q query %s; want a prometheus datasource variable", ds.Type, ds.Query)
	}
	if r := vars["route"]; r.Type != "query" || !r.IncludeAll || r.Datasource == nil || r.Datasource.UID != "${datasource}" {
		t.Errorf("variable route: %+v; want a query variable on ${datasource} with All", r)
	}

	var rows []string
	row := ""
	ids := map[int]bool{}
	var cells [][24]bool // occupied grid cells, by y
	for _, p := range d.Panels {
		if ids[p.ID] {
			t.Errorf("panel id %d is used twice", p.ID)
		}
		ids[p.ID] = true
		g := p.GridPos
		if g.W <= 0 || g.H <= 0 || g.X < 0 || g.X+g.W > 24 {
			t.Errorf("panel %q: gridPos %+v is outside the 24-column grid", p.Title, g)
		}
		for len(cells) < g.Y+g.H {
			cells = append(cells, [24]bool{})
		}
		for y := g.Y; y < g.Y+g.H; y++ {
			for x := max(g.X, 0); x < min(g.X+g.W, 24); x++ {
				if cells[y][x] {
					t.Errorf("panel %q overlaps another at x=%d y=%d", p.Title, x, y)
				}
				cells[y][x] = true
			}
		}
		if p.Type == "row" {
			if p.Collapsed || len(p.Panels) > 0 {
				t.Errorf("row %q is collapsed: keep rows open so every panel is in the top-level list", p.Title)
			}
			row = p.Title
			rows = append(rows, row)
			continue
		}
		if p.Type != "timeseries" && p.Type != "stat" {
			t.Errorf("panel %q: type %q; want timeseries or stat", p.Title, p.Type)
		}
		if p.Title == "" || p.Description == "" || p.FieldConfig.Defaults.Unit == "" {
			t.Errorf("panel %q: title, description and unit are required (unit %q)", p.Title, p.FieldConfig.Defaults.Unit)
		}
		if p.Datasource == nil || p.Datasource.UID != "${datasource}" || len(p.Targets) == 0 {
			t.Errorf("panel %q: datasource %+v, %d targets; want ${datasource} and at least one target", p.Title, p.Datasource, len(p.Targets))
		}
		refs := map[string]bool{}
		for _, tg := range p.Targets {
			if refs[tg.RefID] || tg.RefID == "" || tg.Datasource.UID != "${datasource}" || strings.TrimSpace(tg.Expr) == "" {
				t.Errorf("panel %q target %q: needs a unique refId, ${datasource} and an expression", p.Title, tg.RefID)
			}
			refs[tg.RefID] = true
		}
		if want, ok := wantPanels[p.Title]; ok && want != row {
			t.Errorf("panel %q is in row %q; want %q", p.Title, row, want)
		}
		if row == "" {
			t.Errorf("panel %q comes before the first row", p.Title)
		}
	}
	if !slices.Equal(rows, wantRows) {
		t.Errorf("rows %q; want %q", rows, wantRows)
	}
	for title := range wantPanels {
		if !slices.ContainsFunc(d.Panels, func(p panel) bool { return p.Title == title }) {
			t.Errorf("no panel %q", title)
		}
	}
}

// The ack latency panel shows Slack's deadline: lines at slackbot's 2.5 s
// budget and Slack's 3 s, on an axis that reaches them.
func TestDashboardAckDeadline(t *testing.T) {
	t.Parallel()
	for _, p := range loadDashboard(t).Panels {
		if p.Title != "Slack ack latency vs Slack's 3 s deadline" {
			continue
		}
		def := p.FieldConfig.Defaults
		var steps []float64
		for _, s := range def.Thresholds.Steps {
			if s.Value != nil {
				steps = append(steps, *s.Value)
			}
		}
		if def.Unit != "s" || !slices.Equal(steps, []float64{2.5, 3}) || def.Custom.ThresholdsStyle.Mode == "" || def.Custom.ThresholdsStyle.Mode == "off" {
			t.Errorf("unit %q, threshold steps %v shown as %q; want seconds with lines at 2.5 and 3", def.Unit, steps, def.Custom.ThresholdsStyle.Mode)
		}
		if def.Max == nil || *def.Max < 3 {
			t.Errorf("axis max %v; want at least 3 s so the deadline is on the chart", def.Max)
		}
		var exprs []string
		for _, tg := range p.Targets {
			exprs = append(exprs, tg.Expr)
		}
		all := strings.Join(exprs, "\n")
		if !strings.Contains(all, "histogram_quantile(0.5,") || !strings.Contains(all, "histogram_quantile(0.99,") || !strings.Contains(all, "slackbot_webhook_duration_seconds_bucket") {
			t.Errorf("targets %q; want p50 and p99 of slackbot_webhook_duration_seconds", exprs)
		}
		return
	}
	t.Fatal("no ack latency panel")
}

// grafanaVar matches a Grafana variable in a query: $name, ${name} or
// ${name:format}.
var grafanaVar = regexp.MustCompile(`\$(?:\{(\w+)(?::\w+)?\}|(\w+))`)

// grafanaBuiltins are the variables Grafana itself defines, with a value
// of the kind it substitutes.
var grafanaBuiltins = map[string]string{"__rate_interval": "5m", "__interval": "1m", "__range": "6h"}

// dashboardExprs are the dashboard's PromQL expressions with Grafana's
// variables replaced by a value of their kind, as Grafana does before it
// sends them: every target, and the metric selector of each label_values()
// variable query (Grafana syntax, not PromQL). A variable the dashboard does
// not define is an error.
func dashboardExprs(t *testing.T) []promExpr {
	t.Helper()
	d := loadDashboard(t)
	defined := maps.Clone(grafanaBuiltins)
	for _, v := range d.Templating.List {
		if v.AllValue != "" {
			defined[v.Name] = v.AllValue
		} else {
			defined[v.Name] = "x"
		}
	}
	subst := func(where, q string) string {
		return grafanaVar.ReplaceAllStringFunc(q, func(m string) string {
			sub := grafanaVar.FindStringSubmatch(m)
			name := sub[1] + sub[2]
			v, ok := defined[name]
			if !ok {
				t.Errorf("%s: variable $%s is not defined by the dashboard", where, name)
			}
			return v
		})
	}
	var out []promExpr
	for _, v := range d.Templating.List {
		if v.Type != "query" {
			continue
		}
		var q variableQuery
		if err := json.Unmarshal(v.Query, &q); err != nil {
			t.Fatalf("variable %s: query %s: %v", v.Name, v.Query, err)
		}
		sel, label, err := labelValues(q.Query)
		if err != nil {
			t.Errorf("variable %s: %v", v.Name, err)
			continue
		}
		if v.Definition != q.Query {
			t.Errorf("variable %s: definition %q differs from its query %q", v.Name, v.Definition, q.Query)
		}
		out = append(out, promExpr{where: "dashboard.json variable " + v.Name, query: subst(v.Name, sel), labels: []string{label}})
	}
	for _, p := range d.Panels {
		for _, tg := range p.Targets {
			where := fmt.Sprintf("dashboard.json panel %q target %s", p.Title, tg.RefID)
			out = append(out, promExpr{where: where, query: subst(where, tg.Expr)})
		}
	}
	return out
}

// labelValuesCall is Grafana's label_values(selector, label) variable
// query.
var labelValuesCall = regexp.MustCompile(`^label_values\((.+),\s*(\w+)\)$`)

// labelValues splits a label_values() query into its metric selector,
// which must be PromQL, and the label whose values it lists. The form
// without a selector, label_values(label), is refused: it lists the
// label's values over every metric of the Prometheus, not slackbot's.
func labelValues(q string) (selector, label string, err error) {
	m := labelValuesCall.FindStringSubmatch(strings.TrimSpace(q))
	if m == nil {
		return "", "", fmt.Errorf("query %q: want label_values(<metric selector>, <label>)", q)
	}
	return strings.TrimSpace(m[1]), m[2], nil
}
