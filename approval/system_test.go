package approval_test

import (
	"context"
	"errors"
	"slices"
	"strings"
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

// cardlessStore fails to record where the card of call failOn went, as a
// Redis that drops the connection mid-ask does.
type cardlessStore struct {
	*store.Store
	failOn string
}

func (s cardlessStore) SetMessage(ctx context.Context, token, callID string, ref approval.MessageRef) error {
	if callID == s.failOn {
		return errors.New("record the card: connection reset")
	}
	return s.Store.SetMessage(ctx, token, callID, ref)
}

// A run's ask that fails after one of its cards was posted ends its
// request through the Service, as every end without a person: the card
// already posted is updated (no live buttons for a request nobody waits
// on), the end is counted, and the runner wrote nothing itself.
func TestFailedAskLeavesNoLiveButtons(t *testing.T) {
	f := newSystemFixture(t)
	f.Svc = approval.New(approval.Config{
		Store: cardlessStore{f.Store, "c2"}, Poster: f.Poster, Routes: f.Svc.Routes(), Metrics: f.Metrics, Now: f.clock.Now,
	})
	tokens := store.NewTokens(f.Store, store.TokensOptions{Owner: "A", SweepEvery: -1})
	h := &agentrunner.AskHandler{Asker: f.Svc.Asker(nil), Waiter: approval.RunTokens{TokenStore: tokens}, Deadline: f.Svc.Deadline, Suspend: true}
	rc := &agentrunner.RunContext{RunID: "run-1", Deps: &approval.Origin{Team: "T1", Channel: "CGENERAL", User: "UERIN"}}
	_, err := h.HandleDeferred(t.Context(), rc, agentrunner.DeferredToolRequests{Approvals: []agentrunner.ToolCallPart{
		call("c1", "note", `{"n":1}`), call("c2", "note", `{"n":2}`)}})
	if err == nil {
		t.Fatal("the ask succeeded; want its error")
	}
	f.Svc.Close()
	if _, ok := f.Poster.Card("c1"); !ok {
		t.Fatal("c1's card was never posted")
	}
	if n := f.Poster.UpdateCount("c1"); n == 0 {
		t.Error("c1's card was not updated after the ask failed: its buttons stay live")
	}
	if got := f.Metrics.Counted(); !slices.Equal(got, []string{"failed", "failed"}) {
		t.Errorf("metric: counted %q, want both calls failed", got)
	}
}

// Which calls a person may approve with edited arguments is the Service's
// rule, in DecideOn, whatever door the edit came through: slackbot knows
// the tool's schema, or the request carries one, or the call is a coding
// agent's permission prompt. Any other edit is refused before it is
// recorded.
func TestDecideOnRefusesEditsItCannotCheck(t *testing.T) {
	f := newSystemFixture(t)
	noop := func(context.Context, *agentrunner.ToolContext, struct{ N int }) (any, error) { return nil, nil }
	box, err := agentrunner.NewToolbox([]*agentrunner.Tool{agentrunner.NewTool("note", "Notes.", noop, agentrunner.RequiresApproval())})
	if err != nil {
		t.Fatal(err)
	}
	f.Svc = approval.New(approval.Config{Store: f.Store, Poster: f.Poster, Routes: f.Svc.Routes(), Tools: box, Now: f.clock.Now})
	open := func(tool string, md map[string]any) *approval.Request {
		token := agentrunner.NewToken()
		o := approval.Opening{Token: token, Origin: approval.Origin{Client: "ci"},
			Requests: agentrunner.DeferredToolRequests{Approvals: []agentrunner.ToolCallPart{call("c1", tool, `{"amount":500}`)}}}
		if md != nil {
			o.Requests.Metadata = map[string]map[string]any{"c1": md}
		}
		if _, err := f.Svc.Open(t.Context(), o); err != nil {
			t.Fatal(err)
		}
		r, err := f.Svc.Get(t.Context(), token) // with its card
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	edit := func(r *approval.Request, by string) error {
		_, err := f.Svc.DecideOn(t.Context(), r, approval.Decider{User: by, Message: f.Poster.Posted["c1"]},
			approval.Decision{CallID: "c1", By: by, Action: approval.ActionApprove, OverrideArgs: []byte(`{"amount":5}`)})
		return err
	}
	unknown := open("refund", nil)
	if err := edit(unknown, "UALICE"); approval.ErrorCode(err) != approval.EINVALID || !strings.Contains(approval.ErrorMessage(err), "cannot be edited") {
		t.Errorf("edit of a tool slackbot does not know: %v; want EINVALID, cannot be edited", err)
	}
	if got, _ := f.Svc.Get(t.Context(), unknown.Token); got.Calls[0].Status != approval.CallPending {
		t.Errorf("after the refused edit: c1 is %s, want pending", got.Calls[0].Status)
	}
	prompt := open("refund", map[string]any{approval.MetaPermissionPrompt: "claude-code"})
	if err := edit(prompt, "UALICE"); err != nil {
		t.Errorf("edit of a permission prompt: %v; want it recorded", err)
	}
	known := open("note", nil)
	if err := edit(known, "UALICE"); approval.ErrorCode(err) == approval.EINVALID && strings.Contains(approval.ErrorMessage(err), "cannot be edited") {
		t.Errorf("edit of a known tool: %v; want it past the rule", err)
	}
}
