package bot

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"github.com/slack-go/slack"

	"github.com/slackapprove/slackbot/agentrunner"
	"github.com/slackapprove/slackbot/approval"
)

// DefaultTimeout bounds a wait when no route sets a timeout.
const DefaultTimeout = time.Hour

// Deadline returns when a request must be decided by: the earliest of the
// timeouts of the routes its calls go to, so no call waits longer than its
// route allows.
//
// Its signature fits agentrunner.AskHandler.Deadline, so the token's
// deadline and the cards' expiry agree.
func (b *Bot) Deadline(rc *agentrunner.RunContext, req agentrunner.DeferredToolRequests) time.Time {
	origin := approval.OriginFrom(rc)
	timeout := time.Duration(0)
	for _, id := range req.IDs() {
		c, _ := req.Call(id)
		var t time.Duration
		if b.routes != nil {
			if r := b.routes.Match(c.ToolName, origin.Channel); r != nil {
				t = r.Timeout
			}
			if t == 0 {
				t = b.routes.DefaultTimeout
			}
		}
		if t == 0 {
			t = DefaultTimeout
		}
		if timeout == 0 || t < timeout {
			timeout = t
		}
	}
	if timeout == 0 {
		timeout = DefaultTimeout
	}
	return b.now().Add(timeout)
}

// Ask is the Slack ask (an agentrunner.AskFunc): it records the pending
// calls under token and posts one card per call to its route's channel, in
// order. It returns nil results: the run waits until a click resolves the
// token. A call no route matches is denied at once (the Policy handler
// normally does that before the ask); a call whose card cannot be posted
// fails with the reason, so the model can tell the user.
func (b *Bot) Ask(ctx context.Context, rc *agentrunner.RunContext, req agentrunner.DeferredToolRequests, token string) (*agentrunner.DeferredToolResults, error) {
	origin := approval.OriginFrom(rc)
	now := b.now()
	a := &approval.Request{
		Token: token, Requests: req, Origin: *origin, CreatedAt: now,
		ExpiresAt: b.Deadline(rc, req), State: approval.StatePending,
	}
	if rc != nil {
		a.RunID = rc.RunID
		if o, ok := rc.Deps.(interface{ AskContext() string }); ok {
			a.Context = o.AskContext()
		}
	}
	var unrouted []string
	for _, p := range b.pendingViews(req) {
		cs := approval.Call{ID: p.Call.ToolCallID, Kind: p.Kind, Status: approval.CallPending, Required: 1}
		if r := b.matchRoute(p.Call.ToolName, origin.Channel); r != nil {
			cs.Route = r.Name
			cs.Required = max(r.RequiredApprovals, 1)
		} else {
			unrouted = append(unrouted, cs.ID)
		}
		a.Calls = append(a.Calls, cs)
	}
	if err := b.approvals.Create(ctx, a); err != nil {
		return nil, fmt.Errorf("record approval: %w", err)
	}
	if rc != nil {
		if d, ok := rc.Deps.(interface{ Asked(token string) }); ok {
			d.Asked(token)
		}
		if d, ok := rc.Deps.(interface{ Waits(until time.Time) }); ok {
			d.Waits(a.ExpiresAt)
		}
		// Save the run before any card can be clicked, so a decision always
		// finds the run to resume, even if this process is gone by then.
		if b.runs != nil && rc.RunID != "" {
			if err := b.runs.SaveWaitingRun(ctx, rc, token, req, *origin, a.ExpiresAt); err != nil {
				return nil, fmt.Errorf("save run state: %w", err)
			}
		}
	}
	for _, id := range unrouted {
		c, _ := req.Call(id)
		reason := NoRouteMessage(c.ToolName, origin)
		action := approval.ActionDeny
		if req.Kind(id) != agentrunner.KindApproval {
			action = approval.ActionFail
		}
		if _, err := b.approvals.Decide(ctx, token, approval.Decision{CallID: id, By: AnsweredByNoRoute, Action: action, Reason: reason}); err != nil {
			return nil, fmt.Errorf("deny unrouted call %s: %w", id, err)
		}
	}
	for i := range a.Calls {
		c := &a.Calls[i]
		if c.Route == "" {
			continue
		}
		route := b.route(c.Route)
		b.auth.Warm(route.Usergroups...) // the first click need not wait for a lookup
		ref, err := b.post(ctx, route.Channel, b.card(a, c))
		if err != nil && ctx.Err() != nil {
			// Shutting down: leave the token open; the run resumes elsewhere
			// and nobody is told "no decision" for a card never shown.
			return nil, ctx.Err()
		}
		if err != nil {
			b.log.ErrorContext(ctx, "post approval card", "err", err, "channel", route.Channel, "call", c.ID)
			action := approval.ActionFail
			if c.Kind == agentrunner.KindApproval {
				action = approval.ActionDeny
			}
			reason := agentrunner.NoDecisionPrefix + "the approval message could not be posted to Slack"
			if _, derr := b.approvals.Decide(ctx, token, approval.Decision{CallID: c.ID, By: "slackbot", Action: action, Reason: reason}); derr != nil {
				return nil, fmt.Errorf("post card for %s: %w (and recording the failure: %v)", c.ID, err, derr)
			}
			continue
		}
		c.Message = ref
		if err := b.approvals.SetMessage(ctx, token, c.ID, ref); err != nil {
			return nil, fmt.Errorf("record card of %s: %w", c.ID, err)
		}
	}
	return nil, nil
}

func (b *Bot) matchRoute(tool, channel string) *Route {
	if b.routes == nil {
		return nil
	}
	return b.routes.Match(tool, channel)
}

// post posts a card, retrying as Slack asks, and returns where it went.
//
// A post that fails ambiguously — a timeout or a 5xx, after which Slack may
// have posted the message anyway — is not simply retried: the channel's
// recent history is searched for the card's marker first, so a burst under
// a flaky network posts every card exactly once.
func (b *Bot) post(ctx context.Context, channel string, card Card) (approval.MessageRef, error) {
	var ref approval.MessageRef
	marker := cardMarker(card.Token, card.ToolCallID)
	since := time.Now().Add(-time.Minute)
	ambiguous, minimal := false, false
	blocks := ApprovalBlocks(card)
	send := func(ctx context.Context) (string, string, error) {
		return b.slack.PostMessageContext(ctx, channel,
			slack.MsgOptionText(ApprovalText(card), false),
			slack.MsgOptionBlocks(blocks...),
			slack.MsgOptionMetadata(slack.SlackMetadata{
				EventType:    cardEventType,
				EventPayload: map[string]any{"card": marker},
			}))
	}
	err := b.retry.Do(ctx, func(ctx context.Context) error {
		if ambiguous {
			found, err := b.findCard(ctx, channel, marker, since)
			if err != nil {
				return err
			}
			if found.TS != "" {
				ref = found
				return nil
			}
		}
		ch, ts, err := send(ctx)
		if blocksRefused(err) && !minimal {
			// Slack refused the card: post where the call stands, with its
			// buttons, in as little as Slack accepts.
			b.metrics.SlackError("chat.postMessage")
			b.log.WarnContext(ctx, "Slack refused a card; posting a minimal one", "channel", channel, "err", err)
			blocks, minimal = MinimalApprovalBlocks(card), true
			ch, ts, err = send(ctx)
		}
		if err != nil {
			b.metrics.SlackError("chat.postMessage")
			var rl *slack.RateLimitedError
			if !errors.As(err, &rl) && retryable(err) {
				ambiguous = true
			}
			return err
		}
		ref = approval.MessageRef{Channel: ch, TS: ts}
		return nil
	})
	if err != nil {
		return approval.MessageRef{}, fmt.Errorf("chat.postMessage to %s: %w", channel, err)
	}
	return ref, nil
}

// cardEventType is the metadata event type of approval cards.
const cardEventType = "slackbot_approval"

// cardMarker identifies one call's card in message metadata without
// revealing the resume token: a digest of token and call id.
func cardMarker(token, callID string) string {
	sum := sha256.Sum256([]byte(token + "\x00" + callID))
	return hex.EncodeToString(sum[:12])
}

// findCard looks for a card with marker among the channel's messages since
// the first attempt.
func (b *Bot) findCard(ctx context.Context, channel, marker string, since time.Time) (approval.MessageRef, error) {
	resp, err := b.slack.GetConversationHistoryContext(ctx, &slack.GetConversationHistoryParameters{
		ChannelID: channel, Oldest: fmt.Sprintf("%d.000000", since.Unix()), Limit: 200, IncludeAllMetadata: true,
	})
	if err != nil {
		b.metrics.SlackError("conversations.history")
		return approval.MessageRef{}, fmt.Errorf("look for an ambiguously posted card: %w", err)
	}
	for _, m := range resp.Messages {
		if m.Metadata.EventType == cardEventType && m.Metadata.EventPayload["card"] == marker {
			return approval.MessageRef{Channel: channel, TS: m.Timestamp}, nil
		}
	}
	return approval.MessageRef{}, nil
}
