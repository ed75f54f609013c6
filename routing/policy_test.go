package routing_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/slackapprove/slackbot/routing"
)

func parseRoutes(t *testing.T, src string) *routing.Routes {
	t.Helper()
	rs, err := routing.ParseRoutes([]byte(src), t.Name()+".yaml")
	if err != nil {
		t.Fatalf("ParseRoutes: %v", err)
	}
	return rs
}

func TestRouteEvaluate(t *testing.T) {
	noon := time.Date(2025, 3, 14, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		name    string
		approve string
		deny    string
		in      routing.PolicyInput
		want    routing.Verdict
		wantErr string
	}{
		{"small refund", "args.amount <= 100", "", routing.PolicyInput{Args: map[string]any{"amount": json.Number("100")}}, routing.AutoApproved, ""},
		{"fractional refund", "args.amount <= 100", "", routing.PolicyInput{Args: map[string]any{"amount": json.Number("99.5")}}, routing.AutoApproved, ""},
		{"large refund", "args.amount <= 100", "", routing.PolicyInput{Args: map[string]any{"amount": json.Number("100.01")}}, routing.Undecided, ""},
		{"whole numbers are ints", "args.count + 1 == 4", "", routing.PolicyInput{Args: map[string]any{"count": json.Number("3")}}, routing.AutoApproved, ""},
		{"deny wins", "true", "args.amount > 1000", routing.PolicyInput{Args: map[string]any{"amount": json.Number("5000")}}, routing.AutoDenied, ""},
		{"deny false, approve true", "true", "args.amount > 1000", routing.PolicyInput{Args: map[string]any{"amount": json.Number("5")}}, routing.AutoApproved, ""},
		{"missing argument", "args.amount <= 100", "", routing.PolicyInput{Args: map[string]any{}}, routing.Undecided, "no such key: amount"},
		// A deny policy that cannot be evaluated must not let approve run.
		{"deny error stops approve", "true", "args.amount > 1000", routing.PolicyInput{}, routing.Undecided, "auto_deny"},
		{"wrong type", "args.amount <= 100", "", routing.PolicyInput{Args: map[string]any{"amount": "lots"}}, routing.Undecided, "no such overload"},
		{"tool and requester", `tool.startsWith("lookup_") && requester != "U0MALLORY"`, "", routing.PolicyInput{Tool: "lookup_order", Requester: "U0CAROL"}, routing.AutoApproved, ""},
		{"channel", `channel == "C0SUPPORT"`, "", routing.PolicyInput{Channel: "C0GENERAL"}, routing.Undecided, ""},
		{"metadata", `has(metadata.risk) && metadata.risk == "low"`, "", routing.PolicyInput{Metadata: map[string]any{"risk": "low"}}, routing.AutoApproved, ""},
		{"nested args", `args.items.all(i, i.qty <= 2)`, "", routing.PolicyInput{Args: map[string]any{"items": []any{map[string]any{"qty": json.Number("1")}, map[string]any{"qty": json.Number("2")}}}}, routing.AutoApproved, ""},
		{"now", `now.getHours("UTC") >= 9 && now.getHours("UTC") < 17`, "", routing.PolicyInput{Now: noon}, routing.AutoApproved, ""},
		{"cost limit", `[1,2,3,4,5,6,7,8,9,10].all(a, [1,2,3,4,5,6,7,8,9,10].all(b, [1,2,3,4,5,6,7,8,9,10].all(c, [1,2,3,4,5,6,7,8,9,10].all(d, [1,2,3,4,5,6,7,8,9,10].all(e, a+b+c+d+e > 0)))))`, "", routing.PolicyInput{}, routing.Undecided, "cost limit"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := "routes:\n  - channel: C0APPROVALS\n    approvers: {users: [U0ALICE]}\n"
			if tt.approve != "" {
				src += "    auto_approve: " + quoteYAML(tt.approve) + "\n"
			}
			if tt.deny != "" {
				src += "    auto_deny: " + quoteYAML(tt.deny) + "\n"
			}
			r := parseRoutes(t, src).Routes[0]
			got, err := r.Evaluate(t.Context(), tt.in)
			if got != tt.want {
				t.Errorf("Evaluate: got %v, want %v (error %v)", got, tt.want, err)
			}
			switch {
			case tt.wantErr == "" && err != nil:
				t.Errorf("Evaluate: unexpected error %v", err)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Errorf("Evaluate: got error %v, want one containing %q", err, tt.wantErr)
			}
		})
	}
}

func quoteYAML(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

func BenchmarkRouteEvaluate(b *testing.B) {
	rs, err := routing.ParseRoutes([]byte(`
routes:
  - channel: C0APPROVALS
    approvers: {users: [U0ALICE]}
    auto_deny: "args.amount > 10000 || requester == 'U0MALLORY'"
    auto_approve: "args.amount <= 100 && tool.startsWith('issue_')"
`), "bench.yaml")
	if err != nil {
		b.Fatal(err)
	}
	r := rs.Routes[0]
	in := routing.PolicyInput{Tool: "issue_refund", Args: map[string]any{"amount": json.Number("40"), "order_id": "o-1"}, Requester: "U0CAROL"}
	for b.Loop() {
		if v, err := r.Evaluate(b.Context(), in); err != nil || v != routing.AutoApproved {
			b.Fatalf("Evaluate = %v, %v", v, err)
		}
	}
}

func BenchmarkParseRoutes(b *testing.B) {
	data, err := os.ReadFile(filepath.Join("testdata", "routes", "valid.yaml"))
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if _, err := routing.ParseRoutes(data, "valid.yaml"); err != nil {
			b.Fatal(err)
		}
	}
}

// HasPolicy is what lets the policy handler skip decoding arguments: it is
// true only for a route with a compiled auto_approve or auto_deny.
func TestRouteHasPolicy(t *testing.T) {
	rs := parseRoutes(t, `
routes:
  - name: approves
    when: {tools: ["refund_*"]}
    channel: C0APPROVALS
    approvers: {users: [U0ALICE]}
    auto_approve: "args.amount <= 100"
  - name: denies
    when: {tools: ["delete_*"]}
    channel: C0APPROVALS
    approvers: {users: [U0ALICE]}
    auto_deny: "true"
  - name: people
    channel: C0APPROVALS
    approvers: {users: [U0ALICE]}
`)
	for i, want := range []bool{true, true, false} {
		if got := rs.Routes[i].HasPolicy(); got != want {
			t.Errorf("route %s: HasPolicy() = %v, want %v", rs.Routes[i].Name, got, want)
		}
	}
	// A Route built by hand decides nothing by policy, as its doc says.
	byHand := &routing.Route{Name: "by-hand", AutoApprove: "true", AutoDeny: "true"}
	if byHand.HasPolicy() {
		t.Error("hand-built route: HasPolicy() = true, want false")
	}
	if v, err := byHand.Evaluate(t.Context(), routing.PolicyInput{}); v != routing.Undecided || err != nil {
		t.Errorf("hand-built route: Evaluate = %v, %v; want undecided, no error", v, err)
	}
}
