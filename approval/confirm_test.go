package approval_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/slackapprove/slackbot/approval"
	"github.com/slackapprove/slackbot/routing"
	"github.com/slackapprove/slackbot/store"
	"github.com/slackapprove/slackbot/store/redistest"
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
