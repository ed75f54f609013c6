// Package approvaltest gives tests of approval.Service fakes of the ports
// it consumes (a Poster that records cards, a Directory, Metrics) and a
// Fixture that opens requests and clicks on their cards, so the domain's
// own tests (on the embedded Redis) and the store's tests of the Service
// over a real primary and replica share one harness. The Poster is also
// the doors' (internal/systest).
package approvaltest

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/slackapprove/slackbot/agentrunner"
	"github.com/slackapprove/slackbot/approval"
	"github.com/slackapprove/slackbot/routing"
	"github.com/slackapprove/slackbot/store"
)

// Poster records the cards the Service posts and updates, as a fake
// Slack would show them: the one recording poster of the tests of the
// Service and of the doors over it (internal/systest). Set Fail to make
// every post fail; set Routes to post each card in its route's channel
// (otherwise "C" and the route's name).
type Poster struct {
	Routes *routing.Routes

	mu      sync.Mutex
	Posted  map[string]approval.MessageRef // call id -> card
	Updates map[string]int                 // call id -> updates
	Fail    bool
	n       int
	// in has the token/call of each card posted, per channel; shown the
	// call as its card was last updated to show it, per token/call.
	in    map[string][]string
	shown map[string]approval.Call
}

// NewPoster returns a Poster with nothing posted.
func NewPoster() *Poster {
	return &Poster{Posted: map[string]approval.MessageRef{}, Updates: map[string]int{}, in: map[string][]string{}, shown: map[string]approval.Call{}}
}

// Post implements approval.Poster.
func (p *Poster) Post(_ context.Context, r *approval.Request, c *approval.Call) (approval.MessageRef, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.Fail {
		return approval.MessageRef{}, errors.New("channel_not_found")
	}
	p.n++
	channel := "C" + c.Route
	if rt := p.Routes.Named(c.Route); rt != nil {
		channel = rt.Channel
	}
	ref := approval.MessageRef{Channel: channel, ID: time.Now().Format("150405.000000") + string(rune('a'+p.n))}
	p.Posted[c.ID] = ref
	p.in[channel] = append(p.in[channel], r.Token+"/"+c.ID)
	return ref, nil
}

// Update implements approval.Poster.
func (p *Poster) Update(_ context.Context, r *approval.Request, c *approval.Call) (approval.MessageRef, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.Updates[c.ID]++
	p.shown[r.Token+"/"+c.ID] = *c
	return c.Message, nil
}

// CardsIn returns how many cards were posted in channel.
func (p *Poster) CardsIn(channel string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.in[channel])
}

// CardsOf returns how many cards were posted for token, in any channel.
func (p *Poster) CardsOf(token string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
	for _, cards := range p.in {
		for _, k := range cards {
			if strings.HasPrefix(k, token+"/") {
				n++
			}
		}
	}
	return n
}

// Shown returns call callID of token as its card was last updated to
// show it, and whether it was updated at all.
func (p *Poster) Shown(token, callID string) (approval.Call, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	c, ok := p.shown[token+"/"+callID]
	return c, ok
}

// Directory maps usergroups to their members.
type Directory map[string][]string

// Members implements approval.Directory.
func (d Directory) Members(_ context.Context, g string) ([]string, error) { return d[g], nil }

// Warm implements approval.Directory.
func (d Directory) Warm(...string) {}

// Metrics records the decisions and refusals the Service counts.
type Metrics struct {
	mu           sync.Mutex
	RefusedCodes []string
	Decisions    []string
}

// Decision implements approval.Metrics.
func (m *Metrics) Decision(_, s string, _ time.Duration) {
	m.mu.Lock()
	m.Decisions = append(m.Decisions, s)
	m.mu.Unlock()
}

// Counted returns the decisions counted so far, in order.
func (m *Metrics) Counted() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]string(nil), m.Decisions...)
}

// Refused implements approval.Metrics.
func (m *Metrics) Refused(c string) {
	m.mu.Lock()
	m.RefusedCodes = append(m.RefusedCodes, c)
	m.mu.Unlock()
}

// Fixture is a Service with its store and fakes.
type Fixture struct {
	Svc     *approval.Service
	Store   *store.Store
	Poster  *Poster
	Metrics *Metrics
}

// Call is a tool call with JSON arguments.
func Call(id, tool, args string) agentrunner.ToolCallPart {
	return agentrunner.ToolCallPart{ToolCallID: id, ToolName: tool, Args: json.RawMessage(args)}
}

// Open asks for approval of calls as a Slack run in #general by requester.
func (f *Fixture) Open(t *testing.T, requester string, calls ...agentrunner.ToolCallPart) *approval.Request {
	t.Helper()
	token := agentrunner.NewToken()
	rc := &agentrunner.RunContext{RunID: "run-" + token[:6], Deps: &approval.Origin{Team: "T1", Channel: "CGENERAL", User: requester}}
	if _, err := f.Svc.Ask(nil)(t.Context(), rc, agentrunner.DeferredToolRequests{Approvals: calls}, token); err != nil {
		t.Fatalf("Ask: %v", err)
	}
	r, err := f.Store.Get(t.Context(), token)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// Click is user's click of a on the card of call callID of r.
func (f *Fixture) Click(t *testing.T, r *approval.Request, user, callID string, a approval.Action) (*approval.Decided, error) {
	t.Helper()
	return f.Svc.Decide(t.Context(), r.Token, approval.Decider{User: user, Message: f.Poster.card(callID)},
		approval.Decision{CallID: callID, By: user, Action: a})
}

// GrantClick is user's "Approve for d" click on the card of call id of r.
func (f *Fixture) GrantClick(t *testing.T, r *approval.Request, user, id string, d time.Duration) (*approval.Decided, error) {
	t.Helper()
	return f.Svc.Decide(t.Context(), r.Token, approval.Decider{User: user, Message: f.Poster.card(id)},
		approval.Decision{CallID: id, By: user, Action: approval.ActionApprove, Grant: d})
}

// UpdateCount is how many times the card of call callID was updated.
func (p *Poster) UpdateCount(callID string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.Updates[callID]
}

// Card is the card posted for call callID, if one was.
func (p *Poster) Card(callID string) (approval.MessageRef, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	ref, ok := p.Posted[callID]
	return ref, ok
}

func (p *Poster) card(callID string) approval.MessageRef {
	ref, _ := p.Card(callID)
	return ref
}
