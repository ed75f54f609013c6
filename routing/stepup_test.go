package routing_test

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/slackapprove/slackbot/routing"
)

// TestStepUp: step_up is read as always, a condition on the arguments or
// none; step_up_methods defaults to a passkey; routes check shows both;
// NeedsStepUp judges the arguments that would run, and fails closed.
func TestStepUp(t *testing.T) {
	rs, err := routing.ParseRoutes([]byte(`
routes:
  - name: prod
    when: {tools: ["terraform_apply"]}
    channel: C0APPROVALS
    approvers: {users: [U0ALICE]}
    step_up: true
  - name: payouts
    when: {tools: ["payout"]}
    channel: C0APPROVALS
    approvers: {users: [U0ALICE]}
    step_up: "args.amount > 10000"
    step_up_methods: [webauthn, totp]
  - name: plain
    channel: C0APPROVALS
    approvers: {users: [U0ALICE]}
    step_up: false
`), "r.yaml")
	if err != nil {
		t.Fatal(err)
	}
	prod, payouts, plain := rs.Named("prod"), rs.Named("payouts"), rs.Named("plain")
	if got := prod.StepUpMethodsOrDefault(); !slices.Equal(got, []string{"webauthn"}) {
		t.Errorf("prod's methods = %v, want the default [webauthn]", got)
	}
	if !payouts.AllowsStepUp("totp") || prod.AllowsStepUp("totp") || !prod.AllowsStepUp("webauthn") || prod.AllowsStepUp("sms") {
		t.Errorf("AllowsStepUp: payouts totp %v, prod totp %v; want true, false", payouts.AllowsStepUp("totp"), prod.AllowsStepUp("totp"))
	}
	for _, tt := range []struct {
		route   *routing.Route
		args    string
		want    bool
		wantErr bool
	}{
		{prod, `{"plan":"x"}`, true, false},
		{payouts, `{"amount": 50}`, false, false},
		{payouts, `{"amount": 50000}`, true, false},
		{payouts, `"{\"amount\": 50000}"`, true, false}, // a JSON string holding the object
		{payouts, `{"amount": "lots"}`, true, true},     // a type mismatch fails closed
		{payouts, `{}`, true, true},                     // a missing argument fails closed
		{payouts, `[1]`, true, true},
		{plain, `{"amount": 50000}`, false, false},
	} {
		got, err := tt.route.NeedsStepUp(json.RawMessage(tt.args))
		if got != tt.want || (err != nil) != tt.wantErr {
			t.Errorf("%s.NeedsStepUp(%s) = %v, %v; want %v, error %v", tt.route.Name, tt.args, got, err, tt.want, tt.wantErr)
		}
	}
	var out strings.Builder
	if err := rs.Describe(&out); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"prod     step-up always (webauthn)", "payouts  step-up when args.amount > 10000 (webauthn, totp)"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("routes check does not show %q:\n%s", want, out.String())
		}
	}
	if strings.Contains(out.String(), "plain  step-up") {
		t.Errorf("routes check shows step-up on a route without it:\n%s", out.String())
	}
	var hand *routing.Route = &routing.Route{Name: "hand", StepUp: routing.StepUp{When: "args.x"}}
	if need, err := hand.NeedsStepUp(json.RawMessage(`{}`)); !need || err == nil {
		t.Errorf("a condition never compiled: %v, %v; want true with an error", need, err)
	}
}

// TestStepUpRefused: a bad value, method or condition is refused at its
// line, as every other field of a route is.
func TestStepUpRefused(t *testing.T) {
	route := "routes:\n  - name: r\n    channel: C0APPROVALS\n    approvers: {users: [U0ALICE]}\n"
	for _, tt := range []struct{ extra, want string }{
		{"    step_up: 3\n", "5: step_up: want true, false or a condition on args"},
		{"    step_up: \"\"\n", "5: step_up: want true, false or a condition on args"},
		{"    step_up: \"args.amount >\"\n", "5: step_up does not compile"},
		{"    step_up: \"tool == 'x'\"\n", "5: step_up does not compile: undeclared reference to 'tool'"},
		{"    step_up: \"args.amount\"\n", "5: step_up must be true or false"},
		{"    step_up: true\n    step_up_methods: [sms]\n", `6: step_up_methods: "sms" is not a step-up method`},
		{"    step_up: true\n    step_up_methods: [webauthn, webauthn]\n", `6: step_up_methods: "webauthn" is listed twice`},
		{"    step_up: true\n    step_up_methods: []\n", "6: step_up_methods: list at least one"},
		{"    step_up: true\n    step_up_methods: webauthn\n", "6: step_up_methods: want a list"},
		{"    step_up_methods: [totp]\n", `5: step_up_methods would never apply: route "r" has no step_up`},
		{"    step_ups: true\n", `5: unknown field "step_ups"`},
		{"    step_up: \"args.amount > 100\"\n    offer_always_allow: true\n", `6: offer_always_allow cannot go with step_up`},
	} {
		_, err := routing.ParseRoutes([]byte(route+tt.extra), "r.yaml")
		re, ok := err.(*routing.RoutesError)
		if !ok || len(re.Problems) != 1 {
			t.Errorf("%q: error %v, want one problem", tt.extra, err)
			continue
		}
		if got := fmt.Sprintf("%d: %s", re.Problems[0].Line, re.Problems[0].Message); !strings.HasPrefix(got, tt.want) {
			t.Errorf("%q: problem %q, want prefix %q", tt.extra, got, tt.want)
		}
	}
}
