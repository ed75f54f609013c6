package approval_test

import (
	"context"
	"slices"
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

// systemFixture is a Service on a stopped clock whose Resumed port
// records the runs it is handed.
type systemFixture struct {
	*fixture
	port  *resumedPort
	clock *clocktest.Clock
}

func newSystemFixture(t *testing.T) *systemFixture {
	t.Helper()
	routes, err := routing.ParseRoutes([]byte(testRoutes), "routes.yaml")
	if err != nil {
		t.Fatal(err)
	}
	clock := clocktest.Stopped(time.Date(2026, 5, 1, 9, 0, 0, 0, time.UTC))
	rdb, prefix := redistest.Embedded(t)
	st := store.New(rdb, store.Options{Prefix: prefix, Now: clock.Now})
	f := &systemFixture{fixture: &fixture{Store: st, Poster: approvaltest.NewPoster(), Metrics: &metrics{}}, port: &resumedPort{}, clock: clock}
	f.Svc = approval.New(approval.Config{
		Store: st, Poster: f.Poster, Directory: directory{"SFIN": {"UDAVE"}}, Routes: routes, Metrics: f.Metrics,
		Now: clock.Now, Resumed: f.port.resumed,
	})
	t.Cleanup(f.Svc.Close)
	return f
}

// ask is a run's ask of calls from #general by UERIN, as a Slack run asks.
func (f *systemFixture) ask(t *testing.T, calls ...agentrunner.ToolCallPart) (token, runID string) {
	t.Helper()
	token = agentrunner.NewToken()
	rc := &agentrunner.RunContext{RunID: "run-" + token[:6], Deps: &approval.Origin{Team: "T1", Channel: "CGENERAL", User: "UERIN"}}
	if _, err := f.Svc.Ask(nil)(t.Context(), rc, agentrunner.DeferredToolRequests{Approvals: calls}, token); err != nil {
		t.Fatalf("Ask: %v", err)
	}
	return token, rc.RunID
}

// check waits for the Service's work after the answer, then checks that
// the decision on callID of token was audited (type typ, by by), that the
// metric counted want, and that the run was handed to the Resumed port.
func (f *systemFixture) check(t *testing.T, token, runID, callID string, typ store.AuditType, by, want string) {
	t.Helper()
	f.Svc.Close()
	evs, err := f.Store.ReadAudit(t.Context(), "", 1000)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(evs, func(e store.AuditEvent) bool {
		return e.Token == token && e.Type == typ && e.By == by && (callID == "" || e.CallID == callID)
	}) {
		t.Errorf("audit: no %q event by %q on %s in %+v", typ, by, callID, evs)
	}
	got := f.Metrics.Counted()
	if !slices.Equal(got, []string{want}) {
		t.Errorf("metric: decisions counted %q, want [%s]", got, want)
	}
	if runID != "" && !slices.Contains(f.port.got(), token+"/"+runID) {
		t.Errorf("resume: the Resumed port got %q, want %s/%s", f.port.got(), token, runID)
	}
}

// Every decision made without a person, and every end a request reaches
// without one, is audited, counted and resumes the run, as a person's
// decision is; a card that showed the call loses its buttons.
func TestSystemDecisionsDoWhatAPersonsDecisionDoes(t *testing.T) {
	t.Run("no route", func(t *testing.T) {
		f := newSystemFixture(t)
		token, run := f.ask(t, call("c1", "rm", `{}`))
		f.check(t, token, run, "c1", store.AuditDecided, approval.ByNoRoute, "denied")
	})
	t.Run("card not posted", func(t *testing.T) {
		f := newSystemFixture(t)
		f.Poster.Fail = true
		token, run := f.ask(t, call("c1", "note", `{}`))
		f.check(t, token, run, "c1", store.AuditDecided, approval.BySlackbot, "denied")
	})
	t.Run("policy at opening", func(t *testing.T) {
		f := newSystemFixture(t)
		token := agentrunner.NewToken()
		_, err := f.Svc.Open(t.Context(), approval.Opening{Token: token, RunID: "run-api",
			Requests: agentrunner.DeferredToolRequests{Approvals: []agentrunner.ToolCallPart{call("c1", "deploy", `{"env":"prod-eu"}`)}},
			Origin:   approval.Origin{Client: "ci"}})
		if err != nil {
			t.Fatal(err)
		}
		f.check(t, token, "run-api", "c1", store.AuditDecided, approval.ByPolicyPrefix+"deploys", "denied")
	})
	t.Run("ask failed after its card was posted", func(t *testing.T) {
		f := newSystemFixture(t)
		token, run := f.ask(t, call("c1", "note", `{}`))
		if _, ok := f.Poster.Card("c1"); !ok {
			t.Fatal("no card posted")
		}
		if _, err := f.Svc.Fail(t.Context(), token, "asking failed"); err != nil {
			t.Fatal(err)
		}
		f.check(t, token, run, "", store.AuditType(approval.StateFailed), approval.BySlackbot, "failed")
		if f.Poster.UpdateCount("c1") == 0 {
			t.Error("the card of the failed request was never updated: its buttons stay")
		}
	})
	t.Run("expiry", func(t *testing.T) {
		f := newSystemFixture(t)
		token, run := f.ask(t, call("c1", "note", `{}`))
		f.clock.Add(2 * time.Hour)
		expired, err := f.Svc.Sweep(t.Context())
		if err != nil || len(expired) != 1 || expired[0].Token != token {
			t.Fatalf("Sweep: %v, %v; want the request expired", expired, err)
		}
		f.check(t, token, run, "", store.AuditType(approval.StateExpired), "", "expired")
	})
	t.Run("policy on a run", func(t *testing.T) {
		f := newSystemFixture(t)
		rc := &agentrunner.RunContext{RunID: "run-pol", Deps: &approval.Origin{Team: "T1", Channel: "CGENERAL", User: "UERIN"}}
		res, err := f.Svc.Policy(nil).HandleDeferred(context.Background(), rc,
			agentrunner.DeferredToolRequests{Approvals: []agentrunner.ToolCallPart{call("c1", "refund", `{"amount":5}`)}})
		if err != nil || !res.Approvals["c1"].Approved {
			t.Fatalf("policy: %+v, %v; want c1 approved", res, err)
		}
		// No request holds the call (the run goes on with it at once), so
		// there is no token, nothing to resume and no card.
		f.check(t, "", "", "c1", store.AuditDecided, approval.ByPolicyPrefix+"refunds", "approved")
	})
}
