package apitest

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// Keys of the API's test clients, as API_KEYS: billing and support may
// use every route, opsbot only the ops route.
const (
	KeyBilling = "billing-key-0123456789abcdef"
	KeySupport = "support-key-0123456789abcdef"
	KeyOps     = "opsbot-key-0123456789abcdef"
	Keys       = "billing=" + KeyBilling + ", support=" + KeySupport + ", opsbot=" + KeyOps + "@ops"
)

// Routes is the routing file the API's tests (and the clients' tests in
// clients/) run with: refunds with policies, deletions (30 min), ops (in
// C0GENERAL, 10 min), reports for external calls, and two routes whose
// requesting API key may approve or deny its own calls (allow_self_approval):
// self-approved, deletions a client names (route "self-approved") to answer
// its own approvals, and sandbox, edits included unless auto_deny refuses them.
const Routes = `
default_timeout: 1h
routes:
  - name: refunds
    when: {tools: ["issue_refund"]}
    channel: C0APPROVALS
    approvers: {users: [U0ALICE]}
    auto_approve: 'args.amount <= 10'
    auto_deny: 'args.amount > 10000'
  - name: deletions
    when: {tools: ["delete_*"]}
    channel: C0APPROVALS
    approvers: {users: [U0ALICE, U0BOB]}
    timeout: 30m
  - name: ops
    when: {tools: ["deploy_*"]}
    channel: C0GENERAL
    approvers: {users: [U0BOB]}
    timeout: 10m
  - name: reports
    when: {tools: ["fetch_*"]}
    channel: C0APPROVALS
    approvers: {users: [U0ALICE]}
  - name: self-approved
    when: {tools: ["delete_*"]}
    channel: C0APPROVALS
    approvers: {users: [U0ALICE]}
    allow_self_approval: true
  - name: sandbox
    when: {tools: ["sandbox_*"]}
    channel: C0APPROVALS
    approvers: {users: [U0ALICE]}
    allow_self_approval: true
    auto_deny: 'has(args.amount) && args.amount > 10000'
`

// JSONEqual fails t unless got and want are the same JSON value.
func JSONEqual(t *testing.T, what string, got []byte, want string) {
	t.Helper()
	var g, w any
	if err := json.Unmarshal(got, &g); err != nil {
		t.Fatalf("%s: %v in %s", what, err, got)
	}
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatalf("%s: bad want: %v", what, err)
	}
	if diff := cmp.Diff(w, g); diff != "" {
		t.Errorf("%s (-want +got):\n%s\ngot %s", what, diff, got)
	}
}
