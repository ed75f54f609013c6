// Package storeadapter adapts the Redis store to the interfaces package bot
// defines for itself (bot.Approvals, bot.RunSaver, bot.Locker): bot knows
// nothing of Redis and store nothing of Slack, and the mapping between
// their types and error vocabularies lives here, in one place. Only the
// wiring (cmd/slackbot) and tests that run the real bot on the real store
// import it.
package storeadapter

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/slackapprove/slackbot/agentrunner"
	"github.com/slackapprove/slackbot/bot"
	"github.com/slackapprove/slackbot/store"
)

// Approvals is the store seen as bot.Approvals, bot.RunSaver and
// bot.Locker.
type Approvals struct {
	s *store.Store
}

// New adapts s.
func New(s *store.Store) Approvals { return Approvals{s: s} }

var (
	_ bot.Approvals = Approvals{}
	_ bot.RunSaver  = Approvals{}
	_ bot.Locker    = Approvals{}
)

// apiClientPrefix marks a requester that is an HTTP API client.
const apiClientPrefix = "api:"

// Create implements bot.Approvals.
func (a Approvals) Create(ctx context.Context, ap *bot.Approval) error {
	rec := &store.Approval{
		Token: ap.Token, RunID: ap.RunID, Requester: ap.Origin.Requester(),
		Source:   store.Source{Team: ap.Origin.TeamID, Channel: ap.Origin.Channel, ThreadTS: ap.Origin.ThreadTS},
		Requests: ap.Requests, CreatedAt: ap.CreatedAt, ExpiresAt: ap.ExpiresAt, Context: ap.Context,
	}
	for _, c := range ap.Calls {
		rec.Calls = append(rec.Calls, store.CallState{ID: c.ID, Route: c.Route, Required: c.Required,
			Message: store.MessageRef(c.Message)})
	}
	if err := a.s.Create(ctx, rec); err != nil {
		return MapErr(err)
	}
	ap.CreatedAt, ap.ExpiresAt = rec.CreatedAt, rec.ExpiresAt
	return nil
}

// Get implements bot.Approvals.
func (a Approvals) Get(ctx context.Context, token string) (*bot.Approval, error) {
	rec, err := a.s.Get(ctx, token)
	if err != nil {
		return nil, MapErr(err)
	}
	return ToBot(rec), nil
}

// SetMessage implements bot.Approvals.
func (a Approvals) SetMessage(ctx context.Context, token, callID string, ref bot.MessageRef) error {
	return MapErr(a.s.SetMessage(ctx, token, callID, ref.Channel, ref.TS))
}

// Decide implements bot.Approvals.
func (a Approvals) Decide(ctx context.Context, token string, d bot.Decision) (*bot.Decided, error) {
	sd := store.Decision{CallID: d.CallID, By: d.By, Message: d.Reason, NotAfter: d.NotAfter}
	switch d.Action {
	case bot.ActionApprove:
		sd.Approve, sd.OverrideArgs = true, d.OverrideArgs
	case bot.ActionDeny:
		sd.Deny = true
	case bot.ActionAnswer:
		sd.Answer = d.Answer
	case bot.ActionFail:
		sd.Fail = true
	default:
		return nil, fmt.Errorf("decide: unknown action %q", d.Action)
	}
	out, err := a.s.Decide(ctx, token, sd)
	var res *bot.Decided
	if out != nil && out.Approval != nil {
		ap := ToBot(out.Approval)
		res = &bot.Decided{Approval: ap, Call: ap.Call(out.Call.ID), Changed: out.Changed, Resolved: out.Resolved}
	}
	return res, MapErr(err)
}

// Refused implements bot.Approvals.
func (a Approvals) Refused(ctx context.Context, r bot.Refusal) error {
	return a.s.AuditRefused(ctx, r.Token, r.CallID, r.User, r.Reason)
}

// Outcome implements bot.Approvals.
func (a Approvals) Outcome(ctx context.Context, token, callID string, o bot.ToolOutcome) error {
	rec, err := a.s.Get(ctx, token)
	if err != nil {
		return MapErr(err)
	}
	tool := ""
	if c, ok := rec.Call(callID); ok {
		tool = c.Tool
	}
	return MapErr(a.s.SetOutcome(ctx, token, rec.RunID, callID, tool, store.ToolOutcome{Status: o.Status, Summary: o.Summary}))
}

// MapErr translates the store's errors into bot's vocabulary, keeping the
// message for logs.
func MapErr(err error) error {
	if err == nil {
		return nil
	}
	for _, m := range []struct{ from, to error }{
		{store.ErrNotFound, bot.ErrNotFound},
		{store.ErrNotPendingCall, bot.ErrNotFound},
		{store.ErrExpired, bot.ErrExpired},
		{store.ErrCancelled, bot.ErrCancelled},
		{store.ErrDecided, bot.ErrDecided},
		{store.ErrResolved, bot.ErrResolved},
		{store.ErrFailed, bot.ErrResolved},
		{store.ErrTooLate, bot.ErrTooLate},
	} {
		if errors.Is(err, m.from) {
			return fmt.Errorf("%w (%v)", m.to, err)
		}
	}
	return err
}

// ToBot maps a store record to bot's view of it.
func ToBot(rec *store.Approval) *bot.Approval {
	ap := &bot.Approval{
		Token: rec.Token, RunID: rec.RunID, Requests: rec.Requests,
		Origin:    bot.Origin{TeamID: rec.Source.Team, Channel: rec.Source.Channel, ThreadTS: rec.Source.ThreadTS},
		CreatedAt: rec.CreatedAt, ExpiresAt: rec.ExpiresAt, Context: rec.Context, Client: rec.Client,
	}
	if client, ok := strings.CutPrefix(rec.Requester, apiClientPrefix); ok {
		ap.Origin.Client = client
	} else {
		ap.Origin.User = rec.Requester
	}
	switch rec.State {
	case store.StateOpen:
		ap.State = bot.ApprovalPending
	case store.StateResolved:
		ap.State = bot.ApprovalResolved
	case store.StateExpired:
		ap.State = bot.ApprovalExpired
	case store.StateCancelled:
		ap.State = bot.ApprovalCancelled
	default:
		ap.State = bot.ApprovalFailed
	}
	for i := range rec.Calls {
		c := &rec.Calls[i]
		cs := &bot.CallStatus{
			ID: c.ID, Kind: c.Kind, Route: c.Route, Required: c.Required,
			DecidedBy: c.DecidedBy, DecidedAt: c.DecidedAt, Message: bot.MessageRef(c.Message),
		}
		if c.Outcome != nil {
			cs.Outcome = &bot.ToolOutcome{Status: c.Outcome.Status, Summary: c.Outcome.Summary}
		}
		for _, v := range c.Votes {
			cs.Votes = append(cs.Votes, bot.Vote{User: v.By, At: v.At, ArgsKey: v.Key})
		}
		switch c.Status {
		case store.CallPending:
			cs.State = bot.StatePending
		case store.CallApproved:
			cs.State = bot.StateApproved
		case store.CallDenied:
			cs.State = bot.StateDenied
		case store.CallAnswered:
			cs.State = bot.StateAnswered
		case store.CallFailed:
			cs.State = bot.StateFailed
		case store.CallUndecided:
			switch rec.State {
			case store.StateExpired:
				cs.State = bot.StateExpired
			case store.StateCancelled:
				cs.State = bot.StateCancelled
			default:
				cs.State = bot.StateFailed
				cs.Reason = rec.Reason
			}
		}
		readResult(c, cs)
		ap.Calls = append(ap.Calls, cs)
	}
	return ap
}

// readResult fills the reason, override arguments or answer of a decided
// call from its wire-format result.
func readResult(c *store.CallState, cs *bot.CallStatus) {
	if len(c.Result) == 0 {
		return
	}
	if c.Kind == agentrunner.KindApproval {
		var r agentrunner.ApprovalResult
		if json.Unmarshal(c.Result, &r) != nil {
			return
		}
		if r.Approved {
			cs.OverrideArgs = r.OverrideArgs
		} else {
			cs.Reason = r.DenialMessage()
		}
		return
	}
	var r agentrunner.CallResult
	if json.Unmarshal(c.Result, &r) != nil {
		return
	}
	switch {
	case r.Failed, r.Retry:
		cs.Reason = r.Message
	default:
		cs.Answer = r.Value
	}
}

// Lock implements bot.Locker with a lease in Redis.
func (a Approvals) Lock(ctx context.Context, name string, ttl time.Duration) (func(), error) {
	return a.s.Lock(ctx, name, ttl)
}

// SaveRun implements bot.RunSaver with the store's run state.
func (a Approvals) SaveRun(ctx context.Context, rc *agentrunner.RunContext, token string, pending agentrunner.DeferredToolRequests, origin bot.Origin, expires time.Time) error {
	o, err := json.Marshal(origin)
	if err != nil {
		return fmt.Errorf("save run: origin: %w", err)
	}
	return a.s.SaveRun(ctx, store.RunState{
		RunID: rc.RunID, Token: token, Messages: rc.Messages, Pending: pending, Origin: o, ExpiresAt: expires,
	})
}
