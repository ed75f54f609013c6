package store_test

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/slackapprove/slackbot/agentrunner"
	"github.com/slackapprove/slackbot/approval"
	"github.com/slackapprove/slackbot/store"
)

// createRouted stores an open request whose calls (ids) go to routes, one
// route per call, with the env's clock as its creation time.
func (e *env) createRouted(t *testing.T, s *store.Store, routes map[string]string, ids ...string) *approval.Request {
	t.Helper()
	a := &approval.Request{
		Token:     agentrunner.NewToken(),
		RunID:     "run-" + agentrunner.NewToken()[:8],
		Origin:    approval.Origin{Team: "T0", Channel: "C0SUPPORT", ThreadTS: "1700000000.000100", User: "U0REQUESTER"},
		Requests:  requests(ids...),
		ExpiresAt: e.clock.Now().Add(time.Hour),
	}
	for _, id := range ids {
		a.Calls = append(a.Calls, approval.Call{ID: id, Route: routes[id], Required: 1})
	}
	if err := s.Create(t.Context(), a); err != nil {
		t.Fatalf("create: %v", err)
	}
	return a
}

// TestPendingByRoute: open requests are counted on each route one of
// their calls still waits on (once per request, however many of its calls
// wait there), with the age of the oldest; a decided call no longer
// counts on its route, an ended request nowhere.
func TestPendingByRoute(t *testing.T) {
	e := newEnv(t)
	s := e.store()
	if got, err := s.PendingByRoute(t.Context()); err != nil || len(got) != 0 {
		t.Fatalf("nothing open: got %v, %v", got, err)
	}
	routes := map[string]string{"a1": "files", "a2": "ops", "b1": "files", "b2": "files", "c1": "ops", "d1": "refunds", "d2": "ops"}
	a := e.createRouted(t, s, routes, "a1", "a2")
	e.clock.Advance(10 * time.Minute)
	e.createRouted(t, s, routes, "b1", "b2")
	e.clock.Advance(5 * time.Minute)
	c := e.createRouted(t, s, routes, "c1")
	e.clock.Advance(time.Minute)
	d := e.createRouted(t, s, routes, "d1", "d2")
	e.clock.Advance(2 * time.Minute)

	// a's ops call is decided (a stays open on files); c ends; d's refunds
	// call, its first, is denied (d stays open on ops, by its second).
	for _, dec := range []struct {
		token string
		d     approval.Decision
	}{{a.Token, approve("a2", "UA")}, {c.Token, approve("c1", "UA")}, {d.Token, deny("d1", "UA", "no")}} {
		if _, err := s.Decide(t.Context(), dec.token, dec.d); err != nil {
			t.Fatalf("decide %s: %v", dec.d.CallID, err)
		}
	}
	got, err := s.PendingByRoute(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]store.RoutePending{
		"files": {Open: 2, Oldest: 18 * time.Minute}, // a and b; a is the oldest
		"ops":   {Open: 1, Oldest: 2 * time.Minute},  // d
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("pending by route (-want +got):\n%s", diff)
	}

	if _, err := s.Cancel(t.Context(), a.Token, "UA"); err != nil {
		t.Fatal(err)
	}
	got, err = s.PendingByRoute(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	want["files"] = store.RoutePending{Open: 1, Oldest: 8 * time.Minute} // b
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("after a is cancelled (-want +got):\n%s", diff)
	}
}
