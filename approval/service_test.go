package approval_test

import (
	"encoding/json"
	"testing"

	"github.com/slackapprove/slackbot/agentrunner"
	"github.com/slackapprove/slackbot/approval"
	"github.com/slackapprove/slackbot/internal/approvaltest"
	"github.com/slackapprove/slackbot/routing"
	"github.com/slackapprove/slackbot/store"
	"github.com/slackapprove/slackbot/store/redistest"
)

const testRoutes = `
routes:
  - name: deploys
    when: {tools: ["deploy"]}
    channel: CDEPLOY
    approvers: {users: ["UALICE", "UBOB", "UCAROL"]}
    required_approvals: 2
    auto_deny: "args.env == 'prod-eu'"
  - name: refunds
    when: {tools: ["refund"]}
    channel: CREFUND
    approvers: {users: ["UALICE"], usergroups: ["SFIN"]}
    auto_approve: "args.amount <= 10"
  - name: self
    when: {tools: ["note"]}
    channel: CNOTE
    approvers: {users: ["UALICE"]}
    allow_self_approval: true
  - name: ci
    when: {tools: ["ci_deploy"]}
    channel: CDEPLOY
    approvers: {users: ["UALICE", "UBOB", "UCAROL"]}
    required_approvals: 2
    allow_self_approval: true
    auto_deny: "args.env == 'prod-eu'"
`

// The Service's fakes and fixture are approvaltest's, under the names
// these tests have always used.
type (
	poster    = approvaltest.Poster
	directory = approvaltest.Directory
	metrics   = approvaltest.Metrics
	fixture   = approvaltest.Fixture
)

var call = approvaltest.Call

func newFixture(t *testing.T) *fixture {
	t.Helper()
	routes, err := routing.ParseRoutes([]byte(testRoutes), "routes.yaml")
	if err != nil {
		t.Fatal(err)
	}
	rdb, prefix := redistest.Embedded(t)
	st := store.New(rdb, store.Options{Prefix: prefix})
	f := &fixture{Store: st, Poster: approvaltest.NewPoster(), Metrics: &metrics{}}
	f.Svc = approval.New(approval.Config{
		Store: st, Poster: f.Poster, Directory: directory{"SFIN": {"UDAVE"}}, Routes: routes, Metrics: f.Metrics,
	})
	t.Cleanup(f.Svc.Close)
	return f
}

func TestDecideQuorumAndResolve(t *testing.T) {
	f := newFixture(t)
	r := f.Open(t, "UERIN", call("c1", "deploy", `{"env":"staging"}`))
	if _, ok := f.Poster.Posted["c1"]; !ok {
		t.Fatal("no card posted for the routed call")
	}
	d, err := f.Click(t, r, "UALICE", "c1", approval.ActionApprove)
	if err != nil || !d.Changed || d.Call.Status != approval.CallPending || d.Votes != 1 {
		t.Fatalf("first approval of two: %+v, %v; want a counted vote, call still pending", d, err)
	}
	d, err = f.Click(t, r, "UALICE", "c1", approval.ActionApprove)
	if err != nil || d.Changed {
		t.Fatalf("repeated click: changed=%v err=%v, want nothing changed and no error", d != nil && d.Changed, err)
	}
	d, err = f.Click(t, r, "UBOB", "c1", approval.ActionApprove)
	if err != nil || d.Call.Status != approval.CallApproved || !d.Resolved {
		t.Fatalf("second approver: %+v, %v; want the call approved and the request resolved", d, err)
	}
	got, _ := f.Store.Get(t.Context(), r.Token)
	if got.State != approval.StateResolved || !got.Results(nil).Approvals["c1"].Approved {
		t.Errorf("request after quorum: state %s, results %+v", got.State, got.Results(nil))
	}
	if _, err := f.Click(t, r, "UCAROL", "c1", approval.ActionDeny); approval.ErrorCode(err) != approval.ERESOLVED && approval.ErrorCode(err) != approval.EDECIDED {
		t.Errorf("deny after the quorum: code %q (%v), want decided or resolved", approval.ErrorCode(err), err)
	}
}

func TestDecideRefusalsAreCodedAuditedAndChangeNothing(t *testing.T) {
	f := newFixture(t)
	r := f.Open(t, "UALICE", call("c1", "refund", `{"amount":500}`))
	for _, tc := range []struct {
		name string
		by   approval.Decider
		act  approval.Action
		code string
	}{
		{"not an approver", approval.Decider{User: "UMALLORY", Message: f.Poster.Posted["c1"]}, approval.ActionApprove, approval.ENOTAPPROVER},
		{"self-approval", approval.Decider{User: "UALICE", Message: f.Poster.Posted["c1"]}, approval.ActionApprove, approval.ESELFAPPROVAL},
		{"another message", approval.Decider{User: "UDAVE", Message: approval.MessageRef{Channel: "CREFUND", ID: "1.2"}}, approval.ActionApprove, approval.EWRONGMESSAGE},
	} {
		_, err := f.Svc.Decide(t.Context(), r.Token, tc.by, approval.Decision{CallID: "c1", By: tc.by.User, Action: tc.act})
		if got := approval.ErrorCode(err); got != tc.code {
			t.Errorf("%s: code %q (%v), want %q", tc.name, got, err, tc.code)
		}
	}
	got, _ := f.Store.Get(t.Context(), r.Token)
	if c := got.Call("c1"); c.Status != approval.CallPending || len(c.Votes) != 0 {
		t.Errorf("after refusals the call is %s with %d votes; want pending with none", c.Status, len(c.Votes))
	}
	want := []string{approval.ENOTAPPROVER, approval.ESELFAPPROVAL, approval.EWRONGMESSAGE}
	if len(f.Metrics.RefusedCodes) != 3 || f.Metrics.RefusedCodes[0] != want[0] || f.Metrics.RefusedCodes[1] != want[1] || f.Metrics.RefusedCodes[2] != want[2] {
		t.Errorf("refusal metrics = %v, want %v", f.Metrics.RefusedCodes, want)
	}
	evs, err := f.Store.ReadAudit(t.Context(), "0", 100)
	if err != nil {
		t.Fatal(err)
	}
	refused := 0
	for _, ev := range evs {
		if ev.Type == store.AuditRefused {
			refused++
		}
	}
	if refused != 3 {
		t.Errorf("audit stream has %d refusals, want 3", refused)
	}
	// A member of the route's usergroup may; the requester may deny.
	if _, err := f.Click(t, r, "UDAVE", "c1", approval.ActionApprove); err != nil {
		t.Errorf("usergroup member approves: %v", err)
	}
}

func TestSelfApprovalWhenTheRouteAllowsIt(t *testing.T) {
	f := newFixture(t)
	r := f.Open(t, "UALICE", call("c1", "note", `{}`))
	if d, err := f.Click(t, r, "UALICE", "c1", approval.ActionApprove); err != nil || d.Call.Status != approval.CallApproved {
		t.Fatalf("self-approval on a route that allows it: %+v, %v", d, err)
	}
}

func TestEditsAreCheckedByEveryDoor(t *testing.T) {
	f := newFixture(t)
	r := f.Open(t, "UERIN", call("c1", "deploy", `{"env":"staging"}`))
	edit := approval.Decision{CallID: "c1", By: "UALICE", Action: approval.ActionApprove, OverrideArgs: json.RawMessage(`{"env":"prod-eu"}`)}
	_, err := f.Svc.Decide(t.Context(), r.Token, approval.Decider{User: "UALICE", Message: f.Poster.Posted["c1"]}, edit)
	if approval.ErrorCode(err) != approval.EPOLICY {
		t.Errorf("an edit auto_deny matches, from a button: code %q (%v), want policy", approval.ErrorCode(err), err)
	}
	for _, bad := range []string{`[1]`, `{"env":`, `"x"`} {
		edit.OverrideArgs = json.RawMessage(bad)
		_, err := f.Svc.Decide(t.Context(), r.Token, approval.Decider{User: "UALICE", Message: f.Poster.Posted["c1"]}, edit)
		if approval.ErrorCode(err) != approval.EINVALID {
			t.Errorf("edit %s: code %q, want invalid", bad, approval.ErrorCode(err))
		}
	}
	// An edit's vote never counts toward the quorum of other arguments.
	edit.OverrideArgs = json.RawMessage(`{"env":"dev"}`)
	if _, err := f.Svc.Decide(t.Context(), r.Token, approval.Decider{User: "UALICE", Message: f.Poster.Posted["c1"]}, edit); err != nil {
		t.Fatal(err)
	}
	d, err := f.Click(t, r, "UBOB", "c1", approval.ActionApprove)
	if err != nil || d.Call.Status != approval.CallPending {
		t.Errorf("a vote for the original after a vote for an edit: status %v err %v; want still pending (1 vote each)", d.Call.Status, err)
	}
}

func TestAPIAnswerGoesThroughDecide(t *testing.T) {
	f := newFixture(t)
	token := agentrunner.NewToken()
	_, err := f.Svc.Open(t.Context(), approval.Opening{
		Token: token, Origin: approval.Origin{Client: "ci", Name: "the CI"},
		Requests: agentrunner.DeferredToolRequests{Approvals: []agentrunner.ToolCallPart{
			call("a", "ci_deploy", `{"env":"staging"}`), call("b", "refund", `{"amount":5}`),
		}},
	})
	if err != nil {
		t.Fatal(err)
	}
	r, _ := f.Store.Get(t.Context(), token)
	if c := r.Call("b"); c.Status != approval.CallApproved || c.DecidedBy != "policy:refunds" {
		t.Errorf("refund under auto_approve: %s by %q, want approved by policy:refunds", c.Status, c.DecidedBy)
	}
	if _, ok := f.Poster.Posted["b"]; ok {
		t.Error("a card was posted for a call the policy decided")
	}
	// Another client's request is not found; an edit auto_deny matches is refused; nothing is recorded.
	if _, err := f.Svc.Decide(t.Context(), token, approval.Decider{Client: "other"}, approval.Decision{CallID: "a", Action: approval.ActionApprove}); approval.ErrorCode(err) != approval.ENOTFOUND {
		t.Errorf("another client answers: code %q, want not_found", approval.ErrorCode(err))
	}
	_, err = f.Svc.Decide(t.Context(), token, approval.Decider{Client: "ci"},
		approval.Decision{CallID: "a", Action: approval.ActionApprove, OverrideArgs: json.RawMessage(`{"env":"prod-eu"}`)})
	if approval.ErrorCode(err) != approval.EPOLICY {
		t.Errorf("API override auto_deny matches: code %q (%v), want policy", approval.ErrorCode(err), err)
	}
	if _, err := f.Svc.Decide(t.Context(), token, approval.Decider{Client: "ci"}, approval.Decision{CallID: "b", Action: approval.ActionDeny}); approval.ErrorCode(err) != approval.ECONFLICT {
		t.Errorf("answer to a decided call: code %q, want conflict", approval.ErrorCode(err))
	}
	// On a route that lets the requester approve, the client's approval
	// is authoritative: a 2-approver call is approved at once.
	d, err := f.Svc.Decide(t.Context(), token, approval.Decider{Client: "ci"}, approval.Decision{CallID: "a", By: "jo", Action: approval.ActionApprove})
	if err != nil || !d.Resolved {
		t.Fatalf("client approves: %+v, %v", d, err)
	}
	if got := d.Request.Results(nil).AnsweredBy["a"]; got != "ci/jo" {
		t.Errorf("answered_by = %q, want the client before the name it gave (ci/jo)", got)
	}
}

func TestOpenRoutesAsAsked(t *testing.T) {
	f := newFixture(t)
	req := agentrunner.DeferredToolRequests{Approvals: []agentrunner.ToolCallPart{call("a", "deploy", `{}`)}}
	for _, tc := range []struct {
		o    approval.Opening
		code string
	}{
		{approval.Opening{Route: "nope"}, approval.ENOROUTE},
		{approval.Opening{Route: "refunds"}, approval.EFORBIDDEN}, // refunds does not match deploy
		{approval.Opening{AllowedRoutes: []string{"refunds"}}, approval.EFORBIDDEN},
	} {
		tc.o.Token, tc.o.Requests, tc.o.Origin = agentrunner.NewToken(), req, approval.Origin{Client: "ci"}
		_, err := f.Svc.Open(t.Context(), tc.o)
		if approval.ErrorCode(err) != tc.code {
			t.Errorf("Open(%+v): code %q (%v), want %q", tc.o.Route, approval.ErrorCode(err), err, tc.code)
		}
		if _, err := f.Store.Get(t.Context(), tc.o.Token); approval.ErrorCode(err) != approval.ENOTFOUND {
			t.Errorf("a refused Open recorded the request (%v)", err)
		}
	}
}

func TestAskDeniesUnroutedAndFailsUnpostable(t *testing.T) {
	f := newFixture(t)
	r := f.Open(t, "UERIN", call("c1", "rm_rf", `{}`), call("c2", "deploy", `{}`))
	if c := r.Call("c1"); c.Status != approval.CallDenied || c.DecidedBy != approval.ByNoRoute {
		t.Errorf("unrouted call: %s by %q, want denied by %s", c.Status, c.DecidedBy, approval.ByNoRoute)
	}
	f.Poster.Fail = true
	r = f.Open(t, "UERIN", call("c3", "deploy", `{}`))
	if c := r.Call("c3"); c.Status != approval.CallDenied || c.Reason == "" {
		t.Errorf("call whose card could not be posted: %s (%q), want denied with the reason", c.Status, c.Reason)
	}
}

var _ approval.RunSaver = (*store.Store)(nil)

func TestAnswerTakesTheWireFormat(t *testing.T) {
	f := newFixture(t)
	token := agentrunner.NewToken()
	if _, err := f.Svc.Open(t.Context(), approval.Opening{
		Token: token, Origin: approval.Origin{Client: "ci"},
		Requests: agentrunner.DeferredToolRequests{Approvals: []agentrunner.ToolCallPart{
			call("b", "ci_deploy", `{"env":"dev"}`), call("a", "ci_deploy", `{"env":"staging"}`),
		}},
	}); err != nil {
		t.Fatal(err)
	}
	res := agentrunner.NewDeferredToolResults()
	res.Approvals["a"] = agentrunner.Deny("not today")
	res.Approvals["b"] = agentrunner.Approve()
	res.Metadata["b"] = map[string]any{"ticket": "OPS-1"}
	res.AnsweredBy["a"] = "jo"
	d, err := f.Svc.Answer(t.Context(), token, approval.Decider{Client: "ci"}, res)
	if err != nil || !d.Resolved {
		t.Fatalf("Answer: %+v, %v", d, err)
	}
	got := d.Request.Results(nil)
	if got.Approvals["a"].Approved || got.Approvals["a"].DenialMessage() != "not today" || !got.Approvals["b"].Approved {
		t.Errorf("results = %+v, want a denied (not today) and b approved", got.Approvals)
	}
	if got.AnsweredBy["a"] != "ci/jo" || got.AnsweredBy["b"] != "ci" {
		t.Errorf("answered_by = %v, want a by ci/jo, b by ci", got.AnsweredBy)
	}
	if got.Metadata["b"]["ticket"] != "OPS-1" {
		t.Errorf("metadata of b = %v, want the client's", got.Metadata["b"])
	}
	ds := approval.Decisions(res)
	if len(ds) != 2 || ds[0].CallID != "a" || ds[1].CallID != "b" {
		t.Errorf("Decisions order = %+v, want a then b (approvals by id)", ds)
	}
}
