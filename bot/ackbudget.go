package bot

import (
	"context"
	"errors"
	"net"
	"slices"
	"time"

	"github.com/slackapprove/slackbot/approval"
)

// DefaultAckBudget is how long slackbot works on an interaction before it
// acknowledges it. Slack waits three seconds; the rest is for the network.
// Every store and Slack call made before the acknowledgement (loading the
// request, usergroup lookups, recording the decision) shares this one
// deadline, counted from the request's arrival.
const DefaultAckBudget = 2500 * time.Millisecond

// tooLateText is what a person is told when their click could not be
// handled within the budget. It is true: a click past its deadline decides
// nothing (the store refuses a decision that reaches it after its
// NotAfter), and one whose fate was unknown is checked first; see
// confirmLater.
const tooLateText = ":hourglass: slackbot could not record your click in time (Slack or slackbot's database is slow right now), so nothing changed. Try again in a moment."

// withAckBudget bounds ctx by the acknowledgement budget, counted from
// now; a deadline ctx already has that is earlier stays.
func (b *Bot) withAckBudget(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, b.ackBudget)
}

// pastBudget reports whether err means the acknowledgement budget ran out
// (or the store refused a decision that reached it too late).
func pastBudget(ctx context.Context, err error) bool {
	if err == nil {
		return false
	}
	if ctx.Err() != nil || errors.Is(err, approval.ErrTooLate) || errors.Is(err, context.DeadlineExceeded) {
		return true
	}
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// notAfter returns d bounded by ctx's deadline: the store records it only
// if it reaches the store before the click is answered.
func notAfter(ctx context.Context, d approval.Decision) approval.Decision {
	if dl, ok := ctx.Deadline(); ok {
		d.NotAfter = dl
	}
	return d
}

// confirmLaterText is what a form says when its decision's fate is
// found out after the acknowledgement (a button's click is just told
// later).
const confirmLaterText = "slackbot could not confirm in time whether this was recorded; a message will tell you. Check the card before you submit again."

// confirmLater finds out, after the acknowledgement, whether a decision
// whose recording was not confirmed in time was recorded, and tells the
// person which. Once its NotAfter has passed the store can no longer
// record it, so what it reads now stays true. A decision recorded after
// all updates its card, as any decision does.
//
// It does not count the decision: what it reads shows that by's decision
// is on the call, not that this click put it there. The same person's
// other click (on another replica, or Slack's retry of this one) may
// have recorded it and been counted by the Service, which counts a
// decision only where the store reports the change.
func (b *Bot) confirmLater(ctx context.Context, t *clickTarget, d approval.Decision) {
	channel, user := t.channel, t.by.User
	b.goAsync(ctx, "confirm a late decision", func(ctx context.Context) error {
		// The store that was too slow for the budget is often in the middle
		// of a failover: a network error is tried again (backing off, about
		// half a minute in all) before the person is told slackbot could not
		// find out. Unknown requests and other refusals are not retried.
		var a *approval.Request
		retry := b.retry
		retry.Attempts = max(retry.Attempts, confirmLaterAttempts)
		err := retry.Do(ctx, func(ctx context.Context) error {
			var err error
			a, err = b.svc.Get(ctx, t.approval.Token)
			return err
		})
		var c *approval.Call
		if err == nil {
			c = a.Call(t.call.ID)
		}
		switch {
		case err != nil:
			_ = b.ephemeral(ctx, channel, user, "slackbot could not confirm in time whether your click was recorded. The card shows every decision: look there before you click again.")
			return err
		case c != nil && recorded(c, d.By):
			_ = b.ephemeral(ctx, channel, user, "Your click was recorded (slackbot was slow to confirm it).")
			return b.svc.UpdateCard(ctx, a.Token, c.ID)
		default:
			return b.ephemeral(ctx, channel, user, tooLateText)
		}
	})
}

// confirmLaterAttempts is how many times confirmLater reads a request
// whose store fails with a network error: with Retry's backoff (250 ms
// doubling to at most 10 s) that spans a Sentinel or Cluster failover.
const confirmLaterAttempts = 8

// recorded reports whether by's decision is on the call: it decided the
// call, or its approval counts towards the call's quorum.
func recorded(c *approval.Call, by string) bool {
	if c.Status != approval.CallPending && c.DecidedBy == by {
		return true
	}
	return slices.ContainsFunc(c.Votes, func(v approval.Vote) bool { return v.By == by })
}
