package approval_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/slackapprove/slackbot/agentrunner"
	"github.com/slackapprove/slackbot/approval"
	"github.com/slackapprove/slackbot/internal/approvaltest"
	"github.com/slackapprove/slackbot/internal/clocktest"
	"github.com/slackapprove/slackbot/routing"
	"github.com/slackapprove/slackbot/store"
	"github.com/slackapprove/slackbot/store/redistest"
)

const grantRoutes = `
routes:
  - name: refunds
    when: {tools: ["refund"]}
    channel: CREFUND
    approvers: {users: ["UALICE"], usergroups: ["SFIN"]}
    timeout: 2h
    grants: 8h
    escalate: {after: 30m, channel: CONCALL, approvers: {users: ["UDAVE"]}}
  - name: deploys
    when: {tools: ["deploy"]}
    channel: CDEPLOY
    approvers: {users: ["UALICE", "UBOB"]}
    required_approvals: 2
`

// groups is a Directory whose usergroups change while the test runs.
type groups struct {
	mu      sync.Mutex
	members map[string][]string
}

func (g *groups) Members(_ context.Context, id string) ([]string, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.members[id], nil
}
func (g *groups) Warm(...string) {}

func (g *groups) set(id string, users ...string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.members[id] = users
}

func newGrantFixture(t *testing.T) (*fixture, *groups, *clocktest.Clock) {
	t.Helper()
	routes, err := routing.ParseRoutes([]byte(grantRoutes), "routes.yaml")
	if err != nil {
		t.Fatal(err)
	}
	clock := clocktest.Stopped(time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC))
	rdb, prefix := redistest.Embedded(t)
	st := store.New(rdb, store.Options{Prefix: prefix, Now: clock.Now})
	dir := &groups{members: map[string][]string{"SFIN": {"UBOB"}}}
	f := &fixture{Store: st, Poster: approvaltest.NewPoster(), Metrics: &metrics{}}
	f.Svc = approval.New(approval.Config{
		Store: st, Poster: f.Poster, Directory: dir, Routes: routes, Metrics: f.Metrics, Grants: st, Now: clock.Now,
	})
	t.Cleanup(f.Svc.Close)
	return f, dir, clock
}

// An escalation approver may decide an escalated call, once: a grant
// would approve later calls that never escalated, which they may not
// decide. Their "Approve for 8 h" is refused (audited) and changes nothing.
func TestEscalationApproverCannotGrant(t *testing.T) {
	f, _, clock := newGrantFixture(t)
	r := f.Open(t, "UCAROL", call("c1", "refund", `{"amount":50}`))
	clock.Add(30 * time.Minute)
	if _, err := f.GrantClick(t, r, "UDAVE", "c1", 8*time.Hour); approval.ErrorCode(err) != approval.ENOTAPPROVER {
		t.Fatalf("an escalation approver grants: %v, want ENOTAPPROVER", err)
	}
	if got, _ := f.Store.Get(t.Context(), r.Token); got.Call("c1").Status != approval.CallPending {
		t.Errorf("the refused grant decided the call: %s", got.Call("c1").Status)
	}
	if g, _ := f.Svc.Grants(t.Context(), "UDAVE"); len(g) != 0 {
		t.Errorf("grants made: %+v", g)
	}
	if d, err := f.Click(t, r, "UDAVE", "c1", approval.ActionApprove); err != nil || d.Call.Status != approval.CallApproved {
		t.Errorf("the escalation approver approves once: %+v, %v", d, err)
	}
	again := f.Open(t, "UCAROL", call("c2", "refund", `{"amount":50}`))
	if c := again.Call("c2"); c.Status != approval.CallPending {
		t.Errorf("the repeat call: %s by %s, want a card", c.Status, c.DecidedBy)
	}
}

// A grant approves only while its approver still may: one who left the
// route's usergroup, or a grant older than the route now allows, leaves
// the repeat call to a card.
func TestGrantNeedsItsApproverStill(t *testing.T) {
	f, dir, clock := newGrantFixture(t)
	r := f.Open(t, "UCAROL", call("c1", "refund", `{"amount":50}`))
	if d, err := f.GrantClick(t, r, "UBOB", "c1", 8*time.Hour); err != nil || d.Call.Status != approval.CallApproved {
		t.Fatalf("Bob grants: %+v, %v", d, err)
	}
	if c := f.Open(t, "UCAROL", call("c2", "refund", `{"amount":50}`)).Call("c2"); c.Status != approval.CallApproved || c.DecidedBy != approval.ByGrantPrefix+"UBOB" {
		t.Fatalf("the repeat while Bob approves refunds: %s by %s, want approved by his grant", c.Status, c.DecidedBy)
	}
	dir.set("SFIN")
	if c := f.Open(t, "UCAROL", call("c3", "refund", `{"amount":50}`)).Call("c3"); c.Status != approval.CallPending {
		t.Errorf("the repeat after Bob left SFIN: %s by %s, want a card", c.Status, c.DecidedBy)
	}
	dir.set("SFIN", "UBOB")
	clock.Add(8*time.Hour + time.Minute)
	if c := f.Open(t, "UCAROL", call("c4", "refund", `{"amount":50}`)).Call("c4"); c.Status != approval.CallPending {
		t.Errorf("the repeat after the grant ended: %s by %s, want a card", c.Status, c.DecidedBy)
	}
}

// A grant follows the routing file it is used under (a replica started
// with a new one): one made while self-approval was allowed, or for longer
// than the route now grants, approves nothing it would not allow today.
func TestGrantFollowsTheRoutingFile(t *testing.T) {
	clock := clocktest.Stopped(time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC))
	rdb, prefix := redistest.Embedded(t)
	st := store.New(rdb, store.Options{Prefix: prefix, Now: clock.Now})
	service := func(routes string) *fixture {
		rs, err := routing.ParseRoutes([]byte(routes), "routes.yaml")
		if err != nil {
			t.Fatal(err)
		}
		f := &fixture{Store: st, Poster: approvaltest.NewPoster(), Metrics: &metrics{}}
		f.Svc = approval.New(approval.Config{Store: st, Poster: f.Poster, Directory: directory{}, Routes: rs, Metrics: f.Metrics, Grants: st, Now: clock.Now})
		t.Cleanup(f.Svc.Close)
		return f
	}
	const route = `
routes:
  - name: notes
    when: {tools: ["note"]}
    channel: CNOTE
    approvers: {users: ["UALICE", "UCAROL"]}
    grants: 8h
`
	before := service(route + "    allow_self_approval: true\n")
	for _, c := range []struct{ requester, approver, id string }{{"UCAROL", "UCAROL", "c1"}, {"UERIN", "UALICE", "c2"}} {
		r := before.Open(t, c.requester, call(c.id, "note", `{"text":"hi"}`))
		if d, err := before.GrantClick(t, r, c.approver, c.id, 8*time.Hour); err != nil || d.Call.Status != approval.CallApproved {
			t.Fatalf("%s grants %s's call: %+v, %v", c.approver, c.requester, d, err)
		}
	}
	now := service(route)
	if c := now.Open(t, "UCAROL", call("c3", "note", `{"text":"hi"}`)).Call("c3"); c.Status != approval.CallPending {
		t.Errorf("Carol's own grant without self-approval: %s by %s, want a card", c.Status, c.DecidedBy)
	}
	if c := now.Open(t, "UERIN", call("c4", "note", `{"text":"hi"}`)).Call("c4"); c.Status != approval.CallApproved {
		t.Errorf("Alice's grant for Erin: %s, want approved", c.Status)
	}
	clock.Add(time.Hour)
	shorter := service(strings.Replace(route, "grants: 8h", "grants: 1h", 1))
	if c := shorter.Open(t, "UERIN", call("c5", "note", `{"text":"hi"}`)).Call("c5"); c.Status != approval.CallPending {
		t.Errorf("an 8 h grant an hour old on a route that now grants 1 h: %s by %s, want a card", c.Status, c.DecidedBy)
	}
}

// A forged "Approve for …" (a length the route does not offer, a route
// without grants or with a quorum, edited arguments, the requester's own
// call, someone who is no approver) is refused and changes nothing.
func TestGrantRefusesWhatTheRouteDoesNotOffer(t *testing.T) {
	f, _, _ := newGrantFixture(t)
	r := f.Open(t, "UCAROL", call("c1", "refund", `{"amount":50}`))
	q := f.Open(t, "UCAROL", call("q1", "deploy", `{"env":"prod"}`))
	own := f.Open(t, "UBOB", call("o1", "refund", `{"amount":50}`))
	for _, tt := range []struct {
		name string
		r    *approval.Request
		user string
		d    approval.Decision
		code string
	}{
		{"2 h on a route of 1 h / 8 h", r, "UALICE", approval.Decision{CallID: "c1", Grant: 2 * time.Hour}, approval.EINVALID},
		{"9 h, beyond the route", r, "UALICE", approval.Decision{CallID: "c1", Grant: 9 * time.Hour}, approval.EINVALID},
		{"a huge length", r, "UALICE", approval.Decision{CallID: "c1", Grant: time.Duration(1 << 62)}, approval.EINVALID},
		{"a negative length", r, "UALICE", approval.Decision{CallID: "c1", Grant: -time.Hour}, approval.EINVALID},
		{"edited arguments", r, "UALICE", approval.Decision{CallID: "c1", Grant: time.Hour, OverrideArgs: []byte(`{"amount":5000}`)}, approval.EINVALID},
		{"a denial", r, "UALICE", approval.Decision{CallID: "c1", Grant: time.Hour, Action: approval.ActionDeny}, approval.EINVALID},
		{"a quorum route", q, "UALICE", approval.Decision{CallID: "q1", Grant: time.Hour}, approval.EINVALID},
		{"no approver", r, "UGRACE", approval.Decision{CallID: "c1", Grant: time.Hour}, approval.ENOTAPPROVER},
		{"the requester's own call", own, "UBOB", approval.Decision{CallID: "o1", Grant: time.Hour}, approval.ESELFAPPROVAL},
	} {
		d := tt.d
		d.By = tt.user
		if d.Action == "" {
			d.Action = approval.ActionApprove
		}
		_, err := f.Svc.Decide(t.Context(), tt.r.Token, approval.Decider{User: tt.user, Message: f.Poster.Posted[d.CallID]}, d)
		if approval.ErrorCode(err) != tt.code {
			t.Errorf("%s: %v, want %s", tt.name, err, tt.code)
		}
	}
	for _, req := range []*approval.Request{r, q, own} {
		got, _ := f.Store.Get(t.Context(), req.Token)
		for _, c := range got.Calls {
			if c.Status != approval.CallPending || len(c.Votes) > 0 {
				t.Errorf("%s after refused grants: %s, votes %v", c.ID, c.Status, c.Votes)
			}
		}
	}
	for _, u := range []string{"UALICE", "UBOB", "UGRACE"} {
		if g, _ := f.Svc.Grants(t.Context(), u); len(g) != 0 {
			t.Errorf("%s made grants: %+v", u, g)
		}
	}
}

// Arguments no grant can hold exactly (a number beyond what a double
// says) never reach a card to grant from: they read two ways, so asking
// refuses them, naming the number, with nothing recorded (checkGrant
// still refuses them in a request recorded before that rule).
func TestGrantRefusesArgumentsItCannotHold(t *testing.T) {
	f, _, _ := newGrantFixture(t)
	token := agentrunner.NewToken()
	rc := &agentrunner.RunContext{RunID: "run-1", Deps: &approval.Origin{Team: "T1", Channel: "CGENERAL", User: "UCAROL"}}
	_, err := f.Svc.Ask(nil)(t.Context(), rc, agentrunner.DeferredToolRequests{Approvals: []agentrunner.ToolCallPart{call("c1", "refund", `{"to":9007199254740993}`)}}, token)
	if approval.ErrorCode(err) != approval.EINVALID || !strings.Contains(approval.ErrorMessage(err), "number 9007199254740993 at /to") {
		t.Fatalf("asking with an inexact number: %v, want EINVALID naming it", err)
	}
	if _, err := f.Store.Get(t.Context(), token); approval.ErrorCode(err) != approval.ENOTFOUND || len(f.Poster.Posted) != 0 {
		t.Errorf("the refused request was recorded (%v) or posted (%v)", err, f.Poster.Posted)
	}
}

// A grant on an API client's request covers what its card named: the same
// key and the same name the client gave (a coding agent's working
// directory, an MCP client), not every workstation that shares the key.
func TestGrantCoversTheClientTheCardNamed(t *testing.T) {
	f, _, _ := newGrantFixture(t)
	const shop = "Claude Code (/home/ana/shop)"
	n := 0
	open := func(o approval.Origin) (*approval.Request, *approval.Call) {
		t.Helper()
		n++
		token, id := agentrunner.NewToken(), fmt.Sprintf("c%d", n)
		if _, err := f.Svc.Open(t.Context(), approval.Opening{Token: token, Origin: o,
			Requests: agentrunner.DeferredToolRequests{Approvals: []agentrunner.ToolCallPart{call(id, "refund", `{"amount":50}`)}}}); err != nil {
			t.Fatalf("open from %+v: %v", o, err)
		}
		r, err := f.Store.Get(t.Context(), token)
		if err != nil {
			t.Fatal(err)
		}
		return r, r.Call(id)
	}
	r, first := open(approval.Origin{Client: "laptop", Name: shop})
	if d, err := f.GrantClick(t, r, "UALICE", first.ID, 8*time.Hour); err != nil || d.Call.Status != approval.CallApproved {
		t.Fatalf("Alice grants: %+v, %v", d, err)
	}
	for _, tt := range []struct {
		why     string
		origin  approval.Origin
		granted bool
	}{
		{"another working directory, same key", approval.Origin{Client: "laptop", Name: "Claude Code (/home/bo/bank)"}, false},
		{"another MCP client, same key", approval.Origin{Client: "laptop", Name: "laptop via Cursor 1.2"}, false},
		{"no name, same key", approval.Origin{Client: "laptop"}, false},
		{"the same name, another key", approval.Origin{Client: "desktop", Name: shop}, false},
		{"what the card named", approval.Origin{Client: "laptop", Name: shop}, true},
	} {
		_, c := open(tt.origin)
		if got := c.Status == approval.CallApproved && c.DecidedBy == approval.ByGrantPrefix+"UALICE"; got != tt.granted {
			t.Errorf("%s: %s by %q, granted %v, want %v", tt.why, c.Status, c.DecidedBy, got, tt.granted)
		}
	}
}
