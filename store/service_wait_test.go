package store_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/slackapprove/slackbot/agentrunner"
	"github.com/slackapprove/slackbot/approval"
	"github.com/slackapprove/slackbot/internal/approvaltest"
	"github.com/slackapprove/slackbot/routing"
	"github.com/slackapprove/slackbot/store"
	"github.com/slackapprove/slackbot/store/redistest"
)

// The tests here drive approval.Service over a store whose writes wait
// for a replica (REDIS_WAIT_REPLICAS), and stop the replica with
// SIGSTOP: they need a real primary and replica, which package approval's
// own tests (on the embedded Redis) do without.

const grantRoutes = `
routes:
  - name: refunds
    when: {tools: ["refund"]}
    channel: CREFUND
    approvers: {users: ["UALICE"], usergroups: ["SFIN"]}
    timeout: 2h
    grants: 8h
`

// The Service's fakes and fixture are approvaltest's, as in package
// approval's own tests.
type (
	directory = approvaltest.Directory
	metrics   = approvaltest.Metrics
	fixture   = approvaltest.Fixture
)

// resumed records the runs the Service hands to its Resumed port.
type resumed struct {
	mu   sync.Mutex
	runs []string
}

func (r *resumed) resume(_ context.Context, _, runID string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.runs = append(r.runs, runID)
	return nil
}

func (r *resumed) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.runs)
}

// With REDIS_WAIT_REPLICAS=1 and the replica stopped, an "Approve for 8 h"
// is held: the click is told EUNCONFIRMED, and neither the run, nor the
// grant, nor the card follows it. Once the replica is back, Confirm
// applies it and everything a confirmed click does follows, once: the run
// resumes, the grant is saved, the card is updated.
func TestConfirmAppliesAHeldDecision(t *testing.T) {
	routes, err := routing.ParseRoutes([]byte(grantRoutes), "routes.yaml")
	if err != nil {
		t.Fatal(err)
	}
	primary := redistest.StartServer(t)
	replica := redistest.StartReplica(t, primary)
	st := store.New(primary.Client(t), store.Options{Prefix: "c:", WaitReplicas: 1, WaitTimeout: 300 * time.Millisecond})
	runs := &resumed{}
	f := &fixture{Store: st, Poster: approvaltest.NewPoster(), Metrics: &metrics{}}
	f.Svc = approval.New(approval.Config{Store: st, Poster: f.Poster, Directory: directory{"SFIN": {"UBOB"}}, Routes: routes, Metrics: f.Metrics,
		Grants: st, Resumed: runs.resume, Confirmer: st})
	t.Cleanup(f.Svc.Close)
	r := f.Open(t, "UCAROL", approvaltest.Call("c1", "refund", `{"amount":50}`))

	replica.Pause(t)
	defer replica.Resume(t)
	if _, err := f.GrantClick(t, r, "UALICE", "c1", 8*time.Hour); approval.ErrorCode(err) != approval.EUNCONFIRMED {
		t.Fatalf("Approve for 8 h, replica stopped: %v, want EUNCONFIRMED", err)
	}
	if err := f.Svc.Confirm(t.Context()); err != nil {
		t.Fatal(err)
	}
	f.Svc.Close() // what the click started is done
	if g, _ := f.Svc.Grants(t.Context(), "UALICE"); len(g) != 0 || runs.count() != 0 || f.Poster.Updates["c1"] != 0 {
		t.Errorf("a held click made %d grants, resumed %d runs, updated the card %d times; want none",
			len(g), runs.count(), f.Poster.Updates["c1"])
	}
	if _, err := f.Click(t, r, "UBOB", "c1", approval.ActionDeny); approval.ErrorCode(err) != approval.ERECORDING {
		t.Errorf("another approver meanwhile: %v, want ERECORDING", err)
	}

	replica.Resume(t)
	deadline := time.Now().Add(30 * time.Second)
	for {
		if err := f.Svc.Confirm(t.Context()); err != nil {
			t.Fatal(err)
		}
		if got, _ := st.Get(t.Context(), r.Token); got.State == approval.StateResolved {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the held click was never applied")
		}
	}
	f.Svc.Close()
	g, _ := f.Svc.Grants(t.Context(), "UALICE")
	if len(g) != 1 || runs.count() != 1 || f.Poster.Updates["c1"] != 1 {
		t.Errorf("once applied: %d grants, %d runs resumed, %d card updates; want 1 each", len(g), runs.count(), f.Poster.Updates["c1"])
	}
	if again := f.Open(t, "UCAROL", approvaltest.Call("c2", "refund", `{"amount":50}`)).Call("c2"); again.DecidedBy != approval.ByGrantPrefix+"UALICE" {
		t.Errorf("the repeat call: %s by %s, want approved by Alice's grant", again.Status, again.DecidedBy)
	}
}

const autoRoutes = `
routes:
  - name: small
    when: {tools: ["refund"]}
    channel: CREFUND
    approvers: {users: ["UALICE"]}
    auto_approve: "args.amount <= 100"
`

// pauseAfterRecord opens through svc, stopping the replica right after
// the request is recorded (and confirmed), before its policy decision.
type pauseAfterRecord struct {
	*approval.Service
	pause func()
}

func (p pauseAfterRecord) Open(ctx context.Context, o approval.Opening) (*approval.Request, error) {
	recorded := o.Recorded
	o.Recorded = func(ctx context.Context, r *approval.Request) error {
		err := recorded(ctx, r)
		p.pause()
		return err
	}
	return p.Service.Open(ctx, o)
}

// TestAttackOpenPolicyDecisionHeld: under REDIS_WAIT_REPLICAS=1 an API
// client's request is recorded and confirmed, then the replica stops
// before the route's auto_approve decision is confirmed. Before, Open
// failed, the client was told its request could not be opened (the
// attempt to fail it was refused, ERECORDING), and once the replica was
// back the confirmer approved the request the client was told failed.
// What the client is told must be what happens: the request is opened,
// its call pending with its card (a failover that lost the decision
// leaves the buttons), and once the replica is back the held decision is
// applied and the card shows it.
func TestAttackOpenPolicyDecisionHeld(t *testing.T) {
	routes, err := routing.ParseRoutes([]byte(autoRoutes), "routes.yaml")
	if err != nil {
		t.Fatal(err)
	}
	primary := redistest.StartServer(t)
	replica := redistest.StartReplica(t, primary)
	st := store.New(primary.Client(t), store.Options{Prefix: "c:", WaitReplicas: 1, WaitTimeout: 300 * time.Millisecond})
	p := approvaltest.NewPoster()
	svc := approval.New(approval.Config{Store: st, Poster: p, Directory: directory{}, Routes: routes, Metrics: &metrics{}, Confirmer: st})
	t.Cleanup(svc.Close)

	paused := false
	t.Cleanup(func() {
		if paused {
			replica.Resume(t)
		}
	})
	opener := pauseAfterRecord{Service: svc, pause: func() { replica.Pause(t); paused = true }}
	token := agentrunner.NewToken()
	o := approval.Opening{
		Token: token, Origin: approval.Origin{Client: "ci"},
		Requests: agentrunner.DeferredToolRequests{Approvals: []agentrunner.ToolCallPart{
			approvaltest.Call("c1", "refund", `{"amount":50}`), approvaltest.Call("c2", "refund", `{"amount":60}`),
		}},
	}
	if err := approval.OpenForClient(t.Context(), opener, st, approval.Quota{}, o, ""); err != nil {
		t.Fatalf("open with the policy decision held: %v; want the request opened", err)
	}
	r, err := st.Get(t.Context(), token)
	if err != nil || r.State != approval.StatePending || r.Call("c1").Status != approval.CallPending {
		t.Fatalf("request while the decision is held: %v, %v; want pending", r, err)
	}
	_, c1Card := p.Card("c1")
	_, c2Card := p.Card("c2")
	if !c1Card || !c2Card {
		t.Errorf("cards posted: c1 %v, c2 %v; want both (a decision not in effect leaves the call to a person)", c1Card, c2Card)
	}

	replica.Resume(t)
	paused = false
	deadline := time.Now().Add(30 * time.Second)
	for {
		if err := svc.Confirm(t.Context()); err != nil {
			t.Fatalf("confirm: %v", err)
		}
		if got, _ := st.Get(t.Context(), token); got.Call("c1").Status != approval.CallPending {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the held policy decision was never applied")
		}
	}
	svc.Close()
	r, err = st.Get(t.Context(), token)
	if err != nil {
		t.Fatal(err)
	}
	if c := r.Call("c1"); c.Status != approval.CallApproved || c.DecidedBy != approval.ByPolicyPrefix+"small" {
		t.Errorf("c1 once confirmed: %s by %s; want approved by policy:small", c.Status, c.DecidedBy)
	}
	if n := p.UpdateCount("c1"); n != 1 {
		t.Errorf("c1's card updated %d times once its decision applied; want 1", n)
	}
}
