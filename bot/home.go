package bot

import (
	"context"
	"fmt"
	"time"

	"github.com/slack-go/slack"

	"github.com/slackapprove/slackbot/approval"
)

// App Home: the Home tab of each person (app_home_opened → views.publish),
// and the clicks on it, which decide through the Service as card clicks do.

// homeAPI is the part of the Slack Web API App Home needs; *slack.Client
// implements it. A SlackAPI without it publishes no Home.
type homeAPI interface {
	PublishViewContext(ctx context.Context, req slack.PublishViewContextRequest) (*slack.ViewResponse, error)
}

// homePublishTimeout bounds one publish of a Home, retries included.
const homePublishTimeout = 30 * time.Second

// homeContent is what user's Home shows, with cards rendered as the
// channel shows them.
func (cs *Cards) homeContent(v *approval.HomeView, notice string) HomeContent {
	h := HomeContent{Notice: notice, MoreWaiting: v.MoreWaiting, MoreRequests: v.MoreRequests, Partial: v.Partial}
	item := func(hc approval.HomeCall) HomeItem {
		return HomeItem{Card: hc.View(cs.viewer()), Message: hc.Call.Message, Escalated: hc.Escalated}
	}
	for _, hc := range v.Waiting {
		h.Waiting = append(h.Waiting, item(hc))
	}
	for _, hc := range v.Requests {
		h.Requests = append(h.Requests, item(hc))
	}
	for _, g := range v.Grants {
		h.Grants = append(h.Grants, HomeGrant{Grant: g, ToolLabel: cs.toolLabel(g.Tool)})
	}
	return h
}

// PublishHome publishes user's Home tab as it is now (views.publish),
// with notice at the top when set. A 429 is waited out as Slack's
// Retry-After says and the same view sent again: views.publish replaces
// the Home, so a retry never shows anything twice.
func (b *Bot) PublishHome(ctx context.Context, user, notice string) error {
	api, ok := b.slack.(homeAPI)
	if !ok || user == "" {
		return nil
	}
	v, err := b.svc.Home(ctx, user)
	if err != nil {
		return fmt.Errorf("home of %s: %w", user, err)
	}
	content := b.cards.homeContent(v, notice)
	content.Passkeys = b.homePasskeys(ctx, user)
	view := HomeView(content)
	err = b.retry.Do(ctx, func(ctx context.Context) error {
		_, err := api.PublishViewContext(ctx, slack.PublishViewContextRequest{UserID: user, View: view})
		countLimited(b.metrics, MethodViewsPublish, err)
		return err
	})
	if err != nil {
		b.metrics.SlackError(MethodViewsPublish)
		return fmt.Errorf("views.publish for %s: %w", user, err)
	}
	return nil
}

// HomeOpened publishes user's Home after the event that says they opened
// it is acknowledged (app_home_opened on the Home tab).
func (b *Bot) HomeOpened(ctx context.Context, user string) {
	b.publishHomeLater(ctx, user, "")
}

// publishHomeLater publishes the Home of user, who looks at it (they
// opened it or clicked on it, so changes republish it for a while), after
// the acknowledgement.
func (b *Bot) publishHomeLater(ctx context.Context, user, notice string) {
	b.goAsync(ctx, "publish home", func(ctx context.Context) error {
		ctx, cancel := context.WithTimeout(ctx, homePublishTimeout)
		defer cancel()
		b.svc.HomeOpened(ctx, user)
		return b.PublishHome(ctx, user, notice)
	})
}

// homeClick reports whether a block_actions payload came from the
// clicker's App Home: Slack says so in the signed payload (the container
// is a view and the view is a Home tab, which only its user sees).
func homeClick(cb *slack.InteractionCallback) bool {
	return cb.Container.Type == "view" && cb.View.Type == slack.VTHomeTab
}

// homeAction acts on a click on the clicker's Home: Approve, Deny, a
// grant, Approve all or Deny all decide through the Service as the card's
// buttons do (the same authorization; the cards are updated), Revoke ends
// a grant. What became of it is said at the top of the Home, republished
// after the ack: a Home has no channel for an ephemeral message, and the
// person is looking at their Home, where the call they decided leaves the
// list.
func (b *Bot) homeAction(ctx context.Context, cb *slack.InteractionCallback) {
	act := cb.ActionCallback.BlockActions[0]
	user := cb.User.ID
	switch act.ActionID {
	case ActionIDRevokeGrant:
		b.publishHomeLater(ctx, user, b.revoke(ctx, cb, act.Value))
		return
	case ActionIDPasskeyAdd:
		b.addPasskey(ctx, cb)
		return
	case ActionIDPasskeyRemove:
		b.removePasskey(ctx, cb, act.Value)
		return
	}
	token, callID, err := DecodeAction(act.Value)
	if err != nil {
		b.publishHomeLater(ctx, user, "This button is not one slackbot made.")
		return
	}
	t, err := b.target(ctx, cb, token, callID, approval.MessageRef{})
	if err != nil {
		b.publishHomeLater(ctx, user, explainLate(ctx, err, nil, nil))
		return
	}
	t.by.Home = true
	if act.ActionID == ActionIDApproveAll || act.ActionID == ActionIDDenyAll {
		if text := b.decideAll(ctx, t, batchAction(act.ActionID), cb.TriggerID); text != "" {
			b.publishHomeLater(ctx, user, text)
		}
		return
	}
	d := approval.Decision{CallID: t.call.ID, By: user, Action: approval.ActionApprove}
	switch grant, isGrant := grantOf(act.ActionID); {
	case act.ActionID == ActionIDDeny:
		d.Action = approval.ActionDeny
	case isGrant:
		d.Grant = grant
	case act.ActionID != ActionIDApprove:
		b.log.WarnContext(ctx, "unknown Home action", "action_id", act.ActionID)
		return
	}
	text := b.decideClick(ctx, t, d, cb.TriggerID)
	if text == "" {
		text = homeDecided(b.cards.card(t.approval, t.call), d)
	}
	if !quiet(text) {
		b.publishHomeLater(ctx, user, text)
	}
}

// homeDecided is the notice of a decision recorded from Home
// (approval.HomeDecided, naming the requester as a refusal does).
func homeDecided(c Card, d approval.Decision) string {
	return approval.HomeDecided(normalize(c), d, refusalMarks{})
}

// revoke ends grant id from its approver's Home and says what happened.
func (b *Bot) revoke(ctx context.Context, cb *slack.InteractionCallback, id string) string {
	if !b.workspace.accepts(cb.Team.ID, cb.Enterprise.ID) {
		return "This button comes from another Slack workspace."
	}
	g, err := b.svc.Revoke(ctx, id, cb.User.ID)
	switch {
	case approval.ErrorCode(err) == approval.ENOTFOUND:
		return approval.RevokeGone
	case err != nil:
		b.log.ErrorContext(ctx, "revoke a grant", "err", err)
		return approval.RevokeFailed
	}
	return approval.RevokedLine(b.cards.toolLabel(g.Tool), cardMarks{})
}
