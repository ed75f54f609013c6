package approval_test

import (
	"context"
	"testing"
	"time"

	"github.com/slackapprove/slackbot/agentrunner"
	"github.com/slackapprove/slackbot/approval"
	"github.com/slackapprove/slackbot/routing"
	"github.com/slackapprove/slackbot/store"
	"github.com/slackapprove/slackbot/store/redistest"
)

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
	p := &poster{posted: map[string]approval.MessageRef{}, updates: map[string]int{}}
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
			call("c1", "refund", `{"amount":50}`), call("c2", "refund", `{"amount":60}`),
		}},
	}
	if err := approval.OpenForClient(t.Context(), opener, st, approval.Quota{}, o, ""); err != nil {
		t.Fatalf("open with the policy decision held: %v; want the request opened", err)
	}
	r, err := st.Get(t.Context(), token)
	if err != nil || r.State != approval.StatePending || r.Call("c1").Status != approval.CallPending {
		t.Fatalf("request while the decision is held: %v, %v; want pending", r, err)
	}
	p.mu.Lock()
	_, c1Card := p.posted["c1"]
	_, c2Card := p.posted["c2"]
	p.mu.Unlock()
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
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.updates["c1"] != 1 {
		t.Errorf("c1's card updated %d times once its decision applied; want 1", p.updates["c1"])
	}
}
