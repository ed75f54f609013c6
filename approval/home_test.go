package approval_test

import (
	"context"
	"fmt"
	"net"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/slackapprove/slackbot/agentrunner"
	"github.com/slackapprove/slackbot/approval"
	"github.com/slackapprove/slackbot/internal/approvaltest"
	"github.com/slackapprove/slackbot/internal/clocktest"
	"github.com/slackapprove/slackbot/routing"
	"github.com/slackapprove/slackbot/store"
	"github.com/slackapprove/slackbot/store/redistest"
)

// homeFixture is the attention fixture's routing on the real store, with
// App Home wired as cmd/slackbot wires it: the store lists, its job queue
// (the Scheduler) republishes.
type homeFixture struct {
	*fixture
	rdb    redis.UniversalClient
	prefix string
	clock  *clocktest.Clock
}

func newHomeFixture(t *testing.T) *homeFixture {
	t.Helper()
	routes, err := routing.ParseRoutes([]byte(attentionRoutes), "routes.yaml")
	if err != nil {
		t.Fatal(err)
	}
	clock := clocktest.Stopped(time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC))
	rdb, prefix := redistest.Embedded(t)
	st := store.New(rdb, store.Options{Prefix: prefix, Now: clock.Now})
	f := &fixture{Store: st, Poster: approvaltest.NewPoster(), Metrics: &metrics{}}
	f.Svc = approval.New(approval.Config{
		Store: st, Poster: f.Poster, Directory: directory{"SONCALL": {"UFRANK"}}, Routes: routes,
		Metrics: f.Metrics, Scheduler: st.JobQueue(0), Now: clock.Now,
	})
	t.Cleanup(f.Svc.Close)
	return &homeFixture{fixture: f, rdb: rdb, prefix: prefix, clock: clock}
}

func homeIDs(calls []approval.HomeCall) []string {
	var ids []string
	for _, hc := range calls {
		ids = append(ids, hc.Call.ID)
	}
	return ids
}

func (f *homeFixture) home(t *testing.T, user string) *approval.HomeView {
	t.Helper()
	v, err := f.Svc.Home(t.Context(), user)
	if err != nil {
		t.Fatalf("Home(%s): %v", user, err)
	}
	return v
}

// A Home lists exactly the pending calls its viewer may decide, oldest
// first: their routes' calls, not others' routes, never their own call on
// a route without self-approval (that one is under their requests), and
// escalated calls for escalation approvers (listed or by usergroup) only
// once escalate.after has passed; decided calls leave it.
func TestHomeListsWhatTheViewerMayDecide(t *testing.T) {
	f := newHomeFixture(t)
	del := f.Open(t, "UCAROL", call("d1", "delete", `{"path":"/tmp/x"}`))
	f.clock.Add(time.Second)
	note := f.Open(t, "UCAROL", call("n1", "note", `{}`))
	f.clock.Add(time.Second)
	own := f.Open(t, "UALICE", call("d2", "delete", `{"path":"/tmp/own"}`))

	alice := f.home(t, "UALICE")
	if got := strings.Join(homeIDs(alice.Waiting), ","); got != "d1,n1" {
		t.Errorf("Alice's Waiting = %s, want d1,n1 (oldest first, not her own d2)", got)
	}
	if got := strings.Join(homeIDs(alice.Requests), ","); got != "d2" {
		t.Errorf("Alice's Requests = %s, want d2", got)
	}
	carol := f.home(t, "UCAROL")
	if len(carol.Waiting) != 0 || strings.Join(homeIDs(carol.Requests), ",") != "d1,n1" {
		t.Errorf("Carol's Home: waiting %v, requests %v; want nothing waiting, d1,n1 requested", homeIDs(carol.Waiting), homeIDs(carol.Requests))
	}
	for _, u := range []string{"UDAVE", "UFRANK"} {
		if v := f.home(t, u); len(v.Waiting) != 0 {
			t.Errorf("%s's Waiting before the escalation = %v, want none", u, homeIDs(v.Waiting))
		}
	}

	f.clock.Add(30 * time.Minute) // escalate.after
	for _, u := range []string{"UDAVE", "UFRANK"} {
		v := f.home(t, u)
		if got := strings.Join(homeIDs(v.Waiting), ","); got != "d1,d2" || !v.Waiting[0].Escalated {
			t.Errorf("%s's Waiting after the escalation = %s (escalated %v), want d1,d2 escalated", u, got, len(v.Waiting) > 0 && v.Waiting[0].Escalated)
		}
	}
	if v := f.home(t, "UALICE"); len(v.Waiting) != 2 || v.Waiting[0].Escalated {
		t.Errorf("Alice's own route's call shows as escalated to her: %+v", v.Waiting)
	}

	if _, err := f.Click(t, del, "UALICE", "d1", approval.ActionApprove); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(homeIDs(f.home(t, "UALICE").Waiting), ","); got != "n1" {
		t.Errorf("Alice's Waiting after she decided d1 = %s, want n1", got)
	}
	_, _ = note, own
}

// Each list shows at most MaxHomeCalls calls and counts the rest; expired
// requests are left out.
func TestHomeIsBounded(t *testing.T) {
	f := newHomeFixture(t)
	for i := range approval.MaxHomeCalls + 3 {
		f.Open(t, "UCAROL", call("n"+string(rune('a'+i)), "note", `{}`))
		f.clock.Add(time.Millisecond)
	}
	v := f.home(t, "UALICE")
	if len(v.Waiting) != approval.MaxHomeCalls || v.MoreWaiting != 3 {
		t.Errorf("Waiting %d + %d more, want %d + 3", len(v.Waiting), v.MoreWaiting, approval.MaxHomeCalls)
	}
	if c := f.home(t, "UCAROL"); len(c.Requests) != approval.MaxHomeCalls || c.MoreRequests != 3 {
		t.Errorf("Requests %d + %d more, want %d + 3", len(c.Requests), c.MoreRequests, approval.MaxHomeCalls)
	}
	f.clock.Add(25 * time.Hour) // past every deadline, before the sweep
	if v := f.home(t, "UALICE"); len(v.Waiting) != 0 || v.MoreWaiting != 0 {
		t.Errorf("expired calls are listed: %d + %d", len(v.Waiting), v.MoreWaiting)
	}
}

// A click from the viewer's Home has no card: the card check lets it
// through (Decider.Home), the rest of the authorization does not change
// (a non-approver is refused and audited; a call decided meanwhile gets
// EDECIDED), and a click claiming another message is still refused.
func TestDecideFromHome(t *testing.T) {
	f := newHomeFixture(t)
	r := f.Open(t, "UCAROL", call("d1", "delete", `{"path":"/tmp/x"}`))
	other := approval.MessageRef{Channel: "CDELETE", ID: "1.000001"}
	approve := approval.Decision{CallID: "d1", By: "UALICE", Action: approval.ActionApprove}
	if _, err := f.Svc.Decide(t.Context(), r.Token, approval.Decider{User: "UALICE", Message: other}, approve); approval.ErrorCode(err) != approval.EWRONGMESSAGE {
		t.Errorf("a click from another message: %v, want EWRONGMESSAGE", err)
	}
	if _, err := f.Svc.Decide(t.Context(), r.Token, approval.Decider{User: "UALICE"}, approve); approval.ErrorCode(err) != approval.EWRONGMESSAGE {
		t.Errorf("a click naming no card and not from Home: %v, want EWRONGMESSAGE", err)
	}
	bob := approval.Decision{CallID: "d1", By: "UBOB", Action: approval.ActionApprove}
	if _, err := f.Svc.Decide(t.Context(), r.Token, approval.Decider{User: "UBOB", Home: true}, bob); approval.ErrorCode(err) != approval.ENOTAPPROVER {
		t.Errorf("a non-approver's Home click: %v, want ENOTAPPROVER", err)
	}
	d, err := f.Svc.Decide(t.Context(), r.Token, approval.Decider{User: "UALICE", Home: true}, approve)
	if err != nil || !d.Changed || d.Call.Status != approval.CallApproved {
		t.Fatalf("Alice's Home click = %+v, %v; want approved", d, err)
	}
	deny := approval.Decision{CallID: "d1", By: "UALICE", Action: approval.ActionDeny}
	if _, err := f.Svc.Decide(t.Context(), r.Token, approval.Decider{User: "UALICE", Home: true}, deny); approval.ErrorCode(err) != approval.EDECIDED {
		t.Errorf("a Home click on a call decided meanwhile: %v, want EDECIDED", err)
	}
	f.Svc.Close()
	if n := f.Poster.Updates["d1"]; n == 0 {
		t.Error("the Home decision did not update the card")
	}
	audit, err := f.Store.ReadAudit(t.Context(), "", 100)
	if err != nil {
		t.Fatal(err)
	}
	var refusedBob bool
	for _, e := range audit {
		if e.Type == store.AuditRefused && e.By == "UBOB" && e.Code == approval.ENOTAPPROVER {
			refusedBob = true
		}
	}
	if !refusedBob {
		t.Errorf("Bob's refused Home click is not in the audit stream: %v", audit)
	}
}

// A change republishes the Homes of the people it concerns who opened
// theirs recently (not those whose Home was only built), once per person
// within HomeCoalesce however many changes: one home.refresh job each, due
// after the coalescing delay.
func TestHomeChangedSchedulesOneRefreshPerViewer(t *testing.T) {
	f := newHomeFixture(t)
	f.Svc.HomeOpened(t.Context(), "UALICE") // Alice watches her Home
	f.home(t, "UCAROL")                     // Carol's was built (as a refresh job builds it), not opened
	r := f.Open(t, "UCAROL", call("d1", "delete", `{"path":"/tmp/x"}`))
	f.Open(t, "UCAROL", call("d2", "delete", `{"path":"/tmp/y"}`))
	if _, err := f.Click(t, r, "UALICE", "d1", approval.ActionDeny); err != nil {
		t.Fatal(err)
	}
	f.Svc.Close()
	members, err := f.rdb.ZRangeWithScores(t.Context(), f.prefix+"jobs:retry", 0, -1).Result()
	if err != nil {
		t.Fatal(err)
	}
	due := f.clock.Now().Add(approval.HomeCoalesce).UnixMilli()
	got := map[string]int{}
	for _, m := range members {
		s := m.Member.(string)
		if strings.Contains(s, string(store.JobHomeRefresh)) {
			got[s]++
			if int64(m.Score) != due {
				t.Errorf("%s due at %v, want after %s", s, m.Score, approval.HomeCoalesce)
			}
		}
	}
	want := map[string]int{"1 home.refresh - UALICE": 1}
	if len(got) != len(want) || got["1 home.refresh - UALICE"] != 1 {
		t.Errorf("scheduled Home refreshes %v, want %v", got, want)
	}
}

// countingConn counts the bytes read from Redis.
type countingConn struct {
	net.Conn
	n *atomic.Int64
}

func (c countingConn) Read(b []byte) (int, error) {
	n, err := c.Conn.Read(b)
	c.n.Add(int64(n))
	return n, err
}

// A Home reads only what it shows, and one requester cannot fill it: a
// request holding 1 MiB of arguments costs a Home a few KB of replies
// from Redis, and an API client that flooded a route with calls older
// than everyone else's leaves room on "Waiting for you" for the calls of
// other requesters (the rest of the flood is counted, not shown).
func TestHomeReadsWhatItShowsAndSharesItsRoom(t *testing.T) {
	f := newHomeFixture(t)
	const flood = approval.MaxHomeCalls + 5
	for i := range flood {
		token := agentrunner.NewToken()
		if _, err := f.Svc.Open(t.Context(), approval.Opening{Token: token, Origin: approval.Origin{Client: "flood", Name: fmt.Sprintf("run %d", i)},
			Requests: agentrunner.DeferredToolRequests{Approvals: []agentrunner.ToolCallPart{call(fmt.Sprintf("f%02d", i), "note", `{"n":1}`)}}}); err != nil {
			t.Fatal(err)
		}
		f.clock.Add(time.Millisecond)
	}
	f.Open(t, "UCAROL", call("carol", "note", `{"text":"hi"}`))
	f.clock.Add(time.Millisecond)
	huge := `{"text":"` + strings.Repeat("x", 1<<20-100) + `"}`
	f.Open(t, "UERIN", call("erin", "note", huge))

	// Alice's Home, read through a connection that counts what it reads.
	opt := &redis.Options{Addr: f.rdb.(*redis.Client).Options().Addr}
	var read atomic.Int64
	opt.Dialer = func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := (&net.Dialer{}).DialContext(ctx, network, addr)
		return countingConn{Conn: c, n: &read}, err
	}
	rdb := redis.NewClient(opt)
	t.Cleanup(func() { _ = rdb.Close() })
	routes, err := routing.ParseRoutes([]byte(attentionRoutes), "routes.yaml")
	if err != nil {
		t.Fatal(err)
	}
	svc := approval.New(approval.Config{Store: store.New(rdb, store.Options{Prefix: f.prefix, Now: f.clock.Now}),
		Poster: f.Poster, Directory: directory{}, Routes: routes, Now: f.clock.Now})
	t.Cleanup(svc.Close)
	v, err := svc.Home(t.Context(), "UALICE")
	if err != nil {
		t.Fatal(err)
	}
	if n := read.Load(); n > 64<<10 {
		t.Errorf("the Home read %d bytes from Redis, want a few KB (a 1 MiB request waits)", n)
	}
	ids := homeIDs(v.Waiting)
	if !slices.Contains(ids, "carol") || !slices.Contains(ids, "erin") {
		t.Errorf("Alice's Waiting = %v: the flood pushed Carol's and Erin's calls off", ids)
	}
	if len(v.Waiting) != approval.MaxHomeCalls || v.MoreWaiting != flood+2-approval.MaxHomeCalls {
		t.Errorf("Waiting %d + %d more, want %d + %d", len(v.Waiting), v.MoreWaiting, approval.MaxHomeCalls, flood+2-approval.MaxHomeCalls)
	}
	if !slices.IsSortedFunc(v.Waiting, func(a, b approval.HomeCall) int { return a.Request.CreatedAt.Compare(b.Request.CreatedAt) }) {
		t.Errorf("Waiting is not oldest first: %v", ids)
	}
	for _, hc := range v.Waiting {
		if call, _ := hc.Request.Requests.Call(hc.Call.ID); len(call.Args) > 16<<10 {
			t.Errorf("the Home holds %d bytes of %s's arguments, more than it shows", len(call.Args), hc.Call.ID)
		}
	}
}
