package approval_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/slackapprove/slackbot/agentrunner"
	"github.com/slackapprove/slackbot/approval"
	"github.com/slackapprove/slackbot/internal/approvaltest"
	"github.com/slackapprove/slackbot/internal/clocktest"
	"github.com/slackapprove/slackbot/routing"
	"github.com/slackapprove/slackbot/store"
	"github.com/slackapprove/slackbot/store/redistest"
)

const attentionRoutes = `
routes:
  - name: deletions
    when: {tools: ["delete"]}
    channel: CDELETE
    approvers: {users: ["UALICE"]}
    timeout: 1h
    remind_every: 20m
    escalate: {after: 30m, channel: CONCALL, approvers: {users: ["UDAVE", "UERIN"], usergroups: ["SONCALL"]}}
  - name: quiet
    when: {tools: ["note"]}
    channel: CNOTE
    approvers: {users: ["UALICE"]}
`

// scheduler records what the Service schedules.
type scheduler struct {
	mu   sync.Mutex
	work map[string][]approval.Scheduled
}

func (s *scheduler) Schedule(_ context.Context, token string, w ...approval.Scheduled) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.work[token] = append(s.work[token], w...)
	return nil
}

func newAttentionFixture(t *testing.T) (*fixture, *scheduler, *clocktest.Clock) {
	t.Helper()
	routes, err := routing.ParseRoutes([]byte(attentionRoutes), "routes.yaml")
	if err != nil {
		t.Fatal(err)
	}
	clock := clocktest.Stopped(time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC))
	rdb, prefix := redistest.Embedded(t)
	st := store.New(rdb, store.Options{Prefix: prefix, Now: clock.Now})
	sch := &scheduler{work: map[string][]approval.Scheduled{}}
	f := &fixture{Store: st, Poster: approvaltest.NewPoster(), Metrics: &metrics{}}
	f.Svc = approval.New(approval.Config{
		Store: st, Poster: f.Poster, Directory: directory{"SONCALL": {"UFRANK"}}, Routes: routes,
		Metrics: f.Metrics, Scheduler: sch, Now: clock.Now,
	})
	t.Cleanup(f.Svc.Close)
	return f, sch, clock
}

// A posted card's route schedules its reminders and escalation (none for
// a route without them); Attend says what to post while the call waits,
// and nothing once it was decided.
func TestAttendWhilePending(t *testing.T) {
	f, sch, clock := newAttentionFixture(t)
	r := f.Open(t, "UCAROL", call("c1", "delete", `{"path":"/tmp/x"}`))
	start := clock.Now()
	want := []approval.Scheduled{
		{Kind: approval.Remind, CallID: "c1", N: 1, At: start.Add(20 * time.Minute)},
		{Kind: approval.Remind, CallID: "c1", N: 2, At: start.Add(40 * time.Minute)},
		{Kind: approval.Escalate, CallID: "c1", At: start.Add(30 * time.Minute)},
	}
	if diff := cmp.Diff(want, sch.work[r.Token]); diff != "" {
		t.Errorf("scheduled (-want +got):\n%s", diff)
	}
	quiet := f.Open(t, "UCAROL", call("n1", "note", `{}`))
	if w := sch.work[quiet.Token]; len(w) != 0 {
		t.Errorf("a route without reminders scheduled %+v", w)
	}

	clock.Add(20 * time.Minute)
	n, err := f.Svc.Attend(t.Context(), r.Token, approval.Scheduled{Kind: approval.Remind, CallID: "c1", N: 1})
	if err != nil || n == nil || n.Route.Name != "deletions" || n.Call.ID != "c1" || n.Call.Message.ID == "" {
		t.Fatalf("Attend while pending = %+v, %v; want a notice with the route and the card", n, err)
	}
	for _, w := range []approval.Scheduled{
		{Kind: approval.Remind, CallID: "nope", N: 1}, // no such call
		{Kind: approval.Remind, CallID: "c1", N: 9},   // more than the route reminds
		{Kind: approval.Escalate, CallID: "n1"},       // wrong token's call
		{Kind: approval.Remind, CallID: "c1", N: 0},   // not a reminder's number
	} {
		if n, err := f.Svc.Attend(t.Context(), r.Token, w); err != nil || n != nil {
			t.Errorf("Attend(%+v) = %+v, %v; want nothing to say", w, n, err)
		}
	}
	if _, err := f.Svc.Attend(t.Context(), r.Token, approval.Scheduled{Kind: "page", CallID: "c1"}); approval.ErrorCode(err) != approval.EINVALID {
		t.Errorf("Attend of an unknown kind: %v, want EINVALID", err)
	}
	if n, err := f.Svc.Attend(t.Context(), agentrunner.NewToken(), want[0]); err != nil || n != nil {
		t.Errorf("Attend for an unknown token = %+v, %v; want nothing", n, err)
	}

	if _, err := f.Click(t, r, "UALICE", "c1", approval.ActionApprove); err != nil {
		t.Fatal(err)
	}
	if n, err := f.Svc.Attend(t.Context(), r.Token, want[2]); err != nil || n != nil {
		t.Errorf("Attend after the decision = %+v, %v; want nothing", n, err)
	}
}

// Once a call has escalated, its escalation approvers (listed, or in a
// listed usergroup) may decide it and nobody else new; before, they are
// refused like anyone. The requester still may not approve their own call.
func TestEscalationExtendsAuthorization(t *testing.T) {
	f, _, clock := newAttentionFixture(t)
	r := f.Open(t, "UERIN", call("c1", "delete", `{"path":"/tmp/x"}`), call("c2", "delete", `{"path":"/tmp/y"}`))
	if _, err := f.Click(t, r, "UDAVE", "c1", approval.ActionApprove); approval.ErrorCode(err) != approval.ENOTAPPROVER {
		t.Fatalf("an escalation approver before the escalation: %v, want ENOTAPPROVER", err)
	}
	if f.Svc.Escalated(r, r.Call("c1")) {
		t.Fatal("escalated before escalate.after")
	}
	clock.Add(30 * time.Minute)
	if !f.Svc.Escalated(r, r.Call("c1")) {
		t.Fatal("not escalated at escalate.after")
	}
	if _, err := f.Click(t, r, "UGRACE", "c1", approval.ActionApprove); approval.ErrorCode(err) != approval.ENOTAPPROVER {
		t.Errorf("someone who is no approver after the escalation: %v, want ENOTAPPROVER", err)
	}
	if _, err := f.Click(t, r, "UERIN", "c1", approval.ActionApprove); approval.ErrorCode(err) != approval.ESELFAPPROVAL {
		t.Errorf("the requester as escalation approver: %v, want ESELFAPPROVAL", err)
	}
	if d, err := f.Click(t, r, "UFRANK", "c1", approval.ActionApprove); err != nil || d.Call.Status != approval.CallApproved {
		t.Errorf("a member of the escalation usergroup: %+v, %v; want approved", d, err)
	}
	if d, err := f.Click(t, r, "UDAVE", "c2", approval.ActionDeny); err != nil || d.Call.Status != approval.CallDenied {
		t.Errorf("a listed escalation approver: %+v, %v; want denied", d, err)
	}
	events, err := f.Store.ReadAudit(t.Context(), "", 0)
	if err != nil {
		t.Fatal(err)
	}
	var noted []string
	for _, ev := range events {
		if ev.Type == "escalation_decided" {
			noted = append(noted, ev.CallID+" "+ev.Detail)
		}
	}
	if diff := cmp.Diff([]string{"c1 approve by UFRANK", "c2 deny by UDAVE"}, noted); diff != "" {
		t.Errorf("decisions audited as after escalation (-want +got):\n%s", diff)
	}
}

// A call left to people records why: the rule that deferred it and, when
// its route's policy failed on it, the error; the store keeps both.
func TestWhyItNeedsApproval(t *testing.T) {
	f := newFixture(t)
	r := f.Open(t, "UERIN", call("c1", "refund", `{"order":"A-1"}`), call("c2", "refund", `{"amount":500}`), call("c3", "note", `{}`))
	want := map[string][2]string{
		"c1": {approval.RuleTool, "no such key: amount"},
		"c2": {approval.RuleTool, ""}, // the policy ran and did not approve
		"c3": {approval.RuleTool, ""}, // a route without policies
	}
	for id, w := range want {
		c := r.Call(id)
		if c.Rule != w[0] || (w[1] == "") != (c.PolicyError == "") || !strings.Contains(c.PolicyError, w[1]) {
			t.Errorf("%s: rule %q, policy error %q; want %q, an error containing %q", id, c.Rule, c.PolicyError, w[0], w[1])
		}
	}

	api, err := f.Svc.Open(t.Context(), approval.Opening{
		Token: agentrunner.NewToken(), Origin: approval.Origin{Client: "billing", Name: "Billing bot"},
		Requests: agentrunner.DeferredToolRequests{Approvals: []agentrunner.ToolCallPart{call("a1", "refund", `{"amount":500}`)}},
	})
	if err != nil {
		t.Fatal(err)
	}
	stored, err := f.Store.Get(t.Context(), api.Token)
	if err != nil {
		t.Fatal(err)
	}
	if c := stored.Call("a1"); c.Rule != approval.RuleClient || c.PolicyError != "" {
		t.Errorf("an API client's call: rule %q, policy error %q; want %q and none", c.Rule, c.PolicyError, approval.RuleClient)
	}
}

// failingUpdates is a poster whose card updates fail while fail is set
// (Slack down, or another replica holding the card).
type failingUpdates struct {
	*poster
	fail atomic.Bool
}

func (p *failingUpdates) Update(ctx context.Context, r *approval.Request, c *approval.Call) (approval.MessageRef, error) {
	if p.fail.Load() {
		return approval.MessageRef{}, errors.New("ratelimited")
	}
	return p.poster.Update(ctx, r, c)
}

// An escalation whose card could not be brought up to date is retried
// (its messages are posted once by the caller's post-once path); the
// audit stream still says "escalated" once.
func TestAttendedAuditsOnceAcrossRetries(t *testing.T) {
	f, _, clock := newAttentionFixture(t)
	p := &failingUpdates{poster: f.Poster}
	routes, err := routing.ParseRoutes([]byte(attentionRoutes), "routes.yaml")
	if err != nil {
		t.Fatal(err)
	}
	svc := approval.New(approval.Config{Store: f.Store, Poster: p, Directory: directory{}, Routes: routes, Metrics: f.Metrics, Now: clock.Now})
	t.Cleanup(svc.Close)
	r := f.Open(t, "UCAROL", call("c1", "delete", `{"path":"/tmp/x"}`))
	clock.Add(30 * time.Minute)
	p.fail.Store(true)
	w := approval.Scheduled{Kind: approval.Escalate, CallID: "c1"}
	for attempt := range 2 {
		n, err := svc.Attend(t.Context(), r.Token, w)
		if err != nil || n == nil {
			t.Fatalf("attempt %d: Attend = %+v, %v", attempt, n, err)
		}
		err = svc.Attended(t.Context(), n)
		if (attempt == 0) != (err != nil) {
			t.Fatalf("attempt %d: Attended = %v", attempt, err)
		}
		p.fail.Store(false)
	}
	events, err := f.Store.ReadAudit(t.Context(), "", 0)
	if err != nil {
		t.Fatal(err)
	}
	escalated := 0
	for _, ev := range events {
		if ev.Type == "escalated" {
			escalated++
		}
	}
	if escalated != 1 {
		t.Errorf("escalated audited %d times, want once", escalated)
	}
}
