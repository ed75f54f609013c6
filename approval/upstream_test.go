package approval_test

import (
	"strings"
	"testing"

	"github.com/slackapprove/slackbot/approval"
	"github.com/slackapprove/slackbot/routing"
)

// MayCall follows the route a call takes, first match wins, as Open does:
// a restricted client reaches a tool only when that route is one of its.
func TestMayCall(t *testing.T) {
	routes, err := routing.ParseRoutes([]byte(`
routes:
  - name: refunds
    when: {tools: ["billing__refund_*"]}
    channel: C0APPROVALS
    approvers: {users: [U0ALICE]}
  - name: billing
    when: {tools: ["billing__*"]}
    channel: C0APPROVALS
    approvers: {users: [U0ALICE]}
`), "routes.yaml")
	if err != nil {
		t.Fatal(err)
	}
	svc := approval.New(approval.Config{Routes: routes})
	for _, tc := range []struct {
		tool    string
		allowed []string
		want    string // "": may call; else in the EFORBIDDEN message
	}{
		{"billing__refund_order", nil, ""},
		{"tickets__search", nil, ""},
		{"billing__refund_order", []string{"refunds"}, ""},
		{"billing__get_invoice", []string{"refunds"}, `route "billing"`},
		// The first match is refunds: a later route does not open it.
		{"billing__refund_order", []string{"billing"}, `route "refunds"`},
		{"tickets__search", []string{"refunds", "billing"}, "no route matches tickets__search"},
		{"billing__get_invoice", []string{}, `route "billing"`},
	} {
		err := svc.MayCall(tc.tool, tc.allowed)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("MayCall(%s, %q) = %v; want nil", tc.tool, tc.allowed, err)
		case tc.want != "" && (approval.ErrorCode(err) != approval.EFORBIDDEN || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("MayCall(%s, %q) = %v; want EFORBIDDEN saying %s", tc.tool, tc.allowed, err, tc.want)
		}
	}
}
