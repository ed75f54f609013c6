package store_test

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/slackapprove/slackbot/agentrunner"
	"github.com/slackapprove/slackbot/approval"
	"github.com/slackapprove/slackbot/store"
)

// Pending lists the requests still pending, soonest deadline first, up to
// its limit: not those ended or past their deadline (before the sweep).
func TestPending(t *testing.T) {
	e := newEnv(t)
	s := e.store()
	var tokens []string
	for i := range 4 {
		a := e.create(t, s, requests("a"), 1)
		tokens = append(tokens, a.Token)
		e.clock.Advance(time.Duration(i+1) * time.Minute)
	}
	if _, err := s.Decide(t.Context(), tokens[1], deny("a", "U0ALICE", "")); err != nil {
		t.Fatal(err)
	}
	got := func(limit int) []string {
		t.Helper()
		rs, _, err := s.Pending(t.Context(), limit, 0)
		if err != nil {
			t.Fatalf("Pending: %v", err)
		}
		var out []string
		for _, r := range rs {
			if r.State != approval.StatePending || len(r.Calls) != 1 {
				t.Errorf("Pending returned %+v", r)
			}
			out = append(out, r.Token)
		}
		return out
	}
	if want := []string{tokens[0], tokens[2], tokens[3]}; !slices.Equal(got(10), want) {
		t.Errorf("Pending(10) = %v, want %v (the denied one left out)", got(10), want)
	}
	if l := got(2); len(l) > 2 {
		t.Errorf("Pending(2) returned %d requests", len(l))
	}
	if l := got(0); len(l) != 0 {
		t.Errorf("Pending(0) = %v", l)
	}
	e.clock.Advance(time.Hour - 5*time.Minute) // past every deadline but the last
	if want := []string{tokens[3]}; !slices.Equal(got(10), want) {
		t.Errorf("Pending after deadlines = %v, want %v", got(10), want)
	}
}

// Pending reads a request as a Home shows it: who asked, where, its
// calls with their votes and cards, and their arguments — all of them
// when short, the first 4 KiB (kept beside them when the request was
// created) when long — never the rest of a 1 MiB record.
func TestPendingReadsWhatAHomeShows(t *testing.T) {
	e := newEnv(t)
	s := e.store()
	huge := `{"text":"` + strings.Repeat("é", 1<<19-10) + `"}`
	a := &approval.Request{Token: agentrunner.NewToken(), Origin: approval.Origin{Client: "ci", Name: "nightly"},
		Requests: agentrunner.DeferredToolRequests{Approvals: []agentrunner.ToolCallPart{
			{ToolName: "note", Args: json.RawMessage(huge), ToolCallID: "big"},
			{ToolName: "note", Args: json.RawMessage(`{"text":"hi"}`), ToolCallID: "small"},
		}},
		Calls: []approval.Call{{ID: "big", Route: "notes"}, {ID: "small", Route: "notes", Required: 2}}, ExpiresAt: e.clock.Now().Add(time.Hour)}
	if err := s.Create(t.Context(), a); err != nil {
		t.Fatal(err)
	}
	if err := s.SetMessage(t.Context(), a.Token, "big", approval.MessageRef{Channel: "C0NOTES", ID: "1.000001"}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Decide(t.Context(), a.Token, approve("small", "U0ALICE")); err != nil {
		t.Fatal(err)
	}
	rs, partial, err := s.Pending(t.Context(), 10, 0)
	if err != nil || len(rs) != 1 || partial {
		t.Fatalf("Pending: %d requests, partial %v, %v; want the one", len(rs), partial, err)
	}
	got := rs[0]
	if got.Origin != a.Origin || got.State != approval.StatePending || !got.ExpiresAt.Equal(a.ExpiresAt.Truncate(time.Millisecond)) {
		t.Errorf("the request as a Home reads it: %+v", got)
	}
	if c := got.Call("big"); c == nil || c.Message.ID != "1.000001" || c.Route != "notes" || c.Tool != "note" {
		t.Errorf("the big call: %+v", c)
	}
	if c := got.Call("small"); c == nil || len(c.Votes) != 1 || c.Votes[0].By != "U0ALICE" || c.Required != 2 {
		t.Errorf("the small call, with Alice's vote: %+v", c)
	}
	big, _ := got.Requests.Call("big")
	if len(big.Args) > 4<<10 || !strings.HasPrefix(huge, string(big.Args)) || !utf8.Valid(big.Args) || len(big.Args) < 4<<10-4 {
		t.Errorf("the big call's arguments as a Home reads them: %d bytes, want the first 4 KiB", len(big.Args))
	}
	if small, _ := got.Requests.Call("small"); string(small.Args) != `{"text":"hi"}` {
		t.Errorf("the small call's arguments: %s", small.Args)
	}
}

// One requester's flood of requests, even with the soonest deadlines and
// each under another name, leaves room in what a Home reads for everyone
// else's: Pending takes at most perRequester requests of one Slack user
// or one API key, and says it left some out.
func TestPendingBoundsEachRequester(t *testing.T) {
	e := newEnv(t)
	s := e.store()
	open := func(o approval.Origin, id string, in time.Duration) {
		t.Helper()
		a := &approval.Request{Token: agentrunner.NewToken(), Origin: o, Requests: requests(id),
			Calls: []approval.Call{{ID: id, Route: "files"}}, ExpiresAt: e.clock.Now().Add(in)}
		if err := s.Create(t.Context(), a); err != nil {
			t.Fatal(err)
		}
	}
	const flood = 600 // more than one page of the expiry set
	for i := range flood {
		open(approval.Origin{Client: "flood", Name: fmt.Sprintf("worker %d", i)}, fmt.Sprintf("f%d", i), time.Minute)
	}
	open(approval.Origin{User: "U0CAROL"}, "carol", time.Hour)
	open(approval.Origin{Client: "ci"}, "ci", time.Hour)
	rs, partial, err := s.Pending(t.Context(), 500, 50)
	if err != nil {
		t.Fatal(err)
	}
	by := map[string]int{}
	for _, r := range rs {
		by[r.Origin.Requester()]++
	}
	if want := map[string]int{"api:flood": 50, "U0CAROL": 1, "api:ci": 1}; !maps.Equal(by, want) || !partial {
		t.Errorf("Pending(500, 50) read %v, partial %v; want %v, partial", by, partial, want)
	}
	if rs, partial, _ := s.Pending(t.Context(), 10, 50); len(rs) != 10 || !partial {
		t.Errorf("Pending(10, 50): %d requests, partial %v; want 10, partial", len(rs), partial)
	}
}

// A Home viewer counts for ttl after they opened their Home.
func TestHomeViewers(t *testing.T) {
	e := newEnv(t)
	s := e.store()
	if err := s.HomeOpened(t.Context(), "U0ALICE", time.Hour); err != nil {
		t.Fatal(err)
	}
	e.clock.Advance(30 * time.Minute)
	if err := s.HomeOpened(t.Context(), "U0BOB", time.Hour); err != nil {
		t.Fatal(err)
	}
	viewers := func() []string {
		t.Helper()
		v, err := s.HomeViewers(t.Context(), []string{"U0ALICE", "U0BOB", "U0CAROL"}, time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	if v := viewers(); !slices.Equal(v, []string{"U0ALICE", "U0BOB"}) {
		t.Errorf("viewers = %v, want Alice and Bob", v)
	}
	e.clock.Advance(31 * time.Minute)
	if v := viewers(); !slices.Equal(v, []string{"U0BOB"}) {
		t.Errorf("viewers after Alice's hour = %v, want Bob", v)
	}
	if err := s.HomeOpened(t.Context(), "", time.Hour); err == nil {
		t.Error("HomeOpened with no user: want an error")
	}
}

// A Home refresh scheduled several times before it is due is one job,
// due at the first time asked, carrying the user; once promoted, the next
// change schedules a new one.
func TestScheduleHomeCoalesces(t *testing.T) {
	e := newEnv(t)
	s := e.store()
	q := s.JobQueue(0)
	for range 3 {
		if err := q.ScheduleHome(t.Context(), "U0ALICE", 2*time.Second); err != nil {
			t.Fatal(err)
		}
		e.clock.Advance(500 * time.Millisecond)
	}
	if err := q.ScheduleHome(t.Context(), "U0BOB", 2*time.Second); err != nil {
		t.Fatal(err)
	}
	if n, _ := q.Promote(t.Context()); n != 0 {
		t.Fatalf("promoted %d before they were due", n)
	}
	e.clock.Advance(600 * time.Millisecond) // Alice's is due, Bob's not
	if n, err := q.Promote(t.Context()); n != 1 || err != nil {
		t.Fatalf("promoted %d (%v), want Alice's one job", n, err)
	}
	jobs := readAll(t, q, "w")
	if len(jobs) != 1 || jobs[0].Kind != store.JobHomeRefresh || jobs[0].Data != "U0ALICE" || jobs[0].Token != "" {
		t.Fatalf("jobs = %+v, want one home.refresh for U0ALICE", jobs)
	}
	if err := q.ScheduleHome(t.Context(), "U0ALICE", 2*time.Second); err != nil {
		t.Fatal(err)
	}
	e.clock.Advance(2 * time.Second)
	if n, _ := q.Promote(t.Context()); n != 2 {
		t.Errorf("promoted %d, want Bob's and Alice's next one", n)
	}
	if err := q.ScheduleHome(t.Context(), "", time.Second); err == nil {
		t.Error("ScheduleHome with no user: want an error")
	}
}
