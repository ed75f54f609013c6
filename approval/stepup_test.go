package approval_test

import (
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/slackapprove/slackbot/agentrunner"
	"github.com/slackapprove/slackbot/approval"
	"github.com/slackapprove/slackbot/internal/approvaltest"
	"github.com/slackapprove/slackbot/receipt"
	"github.com/slackapprove/slackbot/routing"
	"github.com/slackapprove/slackbot/store"
	"github.com/slackapprove/slackbot/store/redistest"
)

const stepUpRoutes = `
routes:
  - name: prod
    when: {tools: ["terraform_apply"]}
    channel: CPROD
    approvers: {users: ["UALICE", "UBOB"]}
    step_up: true
    grants: 8h
  - name: payouts
    when: {tools: ["payout"]}
    channel: CPAY
    approvers: {users: ["UALICE", "UBOB", "UCAROL"]}
    required_approvals: 2
    step_up: "args.amount > 10000"
    step_up_methods: [webauthn, totp]
  - name: selfprod
    when: {tools: ["self_apply"]}
    channel: CPROD
    approvers: {users: ["UALICE"]}
    allow_self_approval: true
    step_up: true
  - name: notes
    when: {tools: ["note"]}
    channel: CNOTE
    approvers: {users: ["UALICE"]}
`

// stepUpFixture is a Service over the routes above, with grants and a
// clock the test moves.
type stepUpFixture struct {
	*fixture
	mu  sync.Mutex
	now time.Time
}

func (f *stepUpFixture) clock() time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.now
}

func (f *stepUpFixture) advance(d time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.now = f.now.Add(d)
}

func newStepUpFixture(t *testing.T) *stepUpFixture {
	t.Helper()
	routes, err := routing.ParseRoutes([]byte(stepUpRoutes), "routes.yaml")
	if err != nil {
		t.Fatal(err)
	}
	rdb, prefix := redistest.Embedded(t)
	st := store.New(rdb, store.Options{Prefix: prefix})
	f := &stepUpFixture{fixture: &fixture{Store: st, Poster: approvaltest.NewPoster(), Metrics: &metrics{}}, now: time.Now()}
	f.Svc = approval.New(approval.Config{
		Store: st, Poster: f.Poster, Directory: directory{}, Routes: routes, Metrics: f.Metrics, Grants: st, Now: f.clock,
	})
	t.Cleanup(f.Svc.Close)
	return f
}

var passkey = func(cred string) approval.StepUp {
	return approval.StepUp{Method: "webauthn", CredentialID: cred}
}

// begin is user's click d refused with ESTEPUP, then the link the door
// asks for.
func (f *stepUpFixture) begin(t *testing.T, r *approval.Request, by approval.Decider, d approval.Decision, ids ...string) *approval.StepUpLink {
	t.Helper()
	r, err := f.Store.Get(t.Context(), r.Token)
	if err != nil {
		t.Fatal(err)
	}
	l, err := f.Svc.BeginStepUp(t.Context(), r, by, d, ids...)
	if err != nil {
		t.Fatalf("BeginStepUp: %v", err)
	}
	return l
}

func (f *stepUpFixture) card(id string) approval.Decider {
	ref, _ := f.Poster.Card(id)
	return approval.Decider{Message: ref}
}

func clickOn(f *stepUpFixture, user, id string) approval.Decider {
	by := f.card(id)
	by.User = user
	return by
}

// unchanged fails unless call id of r is pending with no vote, and the
// audit stream holds no vote or decision of it.
func unchanged(t *testing.T, f *stepUpFixture, r *approval.Request, id string) {
	t.Helper()
	got, err := f.Store.Get(t.Context(), r.Token)
	if err != nil {
		t.Fatal(err)
	}
	if c := got.Call(id); c.Status != approval.CallPending || len(c.Votes) != 0 || got.State != approval.StatePending {
		t.Errorf("call %s is %s with %d votes (request %s); want pending with none", id, c.Status, len(c.Votes), got.State)
	}
	evs, err := f.Store.ReadAudit(t.Context(), "0", 1000)
	if err != nil {
		t.Fatal(err)
	}
	for _, ev := range evs {
		if ev.Token == r.Token && ev.CallID == id && (ev.Type == store.AuditDecided || ev.Type == store.AuditVoted) {
			t.Errorf("audit stream records %s of %s by %s", ev.Type, id, ev.By)
		}
	}
}

// Every way a person approves a call that needs a step-up (a card, App
// Home, a grant, "Approve all", an API client's answer) is refused with
// ESTEPUP and records nothing; a door cannot claim a proof; Deny needs
// none; a condition that does not hold needs none.
func TestStepUpRefusesEveryWayOfApprovingWithoutAProof(t *testing.T) {
	f := newStepUpFixture(t)
	r := f.Open(t, "UERIN", call("tf", "terraform_apply", `{"plan":"prod"}`), call("n1", "note", `{}`))
	approve := approval.Decision{CallID: "tf", By: "UALICE", Action: approval.ActionApprove}
	grant := approve
	grant.Grant = time.Hour
	forged := approve
	forged.StepUp = &approval.StepUp{Method: "webauthn", AMR: []string{"hwk"}, CredentialID: "forged"}
	for _, tc := range []struct {
		name string
		by   approval.Decider
		d    approval.Decision
		code string
	}{
		{"card", clickOn(f, "UALICE", "tf"), approve, approval.ESTEPUP},
		{"home", approval.Decider{User: "UALICE", Home: true}, approve, approval.ESTEPUP},
		{"grant", clickOn(f, "UALICE", "tf"), grant, approval.ESTEPUP},
		{"a proof the door made up", clickOn(f, "UALICE", "tf"), forged, approval.EINVALID},
		{"not an approver: told so, not asked for a passkey", clickOn(f, "UMALLORY", "tf"), approve, approval.ENOTAPPROVER},
	} {
		tc.d.By = tc.by.User
		_, err := f.Svc.Decide(t.Context(), r.Token, tc.by, tc.d)
		if got := approval.ErrorCode(err); got != tc.code {
			t.Errorf("%s: code %q (%v), want %q", tc.name, got, err, tc.code)
		}
	}
	_, err := f.Svc.DecideAll(t.Context(), mustGet(t, f, r), clickOn(f, "UALICE", "n1"), approval.Decision{CallID: "n1", By: "UALICE", Action: approval.ActionApprove})
	if approval.ErrorCode(err) != approval.ESTEPUP {
		t.Errorf("Approve all with a call that needs step-up: %v, want step_up_required for the whole batch", err)
	}
	unchanged(t, f, r, "tf")
	unchanged(t, f, r, "n1")
	if strings.Contains(strings.Join(f.Metrics.RefusedCodes, ","), approval.ESTEPUP) {
		t.Errorf("a step-up asked for is counted as a refusal: %v", f.Metrics.RefusedCodes)
	}

	// An API client's approval, even where its route allows
	// self-approval: a key proves no person.
	token := openAPI(t, f.fixture, agentrunner.DeferredToolRequests{Approvals: []agentrunner.ToolCallPart{call("s1", "self_apply", `{}`)}})
	_, err = f.Svc.Decide(t.Context(), token, approval.Decider{Client: "ci"}, approval.Decision{CallID: "s1", Action: approval.ActionApprove})
	if approval.ErrorCode(err) != approval.ESTEPUP {
		t.Errorf("an API client's approval: %v, want step_up_required", err)
	}
	if got, _ := f.Store.Get(t.Context(), token); got.Call("s1").Status != approval.CallPending {
		t.Errorf("after the API client's refused approval the call is %s", got.Call("s1").Status)
	}
	if _, err := f.Svc.Decide(t.Context(), token, approval.Decider{Client: "ci"}, approval.Decision{CallID: "s1", Action: approval.ActionDeny}); err != nil {
		t.Errorf("an API client's denial: %v, want it recorded", err)
	}

	// Deny never needs step-up; a condition that does not hold asks none.
	if _, err := f.Svc.Decide(t.Context(), r.Token, clickOn(f, "UBOB", "tf"), approval.Decision{CallID: "tf", By: "UBOB", Action: approval.ActionDeny}); err != nil {
		t.Errorf("deny: %v", err)
	}
	small := f.Open(t, "UERIN", call("p1", "payout", `{"amount": 50}`))
	if d, err := f.Click(t, small, "UALICE", "p1", approval.ActionApprove); err != nil || !d.Changed {
		t.Errorf("a payout the condition does not cover: %+v, %v; want a vote", d, err)
	}
}

func mustGet(t *testing.T, f *stepUpFixture, r *approval.Request) *approval.Request {
	t.Helper()
	got, err := f.Store.Get(t.Context(), r.Token)
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// A link completes once, for the person it was made for, with the proof
// on the call, in the audit stream and on the receipt; a verifier that
// requires step-up takes that receipt and refuses a click's.
func TestCompleteStepUpDecidesOnceWithTheProof(t *testing.T) {
	f := newStepUpFixture(t)
	r := f.Open(t, "UERIN", call("tf", "terraform_apply", `{"plan":"prod"}`))
	d := approval.Decision{CallID: "tf", By: "UALICE", Action: approval.ActionApprove}
	l := f.begin(t, r, clickOn(f, "UALICE", "tf"), d)
	if l.User != "UALICE" || l.Team != "T1" || len(l.Calls) != 1 || l.Calls[0].CallID != "tf" || !slices.Equal(l.Methods, []string{"webauthn"}) ||
		l.Expires.Sub(f.clock()) != approval.StepUpLinkTTL {
		t.Fatalf("link = %+v", l)
	}
	digest, _ := approval.ArgsDigest(json.RawMessage(`{"plan":"prod"}`))
	if l.Calls[0].ArgsDigest != digest || len(digest) != 64 {
		t.Errorf("link digest %q, want the hex SHA-256 of the canonical arguments %q", l.Calls[0].ArgsDigest, digest)
	}
	if got, _, err := f.Svc.StepUpLink(t.Context(), l.ID); err != nil || got.ID != l.ID {
		t.Fatalf("StepUpLink: %+v, %v", got, err)
	}
	ch := approval.StepUpChallenge(l)
	other := *l
	other.User = "UBOB"
	if len(ch) != 32 || string(ch) == string(approval.StepUpChallenge(&other)) {
		t.Errorf("the challenge does not bind the approver")
	}

	if _, err := f.Svc.CompleteStepUp(t.Context(), l.ID, "T1", "UBOB", passkey("cred-bob")); approval.ErrorCode(err) != approval.EFORBIDDEN {
		t.Errorf("another user's completion: %v, want forbidden", err)
	}
	if _, err := f.Svc.CompleteStepUp(t.Context(), l.ID, "T1", "UALICE", approval.StepUp{Method: "totp", CredentialID: "totp"}); approval.ErrorCode(err) != approval.EINVALID {
		t.Errorf("a one-time code on a passkey-only route: %v, want invalid", err)
	}
	unchanged(t, f, r, "tf")

	res, err := f.Svc.CompleteStepUp(t.Context(), l.ID, "T1", "UALICE", passkey("cred-alice"))
	if err != nil || res.Call.Status != approval.CallApproved || !res.Resolved {
		t.Fatalf("CompleteStepUp: %+v, %v; want approved and resolved", res, err)
	}
	if _, err := f.Svc.CompleteStepUp(t.Context(), l.ID, "T1", "UALICE", passkey("cred-alice")); approval.ErrorCode(err) != approval.ENOTFOUND {
		t.Errorf("the link used a second time: %v, want not_found", err)
	}
	got := mustGet(t, f, r)
	c := got.Call("tf")
	if c.StepUp == nil || c.StepUp.Method != "webauthn" || !slices.Equal(c.StepUp.AMR, []string{"hwk"}) || c.StepUp.CredentialID != "cred-alice" {
		t.Errorf("the call's step-up = %+v", c.StepUp)
	}
	evs, _ := f.Store.ReadAudit(t.Context(), "0", 1000)
	var audited bool
	for _, ev := range evs {
		if ev.Token == r.Token && ev.Type == store.AuditDecided {
			audited = ev.StepUp == "webauthn" && ev.AMR == "hwk" && ev.Cred == "cred-alice" && ev.By == "UALICE"
		}
	}
	if !audited {
		t.Errorf("the audit entry of the decision does not carry the step-up")
	}

	k, _ := receipt.NewKey([]byte(strings.Repeat("p", receipt.SeedSize)))
	signer, _ := receipt.NewSigner(k, "", 0)
	ks := receipt.NewKeySet(k)
	claims, err := got.Receipt(c)
	if err != nil || !slices.Equal(claims.AMR, []string{"hwk"}) || !slices.Equal(claims.Cred, []string{"cred-alice"}) {
		t.Fatalf("receipt = %+v, %v; want amr [hwk], cred [cred-alice]", claims, err)
	}
	jws, _ := signer.Sign(claims)
	if _, err := ks.Verify(jws, receipt.Expect{CallID: "tf", Tool: "terraform_apply", Args: json.RawMessage(`{"plan":"prod"}`), RequireStepUp: true}); err != nil {
		t.Errorf("RequireStepUp on a stepped-up receipt: %v", err)
	}
	plain := f.Open(t, "UERIN", call("n1", "note", `{}`))
	if _, err := f.Click(t, plain, "UALICE", "n1", approval.ActionApprove); err != nil {
		t.Fatal(err)
	}
	pr := mustGet(t, f, plain)
	pc, _ := pr.Receipt(pr.Call("n1"))
	pjws, _ := signer.Sign(pc)
	if _, err := ks.Verify(pjws, receipt.Expect{CallID: "n1", Tool: "note", Args: json.RawMessage(`{}`), RequireStepUp: true}); !errors.Is(err, receipt.ErrNoStepUp) {
		t.Errorf("RequireStepUp on a click's receipt: %v, want ErrNoStepUp", err)
	}
}

// A completion is refused, with nothing recorded, when the link expired,
// the call was decided elsewhere meanwhile, the arguments it would run
// are not those the link bound, or the person may no longer approve.
func TestCompleteStepUpRefusals(t *testing.T) {
	f := newStepUpFixture(t)
	approve := func(id, user string) approval.Decision {
		return approval.Decision{CallID: id, By: user, Action: approval.ActionApprove}
	}

	r := f.Open(t, "UERIN", call("tf", "terraform_apply", `{"plan":"prod"}`))
	l := f.begin(t, r, clickOn(f, "UALICE", "tf"), approve("tf", "UALICE"))
	f.advance(approval.StepUpLinkTTL + time.Second)
	if _, err := f.Svc.CompleteStepUp(t.Context(), l.ID, "T1", "UALICE", passkey("c")); approval.ErrorCode(err) != approval.EEXPIRED {
		t.Errorf("an expired link: %v, want expired", err)
	}
	if _, _, err := f.Svc.StepUpLink(t.Context(), l.ID); approval.ErrorCode(err) != approval.ENOTFOUND {
		t.Errorf("reading an expired link: %v, want not_found", err)
	}
	unchanged(t, f, r, "tf")

	// Decided elsewhere meanwhile.
	l = f.begin(t, r, clickOn(f, "UALICE", "tf"), approve("tf", "UALICE"))
	if _, err := f.Svc.Decide(t.Context(), r.Token, clickOn(f, "UBOB", "tf"), approval.Decision{CallID: "tf", By: "UBOB", Action: approval.ActionDeny}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.Svc.CompleteStepUp(t.Context(), l.ID, "T1", "UALICE", passkey("c")); approval.ErrorCode(err) != approval.EDECIDED && approval.ErrorCode(err) != approval.ERESOLVED {
		t.Errorf("a call denied meanwhile: %v, want decided", err)
	}
	if got := mustGet(t, f, r).Call("tf"); got.Status != approval.CallDenied {
		t.Errorf("the call is %s, want denied as Bob decided", got.Status)
	}

	// The arguments that would run are not those the link bound (the
	// edit it was made for): refused.
	r2 := f.Open(t, "UERIN", call("tf2", "terraform_apply", `{"plan":"prod"}`))
	l = f.begin(t, r2, clickOn(f, "UALICE", "tf2"), approve("tf2", "UALICE"))
	if _, err := f.Store.TakeStepUpLink(t.Context(), l.ID); err != nil {
		t.Fatal(err)
	}
	l.OverrideArgs = json.RawMessage(`{"plan":"prod","destroy":true}`)
	if err := f.Store.SaveStepUpLink(t.Context(), l); err != nil {
		t.Fatal(err)
	}
	_, err := f.Svc.CompleteStepUp(t.Context(), l.ID, "T1", "UALICE", passkey("c"))
	if approval.ErrorCode(err) != approval.EINVALID || !strings.Contains(approval.ErrorMessage(err), "arguments changed since you clicked Approve") {
		t.Errorf("arguments changed since the click: %v, want invalid, saying so", err)
	}
	unchanged(t, f, r2, "tf2")

	// A link for someone who may not approve (made before the routing
	// file dropped them, say) decides nothing: the usual checks run.
	l = f.begin(t, r2, clickOn(f, "UALICE", "tf2"), approve("tf2", "UALICE"))
	_, _ = f.Store.TakeStepUpLink(t.Context(), l.ID)
	l.User = "UMALLORY"
	if err := f.Store.SaveStepUpLink(t.Context(), l); err != nil {
		t.Fatal(err)
	}
	if _, err := f.Svc.CompleteStepUp(t.Context(), l.ID, "T1", "UMALLORY", passkey("c")); approval.ErrorCode(err) != approval.ENOTAPPROVER {
		t.Errorf("a link for someone who may not approve: %v, want not_approver", err)
	}
	if _, err := f.Svc.BeginStepUp(t.Context(), mustGet(t, f, r2), clickOn(f, "UMALLORY", "tf2"), approve("tf2", "UMALLORY")); approval.ErrorCode(err) != approval.ENOTAPPROVER {
		t.Errorf("BeginStepUp for someone who may not approve: %v, want not_approver", err)
	}
	// The requester never approves their own call, stepped up or not.
	own := f.Open(t, "UBOB", call("tf3", "terraform_apply", `{"plan":"prod"}`))
	if _, err := f.Svc.BeginStepUp(t.Context(), own, approval.Decider{User: "UBOB", Home: true}, approve("tf3", "UBOB")); approval.ErrorCode(err) != approval.ESELFAPPROVAL {
		t.Errorf("BeginStepUp by the requester: %v, want self_approval", err)
	}
	unchanged(t, f, r2, "tf2")
}

// A quorum counts distinct approvers, each with their own proof; the
// receipt names each credential, in the approvers' order.
func TestStepUpQuorum(t *testing.T) {
	f := newStepUpFixture(t)
	r := f.Open(t, "UERIN", call("p1", "payout", `{"amount": 50000}`))
	complete := func(user, cred string, want int) {
		t.Helper()
		l := f.begin(t, r, clickOn(f, user, "p1"), approval.Decision{CallID: "p1", By: user, Action: approval.ActionApprove})
		if !slices.Equal(l.Methods, []string{"webauthn", "totp"}) {
			t.Errorf("methods %v, want the route's", l.Methods)
		}
		res, err := f.Svc.CompleteStepUp(t.Context(), l.ID, "T1", user, passkey(cred))
		if err != nil || res.Votes != want {
			t.Fatalf("%s completes: %+v, %v; want %d votes", user, res, err, want)
		}
	}
	complete("UALICE", "cred-alice", 1)
	complete("UALICE", "cred-alice", 1) // the same person again: still one
	if got := mustGet(t, f, r).Call("p1"); got.Status != approval.CallPending {
		t.Fatalf("after one approver: %s, want pending", got.Status)
	}
	complete("UBOB", "cred-bob", 2)
	got := mustGet(t, f, r)
	c := got.Call("p1")
	claims, err := got.Receipt(c)
	if err != nil || c.Status != approval.CallApproved || !slices.Equal(claims.By, []string{"UALICE", "UBOB"}) ||
		!slices.Equal(claims.Cred, []string{"cred-alice", "cred-bob"}) || !slices.Equal(claims.AMR, []string{"hwk"}) {
		t.Errorf("quorum receipt = %+v, %v (call %s)", claims, err, c.Status)
	}
}

// A grant made with a step-up carries its proof to the calls it approves
// (their receipts' amr); "Approve all" steps up once for every call.
func TestStepUpGrantAndBatch(t *testing.T) {
	f := newStepUpFixture(t)
	r := f.Open(t, "UERIN", call("tf", "terraform_apply", `{"plan":"prod"}`))
	l := f.begin(t, r, clickOn(f, "UALICE", "tf"), approval.Decision{CallID: "tf", By: "UALICE", Action: approval.ActionApprove, Grant: time.Hour})
	if _, err := f.Svc.CompleteStepUp(t.Context(), l.ID, "T1", "UALICE", passkey("cred-alice")); err != nil {
		t.Fatal(err)
	}
	later := f.Open(t, "UERIN", call("tf9", "terraform_apply", `{"plan":"prod"}`))
	c := later.Call("tf9")
	if c.Status != approval.CallApproved || c.DecidedBy != "grant:UALICE" {
		t.Fatalf("a later call the grant covers: %s by %s, want approved by the grant", c.Status, c.DecidedBy)
	}
	if claims, _ := later.Receipt(c); !slices.Equal(claims.AMR, []string{"hwk"}) || !slices.Equal(claims.Cred, []string{"cred-alice"}) {
		t.Errorf("the grant's receipt = %+v, want the grant's proof", claims)
	}

	b := f.Open(t, "UERIN", call("a1", "terraform_apply", `{"plan":"a"}`), call("n1", "note", `{}`))
	ids := []string{"a1", "n1"}
	l = f.begin(t, b, clickOn(f, "UALICE", "n1"), approval.Decision{CallID: "n1", By: "UALICE", Action: approval.ActionApprove}, ids...)
	if !l.Batch || len(l.Calls) != 2 {
		t.Fatalf("batch link = %+v", l)
	}
	if _, err := f.Svc.CompleteStepUp(t.Context(), l.ID, "T1", "UALICE", passkey("cred-alice")); err != nil {
		t.Fatal(err)
	}
	got := mustGet(t, f, b)
	for _, id := range ids {
		if c := got.Call(id); c.Status != approval.CallApproved || c.StepUp == nil {
			t.Errorf("batch call %s: %s, step-up %+v; want approved with the proof", id, c.Status, c.StepUp)
		}
	}
}
