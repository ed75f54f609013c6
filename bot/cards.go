package bot

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/slack-go/slack"

	"github.com/slackapprove/slackbot/approval"
	"github.com/slackapprove/slackbot/routing"
)

// CardsConfig is what Cards are built from: the Slack client and the
// routes, nothing of the pipeline, so that they exist before the
// approval.Service that posts with them.
type CardsConfig struct {
	Slack  SlackAPI
	Routes *routing.Routes
	// Tools supplies the tools' confirmation texts and tells which tools
	// can be edited (their schema is known); nil: none.
	Tools   approval.Tools
	Retry   Retry
	Metrics Metrics
	Log     *slog.Logger
	// Now is the clock that says whether a call has escalated; nil:
	// time.Now.
	Now func() time.Time
}

// Cards is the approval.Poster over Slack: one Block Kit message per call,
// posted once (a marker in its metadata finds a post that failed
// ambiguously), re-sent minimally when Slack refuses its blocks, and
// updated in place as its call moves on.
type Cards struct {
	slack   SlackAPI
	routes  *routing.Routes
	tools   approval.Tools
	retry   Retry
	metrics Metrics
	log     *slog.Logger
	now     func() time.Time
}

var _ approval.Poster = (*Cards)(nil)

// NewCards returns the Poster of cfg.
func NewCards(cfg CardsConfig) *Cards {
	c := &Cards{slack: cfg.Slack, routes: cfg.Routes, tools: cfg.Tools, retry: cfg.Retry, metrics: cfg.Metrics, log: cfg.Log, now: cfg.Now}
	if c.now == nil {
		c.now = time.Now
	}
	if c.routes == nil {
		c.routes = &routing.Routes{}
	}
	if c.metrics == nil {
		c.metrics = noMetrics{}
	}
	if c.log == nil {
		c.log = slog.New(slog.DiscardHandler)
	}
	return c
}

// Post implements approval.Poster: it posts the card of c to its route's
// channel.
func (cs *Cards) Post(ctx context.Context, r *approval.Request, c *approval.Call) (approval.MessageRef, error) {
	route := cs.routes.Named(c.Route)
	if route == nil {
		return approval.MessageRef{}, fmt.Errorf("post card of %s: no route %q", c.ID, c.Route)
	}
	return cs.post(ctx, route.Channel, cs.card(r, c))
}

// Update implements approval.Poster: it re-renders the card of c in place,
// first finding it by its marker when its message was never recorded.
func (cs *Cards) Update(ctx context.Context, r *approval.Request, c *approval.Call) (approval.MessageRef, error) {
	ref := c.Message
	if ref.ID == "" {
		ref = cs.locate(ctx, r, c)
	}
	if err := cs.updateRendered(ctx, ref, cs.card(r, c)); err != nil {
		return ref, err
	}
	return ref, nil
}

// toolLabel is how people see a tool (approval.Viewer.ToolLabel).
func (cs *Cards) toolLabel(name string) string { return cs.viewer().ToolLabel(name) }

// card builds the view of one call for rendering.
func (cs *Cards) card(a *approval.Request, c *approval.Call) Card {
	return cs.viewer().View(a, c)
}

// viewer builds the neutral views that cards render.
func (cs *Cards) viewer() approval.Viewer {
	return approval.Viewer{Routes: cs.routes, Tools: cs.tools, Now: cs.now}
}

// locate finds a card whose message reference was never recorded — the
// process that posted it died between posting and recording — by its
// marker in the route channel's history; the zero MessageRef if it is not
// there.
func (cs *Cards) locate(ctx context.Context, a *approval.Request, c *approval.Call) approval.MessageRef {
	route := cs.routes.Named(c.Route)
	if route == nil {
		return approval.MessageRef{}
	}
	ref, err := cs.findCard(ctx, route.Channel, cardMarker(a.Token, c.ID), a.CreatedAt.Add(-time.Minute))
	if err != nil {
		cs.log.WarnContext(ctx, "look for an unrecorded card", "err", err)
	}
	return ref
}

// updateRendered replaces the message at ref with card.
func (cs *Cards) updateRendered(ctx context.Context, ref approval.MessageRef, card Card) error {
	if ref.Channel == "" || ref.ID == "" {
		return nil // never posted (or the post failed): nothing to update
	}
	text := ApprovalText(card)
	lean, _ := cs.slack.(messageUpdater)
	update := func(blocks []slack.Block) error {
		return cs.retry.Do(ctx, func(ctx context.Context) error {
			var err error
			if lean != nil {
				err = lean.UpdateMessageLean(ctx, ref.Channel, ref.ID, text, blocks)
			} else {
				_, _, _, err = cs.slack.UpdateMessageContext(ctx, ref.Channel, ref.ID,
					slack.MsgOptionText(text, false),
					slack.MsgOptionBlocks(blocks...))
			}
			countLimited(cs.metrics, MethodUpdate, err)
			return err
		})
	}
	err := update(ApprovalBlocks(card))
	if blocksRefused(err) {
		// Never leave a decided card with live buttons: say where the call
		// stands in as little as Slack accepts.
		cs.metrics.SlackError(MethodUpdate)
		cs.log.WarnContext(ctx, "Slack refused a card; updating it with a minimal one", "channel", ref.Channel, "ts", ref.ID, "err", err)
		err = update(MinimalApprovalBlocks(card))
	}
	if err != nil {
		cs.metrics.SlackError(MethodUpdate)
		return fmt.Errorf("update card %s/%s: %w", ref.Channel, ref.ID, err)
	}
	return nil
}

// post posts a card, retrying as Slack asks, and returns where it went.
//
// A post that fails ambiguously — a timeout or a 5xx, after which Slack may
// have posted the message anyway — is not simply retried: the channel's
// recent history is searched for the card's marker first, so a burst under
// a flaky network posts every card exactly once.
func (cs *Cards) post(ctx context.Context, channel string, card Card) (approval.MessageRef, error) {
	var ref approval.MessageRef
	marker := cardMarker(card.Token, card.ToolCallID)
	since := time.Now().Add(-time.Minute)
	ambiguous, minimal := false, false
	blocks := ApprovalBlocks(card)
	send := func(ctx context.Context) (string, string, error) {
		return cs.slack.PostMessageContext(ctx, channel,
			slack.MsgOptionText(ApprovalText(card), false),
			slack.MsgOptionBlocks(blocks...),
			slack.MsgOptionMetadata(slack.SlackMetadata{
				EventType:    cardEventType,
				EventPayload: map[string]any{"card": marker},
			}))
	}
	err := cs.retry.Do(ctx, func(ctx context.Context) error {
		if ambiguous {
			found, err := cs.findCard(ctx, channel, marker, since)
			if err != nil {
				return err
			}
			if found.ID != "" {
				ref = found
				return nil
			}
		}
		ch, ts, err := send(ctx)
		if blocksRefused(err) && !minimal {
			// Slack refused the card: post where the call stands, with its
			// buttons, in as little as Slack accepts.
			cs.metrics.SlackError(MethodPostMessage)
			cs.log.WarnContext(ctx, "Slack refused a card; posting a minimal one", "channel", channel, "err", err)
			blocks, minimal = MinimalApprovalBlocks(card), true
			ch, ts, err = send(ctx)
		}
		if err != nil {
			countAttempt(cs.metrics, MethodPostMessage, err)
			var rl *slack.RateLimitedError
			if !errors.As(err, &rl) && retryable(err) {
				ambiguous = true
			}
			return err
		}
		ref = approval.MessageRef{Channel: ch, ID: ts}
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
func (cs *Cards) findCard(ctx context.Context, channel, marker string, since time.Time) (approval.MessageRef, error) {
	resp, err := cs.slack.GetConversationHistoryContext(ctx, &slack.GetConversationHistoryParameters{
		ChannelID: channel, Oldest: fmt.Sprintf("%d.000000", since.Unix()), Limit: 200, IncludeAllMetadata: true,
	})
	if err != nil {
		countAttempt(cs.metrics, MethodConversationsHistory, err)
		return approval.MessageRef{}, fmt.Errorf("look for an ambiguously posted card: %w", err)
	}
	for _, m := range resp.Messages {
		if m.Metadata.EventType == cardEventType && m.Metadata.EventPayload["card"] == marker {
			return approval.MessageRef{Channel: channel, ID: m.Timestamp}, nil
		}
	}
	return approval.MessageRef{}, nil
}
