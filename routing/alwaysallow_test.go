package routing_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/slackapprove/slackbot/routing"
)

// TestOfferAlwaysAllow: offer_always_allow: true is read, shown by
// routes check, and off by default.
func TestOfferAlwaysAllow(t *testing.T) {
	rs, err := routing.ParseRoutes([]byte(`
routes:
  - name: coding-agents
    when: {tools: ["Bash"]}
    channel: C0APPROVALS
    approvers: {users: [U0ALICE]}
    offer_always_allow: true
  - name: plain
    channel: C0APPROVALS
    approvers: {users: [U0ALICE]}
`), "r.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if !rs.Named("coding-agents").OfferAlwaysAllow || rs.Named("plain").OfferAlwaysAllow {
		t.Errorf("offer_always_allow = %v, %v; want true on coding-agents only", rs.Named("coding-agents").OfferAlwaysAllow, rs.Named("plain").OfferAlwaysAllow)
	}
	var out strings.Builder
	if err := rs.Describe(&out); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "coding-agents  offers the agent's always-allow rule") {
		t.Errorf("routes check does not show offer_always_allow:\n%s", out.String())
	}
}

// TestOfferAlwaysAllowRefused: a value that is not a boolean, and the
// offer on a quorum route (a rule that approves later calls is one
// person's say, as a grant is), are refused at their line.
func TestOfferAlwaysAllowRefused(t *testing.T) {
	route := "routes:\n  - name: r\n    channel: C0APPROVALS\n    approvers: {users: [U0ALICE, U0BOB]}\n"
	for _, tt := range []struct{ extra, want string }{
		{"    offer_always_allow: yes please\n", "5: offer_always_allow: want true or false"},
		{"    required_approvals: 2\n    offer_always_allow: true\n", `6: offer_always_allow needs required_approvals: 1: route "r" needs 2 approvers`},
		{"    offer_always_allows: true\n", `5: unknown field "offer_always_allows"`},
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
	if _, err := routing.ParseRoutes([]byte(route+"    required_approvals: 2\n    offer_always_allow: false\n"), "r.yaml"); err != nil {
		t.Errorf("offer_always_allow: false on a quorum route: %v, want it accepted", err)
	}
}
