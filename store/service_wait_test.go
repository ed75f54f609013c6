package store_test

import (
	"context"
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/slackapprove/slackbot/agentrunner"
	"github.com/slackapprove/slackbot/approval"
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

// poster records the cards the service posts and updates.
type poster struct {
	mu      sync.Mutex
	posted  map[string]approval.MessageRef // call id -> card
	updates map[string]int                 // call id -> updates
}

func (p *poster) Post(_ context.Context, _ *approval.Request, c *approval.Call) (approval.MessageRef, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	ref := approval.MessageRef{Channel: "C" + c.Route, TS: "1." + c.ID}
	p.posted[c.ID] = ref
	return ref, nil
}

func (p *poster) Update(_ context.Context, _ *approval.Request, c *approval.Call) (approval.MessageRef, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.updates[c.ID]++
	return c.Message, nil
}

type directory map[string][]string

func (d directory) Members(_ context.Context, g string) ([]string, error) { return d[g], nil }
func (d directory) Warm(...string)                                        {}

type metrics struct{}

func (metrics) Decision(string) {}
func (metrics) Refused(string)  {}

type fixture struct {
	svc     *approval.Service
	store   *store.Store
	poster  *poster
	metrics *metrics
}

func call(id, tool, args string) agentrunner.ToolCallPart {
	return agentrunner.ToolCallPart{ToolCallID: id, ToolName: tool, Args: json.RawMessage(args)}
}

// open asks for approval of calls as a Slack run in #general by requester.
func (f *fixture) open(t *testing.T, requester string, calls ...agentrunner.ToolCallPart) *approval.Request {
	t.Helper()
	token := agentrunner.NewToken()
	rc := &agentrunner.RunContext{RunID: "run-" + token[:6], Deps: &approval.Origin{Team: "T1", Channel: "CGENERAL", User: requester}}
	if _, err := f.svc.Ask(nil)(t.Context(), rc, agentrunner.DeferredToolRequests{Approvals: calls}, token); err != nil {
		t.Fatalf("Ask: %v", err)
	}
	r, err := f.store.Get(t.Context(), token)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func (f *fixture) click(t *testing.T, r *approval.Request, user, callID string, a approval.Action) (*approval.Decided, error) {
	t.Helper()
	return f.svc.Decide(t.Context(), r.Token, approval.Decider{User: user, Card: f.poster.posted[callID]},
		approval.Decision{CallID: callID, By: user, Action: a})
}

// grantClick is an "Approve for d" click on call id of r by user.
func (f *fixture) grantClick(t *testing.T, r *approval.Request, user, id string, d time.Duration) (*approval.Decided, error) {
	t.Helper()
	return f.svc.Decide(t.Context(), r.Token, approval.Decider{User: user, Card: f.poster.posted[id]},
		approval.Decision{CallID: id, By: user, Action: approval.ActionApprove, Grant: d})
}

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
	f := &fixture{store: st, poster: &poster{posted: map[string]approval.MessageRef{}, updates: map[string]int{}}, metrics: &metrics{}}
	f.svc = approval.New(approval.Config{Store: st, Poster: f.poster, Directory: directory{"SFIN": {"UBOB"}}, Routes: routes, Metrics: f.metrics,
		Grants: st, Resumed: runs.resume, Confirmer: st})
	t.Cleanup(f.svc.Close)
	r := f.open(t, "UCAROL", call("c1", "refund", `{"amount":50}`))

	replica.Pause(t)
	defer replica.Resume(t)
	if _, err := f.grantClick(t, r, "UALICE", "c1", 8*time.Hour); approval.ErrorCode(err) != approval.EUNCONFIRMED {
		t.Fatalf("Approve for 8 h, replica stopped: %v, want EUNCONFIRMED", err)
	}
	if err := f.svc.Confirm(t.Context()); err != nil {
		t.Fatal(err)
	}
	f.svc.Close() // what the click started is done
	if g, _ := f.svc.Grants(t.Context(), "UALICE"); len(g) != 0 || runs.count() != 0 || f.poster.updates["c1"] != 0 {
		t.Errorf("a held click made %d grants, resumed %d runs, updated the card %d times; want none",
			len(g), runs.count(), f.poster.updates["c1"])
	}
	if _, err := f.click(t, r, "UBOB", "c1", approval.ActionDeny); approval.ErrorCode(err) != approval.ERECORDING {
		t.Errorf("another approver meanwhile: %v, want ERECORDING", err)
	}

	replica.Resume(t)
	deadline := time.Now().Add(30 * time.Second)
	for {
		if err := f.svc.Confirm(t.Context()); err != nil {
			t.Fatal(err)
		}
		if got, _ := st.Get(t.Context(), r.Token); got.State == approval.StateResolved {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the held click was never applied")
		}
	}
	f.svc.Close()
	g, _ := f.svc.Grants(t.Context(), "UALICE")
	if len(g) != 1 || runs.count() != 1 || f.poster.updates["c1"] != 1 {
		t.Errorf("once applied: %d grants, %d runs resumed, %d card updates; want 1 each", len(g), runs.count(), f.poster.updates["c1"])
	}
	if again := f.open(t, "UCAROL", call("c2", "refund", `{"amount":50}`)).Call("c2"); again.DecidedBy != approval.ByGrantPrefix+"UALICE" {
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
	p := &poster{posted: map[string]approval.MessageRef{}, updates: map[string]int{}}
	svc := approval.New(approval.Config{Store: st, Poster: p, Directory: directory{}, Routes: routes, Metrics: metrics{}, Confirmer: st})
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
