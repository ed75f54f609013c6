package approval_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/slackapprove/slackbot/agentrunner"
	"github.com/slackapprove/slackbot/approval"
	"github.com/slackapprove/slackbot/internal/approvaltest"
	"github.com/slackapprove/slackbot/internal/clocktest"
	"github.com/slackapprove/slackbot/routing"
	"github.com/slackapprove/slackbot/store"
	"github.com/slackapprove/slackbot/store/redistest"
)

// updateFails is a Poster whose card updates fail, as when Slack is down or
// the process dies before its chat.update: it counts the attempts.
type updateFails struct {
	*poster
	mu       sync.Mutex
	attempts int
}

func (p *updateFails) Update(context.Context, *approval.Request, *approval.Call) (approval.MessageRef, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.attempts++
	return approval.MessageRef{}, errors.New("chat.update: service_unavailable")
}

// seenPoster records the status of each call whose card it updated.
type seenPoster struct {
	*poster
	mu   sync.Mutex
	seen map[string][]approval.CallStatus
}

func (p *seenPoster) Update(ctx context.Context, r *approval.Request, c *approval.Call) (approval.MessageRef, error) {
	p.mu.Lock()
	p.seen[c.ID] = append(p.seen[c.ID], c.Status)
	p.mu.Unlock()
	return p.poster.Update(ctx, r, c)
}

// replica is one process of a two-replica deployment: its Service over its
// own store client, on a shared Redis and clock.
type replica struct {
	Svc   *approval.Service
	Store *store.Store
}

func newReplicas(t *testing.T, posterA, posterB approval.Poster) (a, b replica, clock *clocktest.Clock, rdb redis.UniversalClient, prefix string) {
	t.Helper()
	routes, err := routing.ParseRoutes([]byte(testRoutes), "routes.yaml")
	if err != nil {
		t.Fatal(err)
	}
	rdb, prefix = redistest.Embedded(t)
	clock = clocktest.Stopped(time.Now().Truncate(time.Millisecond))
	mk := func(p approval.Poster) replica {
		c := redis.NewClient(&redis.Options{Addr: rdb.(*redis.Client).Options().Addr})
		t.Cleanup(func() { _ = c.Close() })
		st := store.New(c, store.Options{Prefix: prefix, Now: clock.Now})
		svc := approval.New(approval.Config{Store: st, Poster: p, Directory: directory{}, Routes: routes, Metrics: &metrics{}})
		t.Cleanup(svc.Close)
		return replica{Svc: svc, Store: st}
	}
	return mk(posterA), mk(posterB), clock, rdb, prefix
}

func newPoster() *poster {
	return approvaltest.NewPoster()
}

func askRefund(t *testing.T, r replica, p *poster) (*approval.Request, approval.MessageRef) {
	t.Helper()
	token := agentrunner.NewToken()
	rc := &agentrunner.RunContext{RunID: "run-" + token[:6], Deps: &approval.Origin{Team: "T1", Channel: "CGENERAL", User: "UERIN"}}
	reqs := agentrunner.DeferredToolRequests{Approvals: []agentrunner.ToolCallPart{call("c1", "refund", `{"amount":500}`)}}
	if _, err := r.Svc.Ask(nil)(t.Context(), rc, reqs, token); err != nil {
		t.Fatalf("Ask: %v", err)
	}
	req, err := r.Store.Get(t.Context(), token)
	if err != nil {
		t.Fatal(err)
	}
	return req, p.Posted["c1"]
}

// A decision whose card its own process never updates (Slack failed, or
// the process died after the acknowledgement) leaves a card update job
// that becomes due CardJobDelay later; another replica's job consumer
// then brings the card up to date, showing the decision.
func TestClickCardUpdateIsDurable(t *testing.T) {
	postA := &updateFails{poster: newPoster()}
	postB := &seenPoster{poster: newPoster(), seen: map[string][]approval.CallStatus{}}
	a, b, clock, _, _ := newReplicas(t, postA, postB)
	req, card := askRefund(t, a, postA.poster)

	d, err := a.Svc.Decide(t.Context(), req.Token, approval.Decider{User: "UALICE", Message: card},
		approval.Decision{CallID: "c1", By: "UALICE", Action: approval.ActionApprove})
	if err != nil || !d.Changed {
		t.Fatalf("decide: %+v, %v", d, err)
	}
	a.Svc.Close() // waits for its card update, which fails
	if postA.attempts != 1 {
		t.Fatalf("A tried to update the card %d times, want 1", postA.attempts)
	}

	q := b.Store.JobQueue(0)
	if n, err := q.Promote(t.Context()); err != nil || n != 0 {
		t.Fatalf("promoted %d (%v) before the bound", n, err)
	}
	clock.Add(store.CardJobDelay)
	if n, err := q.Promote(t.Context()); err != nil || n != 1 {
		t.Fatalf("promoted %d (%v) at the bound, want the card's job", n, err)
	}
	jobs, err := q.Read(t.Context(), "replica-b", 0)
	if err != nil || len(jobs) != 1 || jobs[0].Kind != store.JobCardUpdate || jobs[0].Token != req.Token {
		t.Fatalf("jobs %+v, %v; want the card update of the token", jobs, err)
	}
	// What cmd/slackbot's job consumer does with a card.update.
	if err := b.Svc.Expire(t.Context(), jobs[0].Token); err != nil {
		t.Fatal(err)
	}
	postB.mu.Lock()
	defer postB.mu.Unlock()
	if got := postB.seen["c1"]; len(got) != 1 || got[0] != approval.CallApproved {
		t.Errorf("B's updates of c1 showed %v, want one showing approved", got)
	}
}

// A decision whose process updates its card leaves neither the job nor
// the card's lease behind: the release drops both, in the round trip that
// frees the lease.
func TestClickCardUpdateDropsItsJob(t *testing.T) {
	postA := &seenPoster{poster: newPoster(), seen: map[string][]approval.CallStatus{}}
	a, _, clock, rdb, prefix := newReplicas(t, postA, newPoster())
	req, card := askRefund(t, a, postA.poster)
	if _, err := a.Svc.Decide(t.Context(), req.Token, approval.Decider{User: "UALICE", Message: card},
		approval.Decision{CallID: "c1", By: "UALICE", Action: approval.ActionApprove}); err != nil {
		t.Fatal(err)
	}
	a.Svc.Close()
	postA.mu.Lock()
	seen := postA.seen["c1"]
	postA.mu.Unlock()
	if len(seen) != 1 || seen[0] != approval.CallApproved {
		t.Fatalf("A's updates of c1 showed %v, want one showing approved", seen)
	}
	if n, err := rdb.ZCard(t.Context(), prefix+"jobs:retry").Result(); err != nil || n != 0 {
		t.Errorf("%d scheduled jobs (%v) after the card was updated, want 0", n, err)
	}
	if n, err := rdb.Exists(t.Context(), prefix+"lock:card:"+req.Token+":c1").Result(); err != nil || n != 0 {
		t.Errorf("card lease left behind (%d, %v)", n, err)
	}
	clock.Add(store.CardJobDelay)
	if n, err := a.Store.JobQueue(0).Promote(t.Context()); err != nil || n != 0 {
		t.Errorf("promoted %d (%v): a job was left behind", n, err)
	}
}

// openAPIOn opens a request for one note as API client ci through r, on
// a route that lets the client decide it.
func openAPIOn(t *testing.T, r replica) string {
	t.Helper()
	token := agentrunner.NewToken()
	reqs := agentrunner.DeferredToolRequests{Approvals: []agentrunner.ToolCallPart{call("a", "note", `{}`)}}
	if _, err := r.Svc.Open(t.Context(), approval.Opening{Token: token, Requests: reqs, Origin: approval.Origin{Client: "ci"}}); err != nil {
		t.Fatalf("Open: %v", err)
	}
	return token
}

// A change of the whole request (an API answer, a cancellation, a
// failure) whose process never updates the cards leaves a card update
// job, due CardJobDelay later, that another replica's consumer does; one
// whose process updates the cards leaves none.
func TestRequestChangeCardUpdateIsDurable(t *testing.T) {
	changes := map[string]func(t *testing.T, svc *approval.Service, token string) approval.CallStatus{
		"answer": func(t *testing.T, svc *approval.Service, token string) approval.CallStatus {
			if _, err := svc.Decide(t.Context(), token, approval.Decider{Client: "ci"}, approval.Decision{CallID: "a", By: "ci", Action: approval.ActionDeny}); err != nil {
				t.Fatal(err)
			}
			return approval.CallDenied
		},
		"cancel": func(t *testing.T, svc *approval.Service, token string) approval.CallStatus {
			if _, err := svc.Cancel(t.Context(), token, approval.Decider{Client: "ci"}); err != nil {
				t.Fatal(err)
			}
			return approval.CallCancelled
		},
		"fail": func(t *testing.T, svc *approval.Service, token string) approval.CallStatus {
			if _, err := svc.Fail(t.Context(), token, "could not ask"); err != nil {
				t.Fatal(err)
			}
			return approval.CallFailed
		},
	}
	for name, change := range changes {
		t.Run(name, func(t *testing.T) {
			postA := &updateFails{poster: newPoster()}
			postB := &seenPoster{poster: newPoster(), seen: map[string][]approval.CallStatus{}}
			a, b, clock, _, _ := newReplicas(t, postA, postB)
			token := openAPIOn(t, a)
			want := change(t, a.Svc, token)
			a.Svc.Close()
			if postA.attempts != 1 {
				t.Fatalf("A tried to update the card %d times, want 1", postA.attempts)
			}
			q := b.Store.JobQueue(0)
			clock.Add(store.CardJobDelay)
			if n, err := q.Promote(t.Context()); err != nil || n != 1 {
				t.Fatalf("promoted %d (%v) at the bound, want the cards' job", n, err)
			}
			jobs, err := q.Read(t.Context(), "replica-b", 0)
			if err != nil || len(jobs) != 1 || jobs[0].Kind != store.JobCardUpdate || jobs[0].Token != token {
				t.Fatalf("jobs %+v, %v; want the cards' update of the token", jobs, err)
			}
			if err := b.Svc.Expire(t.Context(), jobs[0].Token); err != nil {
				t.Fatal(err)
			}
			postB.mu.Lock()
			got := postB.seen["a"]
			postB.mu.Unlock()
			if len(got) != 1 || got[0] != want {
				t.Errorf("B's updates of the card showed %v, want one showing %s", got, want)
			}
		})
		t.Run(name+" updated", func(t *testing.T) {
			a, _, clock, rdb, prefix := newReplicas(t, newPoster(), newPoster())
			token := openAPIOn(t, a)
			change(t, a.Svc, token)
			a.Svc.Close()
			if n, err := rdb.ZCard(t.Context(), prefix+"jobs:retry").Result(); err != nil || n != 0 {
				t.Errorf("%d scheduled jobs (%v) after the cards were updated, want 0", n, err)
			}
			clock.Add(store.CardJobDelay)
			if n, err := a.Store.JobQueue(0).Promote(t.Context()); err != nil || n != 0 {
				t.Errorf("promoted %d (%v): a job was left behind", n, err)
			}
		})
	}
}

// lostReply is a store whose Decide records the decision and then loses
// the reply, as when Redis ran the script but its answer came after the
// acknowledgement budget.
type lostReply struct{ *store.Store }

func (l lostReply) Decide(ctx context.Context, token string, d approval.Decision) (*approval.Decided, error) {
	if _, err := l.Store.Decide(ctx, token, d); err != nil {
		return nil, err
	}
	return nil, fmt.Errorf("decide: %w", context.DeadlineExceeded)
}

// A decision whose reply was lost leaves no card lease behind it: the
// update that follows (the click's late confirmation, or the job) does not
// wait out the lease the script took for the lost reply.
func TestLostDecideReplyFreesTheCardLease(t *testing.T) {
	p := newPoster()
	a, _, _, _, _ := newReplicas(t, p, newPoster())
	routes, err := routing.ParseRoutes([]byte(testRoutes), "routes.yaml")
	if err != nil {
		t.Fatal(err)
	}
	svc := approval.New(approval.Config{Store: lostReply{a.Store}, Poster: p, Directory: directory{}, Routes: routes, Metrics: &metrics{}})
	t.Cleanup(svc.Close)
	req, card := askRefund(t, a, p)
	if _, err := svc.Decide(t.Context(), req.Token, approval.Decider{User: "UALICE", Message: card},
		approval.Decision{CallID: "c1", By: "UALICE", Action: approval.ActionApprove}); err == nil {
		t.Fatal("the lost reply was not an error")
	}
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	if err := svc.UpdateCard(ctx, req.Token, "c1"); err != nil {
		t.Fatalf("the card's update after a lost reply: %v (waited on the lease the lost decision took?)", err)
	}
}
