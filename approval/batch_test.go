package approval_test

import (
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/slackapprove/slackbot/agentrunner"
	"github.com/slackapprove/slackbot/approval"
	"github.com/slackapprove/slackbot/store"
)

// decideAll is user's "Approve all" (or "Deny all") from the card of call
// from of r.
func decideAll(t *testing.T, f *fixture, r *approval.Request, user, from string, a approval.Action) (*approval.Batch, error) {
	t.Helper()
	ref, _ := f.Poster.Card(from)
	r, err := f.Store.Get(t.Context(), r.Token)
	if err != nil {
		t.Fatal(err)
	}
	return f.Svc.DecideAll(t.Context(), r, approval.Decider{User: user, Message: ref},
		approval.Decision{CallID: from, By: user, Action: a})
}

// ids are the call ids of a batch's calls, in order.
func ids(bcs []approval.BatchCall) string {
	var out []string
	for _, bc := range bcs {
		out = append(out, bc.Call.ID)
	}
	return strings.Join(out, ",")
}

// audited counts the audit stream's events of type typ per call id.
func audited(t *testing.T, f *fixture, token string, typ store.AuditType) map[string]int {
	t.Helper()
	evs, err := f.Store.ReadAudit(t.Context(), "0", 1000)
	if err != nil {
		t.Fatal(err)
	}
	n := map[string]int{}
	for _, ev := range evs {
		if ev.Token == token && ev.Type == typ {
			n[ev.CallID]++
		}
	}
	return n
}

// batchWords is what the person who clicked is told, in plain text.
func batchWords(f *fixture, b *approval.Batch) string {
	return approval.BatchWords(b, f.Svc.Route, textMarks{})
}

// A batch decides each call as a click on its card would: a call on a
// route the clicker does not approve is left pending, refused and audited
// as that click would be, and the reply names it, why, and who may decide
// it; the calls they may decide are approved, one audit entry each.
func TestDecideAllLeavesWhatTheClickerMayNotDecide(t *testing.T) {
	f := newFixture(t)
	r := f.Open(t, "UERIN", call("r1", "refund", `{"amount":500}`), call("n1", "note", `{}`), call("r2", "refund", `{"amount":700}`))

	b, err := decideAll(t, f, r, "UDAVE", "r1", approval.ActionApprove)
	if err != nil {
		t.Fatalf("DecideAll: %v", err)
	}
	if got := ids(b.Decided); got != "r1,r2" {
		t.Errorf("decided %q, want r1,r2", got)
	}
	if got := ids(b.Left); got != "n1" || approval.ErrorCode(b.Left[0].Err) != approval.ENOTAPPROVER {
		t.Fatalf("left %q (%v), want n1 refused as not_approver", got, b.Left)
	}
	got, _ := f.Store.Get(t.Context(), r.Token)
	if got.State != approval.StatePending || got.Call("n1").Status != approval.CallPending ||
		got.Call("r1").Status != approval.CallApproved || got.Call("r2").Status != approval.CallApproved {
		t.Errorf("after the batch: request %s, r1 %s, r2 %s, n1 %s; want pending, approved, approved, pending",
			got.State, got.Call("r1").Status, got.Call("r2").Status, got.Call("n1").Status)
	}
	if d := audited(t, f, r.Token, store.AuditDecided); d["r1"] != 1 || d["r2"] != 1 || d["n1"] != 0 {
		t.Errorf("decided audit entries %v, want one for r1 and r2, none for n1", d)
	}
	if ref := audited(t, f, r.Token, store.AuditRefused); ref["n1"] != 1 || len(ref) != 1 {
		t.Errorf("refused audit entries %v, want one for n1", ref)
	}
	words := batchWords(f, b)
	for _, want := range []string{`You approved 2 calls: "refund", "refund".`, `Left pending (1):`, `"note" — You are not an approver for self requests. Approvers: @UALICE.`} {
		if !strings.Contains(words, want) {
			t.Errorf("reply %q does not say %q", words, want)
		}
	}
	// The one approver of the call left decides it, and the request
	// resolves.
	b, err = decideAll(t, f, r, "UALICE", "n1", approval.ActionApprove)
	if err != nil || ids(b.Decided) != "n1" || len(b.Left) != 0 {
		t.Fatalf("the note's approver approves all: %+v, %v; want n1 decided, nothing left", b, err)
	}
	if got, _ := f.Store.Get(t.Context(), r.Token); got.State != approval.StateResolved {
		t.Errorf("request %s after every call was approved, want resolved", got.State)
	}
}

// A batch click is one vote per call: on a route that needs two approvers
// it approves nothing alone, and a second person's batch approves.
func TestDecideAllIsOneVotePerCall(t *testing.T) {
	f := newFixture(t)
	r := f.Open(t, "UERIN", call("d1", "deploy", `{"env":"staging"}`), call("d2", "deploy", `{"env":"dev"}`), call("r1", "refund", `{"amount":500}`))

	b, err := decideAll(t, f, r, "UALICE", "d1", approval.ActionApprove)
	if err != nil || ids(b.Decided) != "d1,d2,r1" || len(b.Left) != 0 {
		t.Fatalf("first batch: %+v, %v; want all three recorded", b, err)
	}
	got, _ := f.Store.Get(t.Context(), r.Token)
	for _, id := range []string{"d1", "d2"} {
		if c := got.Call(id); c.Status != approval.CallPending || len(c.Votes) != 1 {
			t.Errorf("%s after one batch: %s with %d votes, want pending with 1", id, c.Status, len(c.Votes))
		}
	}
	if words := batchWords(f, b); !strings.Contains(words, `counted toward 2 calls that need more approvers: "deploy" (1 of 2 approvals), "deploy" (1 of 2 approvals).`) ||
		!strings.Contains(words, `You approved 1 call: "refund".`) {
		t.Errorf("reply %q does not tell the votes from the approval", words)
	}
	// A repeat of the same batch adds no vote.
	b, err = decideAll(t, f, r, "UALICE", "d1", approval.ActionApprove)
	if err != nil || len(b.Decided) != 0 || ids(b.Left) != "d1,d2" {
		t.Fatalf("repeated batch: %+v, %v; want both left (counted already)", b, err)
	}
	b, err = decideAll(t, f, r, "UBOB", "d2", approval.ActionApprove)
	if err != nil || ids(b.Decided) != "d1,d2" {
		t.Fatalf("second approver's batch: %+v, %v", b, err)
	}
	got, _ = f.Store.Get(t.Context(), r.Token)
	if got.State != approval.StateResolved || got.Call("d1").Status != approval.CallApproved || got.Call("d2").Status != approval.CallApproved {
		t.Errorf("after two batches: %s, d1 %s, d2 %s; want resolved, both approved", got.State, got.Call("d1").Status, got.Call("d2").Status)
	}
	if v, d := audited(t, f, r.Token, store.AuditVoted), audited(t, f, r.Token, store.AuditDecided); v["d1"] != 1 || v["d2"] != 1 || d["d1"] != 1 || d["d2"] != 1 || d["r1"] != 1 {
		t.Errorf("audit: votes %v, decisions %v; want one vote and one decision for d1 and d2, one decision for r1", v, d)
	}
}

// The requester's own batch approves only where the route allows
// self-approval; each other call is refused on its own. Denying their own
// calls is theirs to do.
func TestDecideAllRefusesSelfApprovalPerCall(t *testing.T) {
	f := newFixture(t)
	r := f.Open(t, "UALICE", call("r1", "refund", `{"amount":500}`), call("n1", "note", `{}`))
	b, err := decideAll(t, f, r, "UALICE", "n1", approval.ActionApprove)
	if err != nil || ids(b.Decided) != "n1" || ids(b.Left) != "r1" || approval.ErrorCode(b.Left[0].Err) != approval.ESELFAPPROVAL {
		t.Fatalf("requester's batch: %+v, %v; want n1 approved, r1 refused as self_approval", b, err)
	}
	if words := batchWords(f, b); !strings.Contains(words, `"refund" — You asked for this call, so someone else must approve it. Approvers: @UALICE, @@SFIN.`) {
		t.Errorf("reply %q does not say why the refund was left", words)
	}
	b, err = decideAll(t, f, r, "UALICE", "r1", approval.ActionDeny)
	if err != nil || ids(b.Decided) != "r1" {
		t.Fatalf("requester denies all: %+v, %v", b, err)
	}
	if got, _ := f.Store.Get(t.Context(), r.Token); got.State != approval.StateResolved || got.Call("r1").Status != approval.CallDenied {
		t.Errorf("after the denial: %s, r1 %s", got.State, got.Call("r1").Status)
	}
}

// Calls a route's policy decided never wait for a person: a batch neither
// counts nor touches them, and they keep their policy's decision and its
// one audit entry.
func TestDecideAllLeavesPolicyDecisionsAlone(t *testing.T) {
	f := newFixture(t)
	token := openAPI(t, f, agentrunner.DeferredToolRequests{Approvals: []agentrunner.ToolCallPart{
		call("d1", "deploy", `{"env":"prod-eu"}`), call("r2", "refund", `{"amount":5}`),
		call("r1", "refund", `{"amount":500}`), call("n1", "note", `{}`)}})
	r, err := f.Store.Get(t.Context(), token)
	if err != nil {
		t.Fatal(err)
	}
	if c := r.Call("d1"); c.Status != approval.CallDenied {
		t.Fatalf("d1 is %s, want denied by policy", c.Status)
	}
	if v := (approval.Viewer{Routes: f.Svc.Routes()}).View(r, r.Call("r1")); v.Batch == nil || v.Batch.Count != 2 || strings.Join(v.Batch.Tools, ",") != "refund,note" {
		t.Fatalf("r1's view offers batch %+v, want the 2 pending calls (refund, note)", v.Batch)
	}
	b, err := decideAll(t, f, r, "UALICE", "r1", approval.ActionDeny)
	if err != nil || ids(b.Decided) != "r1,n1" || len(b.Left) != 0 {
		t.Fatalf("deny all: %+v, %v; want r1 and n1 denied", b, err)
	}
	got, _ := f.Store.Get(t.Context(), r.Token)
	if d1, r2 := got.Call("d1"), got.Call("r2"); d1.Status != approval.CallDenied || d1.DecidedBy != "policy:deploys" ||
		r2.Status != approval.CallApproved || r2.DecidedBy != "policy:refunds" {
		t.Errorf("policy's calls after the batch: d1 %s by %s, r2 %s by %s; want unchanged", d1.Status, d1.DecidedBy, r2.Status, r2.DecidedBy)
	}
	d := audited(t, f, r.Token, store.AuditDecided)
	for _, id := range []string{"d1", "r2", "r1", "n1"} {
		if d[id] != 1 {
			t.Errorf("audit has %d decisions of %s, want 1 (%v)", d[id], id, d)
		}
	}
}

// A batch refuses what it cannot give and clicks that are not from the
// request's cards; nothing is decided.
func TestDecideAllRefusals(t *testing.T) {
	f := newFixture(t)
	r := f.Open(t, "UERIN", call("r1", "refund", `{"amount":500}`), call("r2", "refund", `{"amount":600}`))
	card, _ := f.Poster.Card("r1")
	for _, tc := range []struct {
		name string
		by   approval.Decider
		d    approval.Decision
		code string
	}{
		{"a grant", approval.Decider{User: "UALICE", Message: card}, approval.Decision{CallID: "r1", Action: approval.ActionApprove, Grant: 1}, approval.EINVALID},
		{"an answer", approval.Decider{User: "UALICE", Message: card}, approval.Decision{CallID: "r1", Action: approval.ActionAnswer}, approval.EINVALID},
		{"an API client", approval.Decider{Client: "ci"}, approval.Decision{CallID: "r1", Action: approval.ActionApprove}, approval.EINVALID},
		{"another message", approval.Decider{User: "UALICE", Message: approval.MessageRef{Channel: "CREFUND", ID: "1.2"}}, approval.Decision{CallID: "r1", Action: approval.ActionApprove}, approval.EWRONGMESSAGE},
		{"another call's message", approval.Decider{User: "UALICE", Message: card}, approval.Decision{CallID: "r2", Action: approval.ActionApprove}, approval.EWRONGMESSAGE},
		{"no such call", approval.Decider{User: "UALICE", Message: card}, approval.Decision{CallID: "zz", Action: approval.ActionApprove}, approval.ENOTFOUND},
	} {
		if _, err := f.Svc.DecideAll(t.Context(), r, tc.by, tc.d); approval.ErrorCode(err) != tc.code {
			t.Errorf("%s: code %q (%v), want %q", tc.name, approval.ErrorCode(err), err, tc.code)
		}
	}
	got, _ := f.Store.Get(t.Context(), r.Token)
	if len(got.PendingApprovals()) != 2 {
		t.Errorf("after refused batches %d calls pending, want 2", len(got.PendingApprovals()))
	}
}

// Two people's batches and single clicks at once decide each call once:
// the store's script records the first decision of each call and refuses
// the rest, so every call has one decision, one audit entry, and is in
// exactly one person's decided list.
func TestDecideAllRacingClicksDecideEachCallOnce(t *testing.T) {
	f := newFixture(t)
	calls := []agentrunner.ToolCallPart{call("a", "refund", `{"amount":501}`), call("b", "refund", `{"amount":502}`), call("c", "refund", `{"amount":503}`), call("d", "refund", `{"amount":504}`)}
	r := f.Open(t, "UERIN", calls...)
	var (
		mu      sync.Mutex
		decided = map[string][]string{} // call -> who recorded a decision
		wg      sync.WaitGroup
	)
	record := func(id, who string) {
		mu.Lock()
		decided[id] = append(decided[id], who)
		mu.Unlock()
	}
	for _, who := range []struct {
		user string
		act  approval.Action
	}{{"UALICE", approval.ActionApprove}, {"UDAVE", approval.ActionDeny}} {
		wg.Go(func() {
			b, err := decideAll(t, f, r, who.user, "a", who.act)
			if code := approval.ErrorCode(err); code == approval.ERESOLVED || code == approval.EDECIDED {
				return // the others were quicker, to every call
			}
			if err != nil {
				t.Errorf("%s's batch: %v", who.user, err)
				return
			}
			for _, bc := range b.Decided {
				record(bc.Call.ID, who.user+" batch")
			}
			for _, bc := range b.Left {
				if code := approval.ErrorCode(bc.Err); code != approval.EDECIDED && code != approval.ERESOLVED {
					t.Errorf("%s's batch left %s with %v, want only calls decided by someone else", who.user, bc.Call.ID, bc.Err)
				}
			}
		})
	}
	for _, c := range calls {
		wg.Go(func() {
			d, err := f.Click(t, r, "UDAVE", c.ToolCallID, approval.ActionApprove)
			if err == nil && d.Changed {
				record(c.ToolCallID, "UDAVE click")
			}
		})
	}
	wg.Wait()
	for _, c := range calls {
		if len(decided[c.ToolCallID]) != 1 {
			t.Errorf("call %s recorded by %v, want exactly one decider", c.ToolCallID, decided[c.ToolCallID])
		}
	}
	got, _ := f.Store.Get(t.Context(), r.Token)
	if got.State != approval.StateResolved {
		t.Errorf("request %s after the race, want resolved", got.State)
	}
	d := audited(t, f, r.Token, store.AuditDecided)
	for _, c := range calls {
		if d[c.ToolCallID] != 1 {
			t.Errorf("audit has %d decisions of %s, want 1", d[c.ToolCallID], c.ToolCallID)
		}
	}
	if res := audited(t, f, r.Token, store.AuditResolved); len(res) != 1 {
		t.Errorf("resolved audited %v, want once", res)
	}
}

// Every card of a request counts its pending calls: a decision that takes
// one out brings the other cards up to date, and the last one left offers
// no batch.
func TestDecisionUpdatesTheOtherCardsCounts(t *testing.T) {
	f := newFixture(t)
	r := f.Open(t, "UERIN", call("r1", "refund", `{"amount":500}`), call("r2", "refund", `{"amount":600}`), call("n1", "note", `{}`))
	vw := approval.Viewer{Routes: f.Svc.Routes()}
	if v := vw.View(r, r.Call("r2")); v.Batch == nil || v.Batch.Count != 3 {
		t.Fatalf("r2's view before any decision: batch %+v, want 3", v.Batch)
	}
	if _, err := f.Click(t, r, "UDAVE", "r1", approval.ActionApprove); err != nil {
		t.Fatal(err)
	}
	f.Svc.Close() // waits for the card updates after the answer
	for _, id := range []string{"r2", "n1"} {
		if f.Poster.UpdateCount(id) != 1 {
			t.Errorf("card of %s updated %d times after r1's decision, want 1", id, f.Poster.UpdateCount(id))
		}
	}
	got, _ := f.Store.Get(t.Context(), r.Token)
	if v := vw.View(got, got.Call("r2")); v.Batch == nil || v.Batch.Count != 2 || !hasChoice(v.Choices(), approval.ChooseApproveAll) || !hasChoice(v.Choices(), approval.ChooseDenyAll) {
		t.Errorf("r2's view after r1's decision: batch %+v, choices %v; want 2, with Approve all and Deny all", v.Batch, v.Choices())
	}
	if _, err := f.Click(t, got, "UDAVE", "r2", approval.ActionDeny); err != nil {
		t.Fatal(err)
	}
	got, _ = f.Store.Get(t.Context(), r.Token)
	if v := vw.View(got, got.Call("n1")); v.Batch != nil {
		t.Errorf("the last pending call still offers a batch: %+v", v.Batch)
	}
}

func hasChoice(cs []approval.Choice, k approval.ChoiceKind) bool {
	for _, c := range cs {
		if c.Kind == k {
			return true
		}
	}
	return false
}

// Once the click's deadline has passed, a batch sends nothing more: each
// call not yet decided is left, told as "time ran out", and stays pending.
func TestDecideAllSendsNothingPastItsDeadline(t *testing.T) {
	f := newFixture(t)
	r := f.Open(t, "UERIN", call("r1", "refund", `{"amount":500}`), call("r2", "refund", `{"amount":600}`))
	card, _ := f.Poster.Card("r1")
	b, err := f.Svc.DecideAll(t.Context(), r, approval.Decider{User: "UDAVE", Message: card},
		approval.Decision{CallID: "r1", By: "UDAVE", Action: approval.ActionApprove, NotAfter: time.Now().Add(-time.Second)})
	if err != nil || len(b.Decided) != 0 || ids(b.Left) != "r1,r2" || approval.ErrorCode(b.Left[0].Err) != approval.ETOOLATE {
		t.Fatalf("late batch: %+v, %v; want both left as too late", b, err)
	}
	if words := batchWords(f, b); !strings.Contains(words, "Nothing changed.") || !strings.Contains(words, "not recorded: time ran out") {
		t.Errorf("reply %q does not say nothing changed, and why", words)
	}
	got, _ := f.Store.Get(t.Context(), r.Token)
	if len(got.PendingApprovals()) != 2 {
		t.Errorf("%d calls pending after a late batch, want 2", len(got.PendingApprovals()))
	}
}
