package approval_test

import (
	"context"
	"errors"
	"testing"

	"github.com/slackapprove/slackbot/approval"
	"github.com/slackapprove/slackbot/internal/approvaltest"
	"github.com/slackapprove/slackbot/routing"
	"github.com/slackapprove/slackbot/store"
	"github.com/slackapprove/slackbot/store/redistest"
)

// lostDirectory cannot learn any usergroup's members.
type lostDirectory struct{}

func (lostDirectory) Members(context.Context, string) ([]string, error) {
	return nil, errors.New("usergroups.users.list: ratelimited")
}
func (lostDirectory) Warm(...string) {}

// A usergroup lookup that fails is no refusal: the decision is refused as
// EUNAVAILABLE (try again), not counted or audited as a refusal, and
// nothing changes.
func TestDecideDirectoryDownIsUnavailableNotRefused(t *testing.T) {
	routes, err := routing.ParseRoutes([]byte(testRoutes), "routes.yaml")
	if err != nil {
		t.Fatal(err)
	}
	rdb, prefix := redistest.Embedded(t)
	st := store.New(rdb, store.Options{Prefix: prefix})
	f := &fixture{Store: st, Poster: approvaltest.NewPoster(), Metrics: &metrics{}}
	f.Svc = approval.New(approval.Config{Store: st, Poster: f.Poster, Directory: lostDirectory{}, Routes: routes, Metrics: f.Metrics})
	t.Cleanup(f.Svc.Close)
	r := f.Open(t, "UERIN", call("c1", "refund", `{"amount":500}`))

	// UDAVE is not listed by id: only the usergroup could make him an approver.
	_, err = f.Click(t, r, "UDAVE", "c1", approval.ActionApprove)
	if got := approval.ErrorCode(err); got != approval.EUNAVAILABLE {
		t.Fatalf("decide with the directory down: code %q (%v), want %s", got, err, approval.EUNAVAILABLE)
	}
	if len(f.Metrics.RefusedCodes) != 0 {
		t.Errorf("refusal metrics %v, want none", f.Metrics.RefusedCodes)
	}
	evs, err := st.ReadAudit(t.Context(), "0", 100)
	if err != nil {
		t.Fatal(err)
	}
	for _, ev := range evs {
		if ev.Type == store.AuditRefused {
			t.Errorf("audited as refused: %+v", ev)
		}
	}
	if got, _ := st.Get(t.Context(), r.Token); got.Call("c1").Status != approval.CallPending {
		t.Errorf("call is %s, want pending", got.Call("c1").Status)
	}
}

// DecideOn decides on a request the caller loaded, as Decide does; the
// store still decides on the current state (a stale copy cannot approve
// a call denied meanwhile).
func TestDecideOnUsesTheCurrentState(t *testing.T) {
	f := newFixture(t)
	r := f.Open(t, "UERIN", call("c1", "refund", `{"amount":500}`))
	stale, err := f.Store.Get(t.Context(), r.Token)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Click(t, r, "UALICE", "c1", approval.ActionDeny); err != nil {
		t.Fatal(err)
	}
	by := approval.Decider{User: "UDAVE", Message: f.Poster.Posted["c1"]}
	res, err := f.Svc.DecideOn(t.Context(), stale, by, approval.Decision{CallID: "c1", By: "UDAVE", Action: approval.ActionApprove})
	if code := approval.ErrorCode(err); code != approval.EDECIDED && code != approval.ERESOLVED {
		t.Fatalf("approve on a stale copy after a denial: %+v, %v; want decided or resolved", res, err)
	}
	if got, _ := f.Store.Get(t.Context(), r.Token); got.Call("c1").Status != approval.CallDenied {
		t.Errorf("call is %s, want denied", got.Call("c1").Status)
	}
}

// Refuse, for the refusals a door makes itself, counts and audits like
// the Service's own.
func TestRefuseCountsAndAudits(t *testing.T) {
	f := newFixture(t)
	r := f.Open(t, "UERIN", call("c1", "refund", `{"amount":500}`))
	f.Svc.Refuse(t.Context(), r, r.Call("c1"), approval.Decider{User: "UX"}, approval.Errorf(approval.EWRONGTEAM, "This button comes from another Slack workspace."))
	if len(f.Metrics.RefusedCodes) != 1 || f.Metrics.RefusedCodes[0] != approval.EWRONGTEAM {
		t.Errorf("refusal metrics %v, want [%s]", f.Metrics.RefusedCodes, approval.EWRONGTEAM)
	}
	evs, err := f.Store.ReadAudit(t.Context(), "0", 100)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, ev := range evs {
		if ev.Type == store.AuditRefused && ev.Code == approval.EWRONGTEAM && ev.By == "UX" {
			n++
		}
	}
	if n != 1 {
		t.Errorf("audited %d wrong-team refusals, want 1", n)
	}
}
