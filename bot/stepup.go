package bot

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/slack-go/slack"

	"github.com/slackapprove/slackbot/approval"
	"github.com/slackapprove/slackbot/routing"
)

// Step-up: an Approve on a route that asks for it (routing's step_up) is
// refused by the Service with ESTEPUP and records nothing. The person who
// clicked is answered, after the acknowledgement, with a single-use link
// to slackbot's own page (approval.Service.BeginStepUp), where their
// passkey approves exactly this call; the page records the decision
// through the Service as a click would, and the card then says how it
// was verified. Deny never needs step-up. See README, "Step-up with
// passkeys", for what this protects against.

// stepUpTimeout bounds the work of answering one Approve that needs
// step-up: the link, the person's credentials, the message.
const stepUpTimeout = 20 * time.Second

// stepUpStarted is decideClick's answer when the person is answered by
// stepUp instead: nothing more to tell them now.
const stepUpStarted = "\x00step-up"

// quiet reports whether a click's answer is told some other way (or not
// at all): it was recorded, its fate is found out later, or it needs
// step-up.
func quiet(text string) bool {
	return text == "" || text == confirmLaterText || text == stepUpStarted
}

// decideClick is decide for a button or a form: an approval the Service
// refuses for want of step-up starts it (stepUp, after the
// acknowledgement) and is otherwise not told.
func (b *Bot) decideClick(ctx context.Context, t *clickTarget, d approval.Decision, triggerID string) string {
	text, err := b.decide(ctx, t, d)
	if approval.ErrorCode(err) == approval.ESTEPUP {
		b.stepUp(ctx, t, d, triggerID, t.call.ID)
		return stepUpStarted
	}
	return text
}

// stepUpBatch starts step-up for the calls of an Approve all that the
// Service left for want of it (each in Batch.Left with ESTEPUP), or, when
// it refused the whole batch so, for every pending approval of the
// request. It reports whether it did.
func (b *Bot) stepUpBatch(ctx context.Context, t *clickTarget, d approval.Decision, batch *approval.Batch, err error, triggerID string) bool {
	var ids []string
	switch {
	case batch != nil:
		for _, l := range batch.Left {
			if approval.ErrorCode(l.Err) == approval.ESTEPUP {
				ids = append(ids, l.Call.ID)
			}
		}
	case approval.ErrorCode(err) == approval.ESTEPUP:
		for _, c := range t.approval.PendingApprovals() {
			ids = append(ids, c.ID)
		}
	}
	if len(ids) == 0 {
		return false
	}
	b.stepUp(ctx, t, d, triggerID, ids...)
	return true
}

// stepUp answers an Approve that needs step-up, after the
// acknowledgement, so that making the link never holds the
// acknowledgement past its budget (the Service has refused the click, so
// nothing waits on it): a link to the step-up page with its expiry, or
// "Add a passkey" for a person with no credential the route accepts. On
// a card the answer is an ephemeral message; on App Home, which has
// none, a modal (trigger, while Slack's three seconds last), else a
// notice at the top of the Home.
func (b *Bot) stepUp(ctx context.Context, t *clickTarget, d approval.Decision, trigger string, callIDs ...string) {
	d.NotAfter = time.Time{} // the link decides later, on the page
	b.goAsync(ctx, "step-up", func(ctx context.Context) error {
		ctx, cancel := context.WithTimeout(ctx, stepUpTimeout)
		defer cancel()
		p, err := b.stepUpPrompt(ctx, t, d, callIDs)
		if err != nil {
			text := Explain(err, t.call, t.route)
			b.answerStepUp(ctx, t, "", text, nil)
			return fmt.Errorf("begin step-up: %w", err)
		}
		b.answerStepUp(ctx, t, trigger, StepUpText(*p), p)
		return nil
	})
}

// answerStepUp tells the person p (or, with p nil, text) where they
// clicked.
func (b *Bot) answerStepUp(ctx context.Context, t *clickTarget, trigger, text string, p *StepUpPrompt) {
	user := t.by.User
	if !t.by.Home {
		var blocks []slack.Block
		if p != nil {
			blocks = StepUpBlocks(*p)
		}
		if err := b.ephemeralBlocks(ctx, t.channel, user, text, blocks); err != nil {
			b.log.WarnContext(ctx, "step-up message not sent", "user", user, "err", err)
		}
		return
	}
	if p != nil && trigger != "" {
		_, err := b.slack.OpenViewContext(ctx, trigger, StepUpModal(*p))
		if err == nil {
			return
		}
		countLimited(b.metrics, MethodViewsOpen, err)
		b.metrics.SlackError(MethodViewsOpen)
		b.log.WarnContext(ctx, "step-up modal did not open; the Home says it", "user", user, "err", err)
	}
	notice := text
	if p != nil {
		notice = stepUpNotice(*p)
	}
	if err := b.PublishHome(ctx, user, notice); err != nil {
		b.log.WarnContext(ctx, "step-up notice not published", "user", user, "err", err)
	}
}

// stepUpNotice is a step-up message on one mrkdwn line, for the top of
// App Home when its modal could not open.
func stepUpNotice(p StepUpPrompt) string {
	m := cardMarks{}
	switch {
	case p.URL != "":
		return ":closed_lock_with_key: *" + stepUpHeadline + "* Nothing has been approved yet: <" + p.URL + "|Verify with your passkey> (for you alone, works once, expires " + m.Time(p.Expires) + ")."
	case p.RegisterURL != "":
		return ":closed_lock_with_key: *" + stepUpHeadline + "* You have none registered yet: <" + p.RegisterURL + "|Add a passkey> (expires " + m.Time(p.RegisterExpires) + "), then click Approve again."
	}
	return ":closed_lock_with_key: *" + stepUpHeadline + "* This slackbot has no page to verify passkeys on (its PUBLIC_URL is not set). Nothing was approved."
}

// stepUpPrompt makes the link for calls (BeginStepUp: authorized as the
// approval would be) and finds out whether the person has a credential
// the route accepts; without one, the prompt offers a registration link
// instead.
func (b *Bot) stepUpPrompt(ctx context.Context, t *clickTarget, d approval.Decision, callIDs []string) (*StepUpPrompt, error) {
	p := &StepUpPrompt{}
	for _, id := range callIDs {
		if call, ok := t.approval.Requests.Call(id); ok {
			p.Tools = append(p.Tools, b.cards.toolLabel(call.ToolName))
		}
	}
	if b.passkeys == nil || b.publicURL == "" {
		return p, nil
	}
	link, err := b.svc.BeginStepUp(ctx, t.approval, t.by, d, callIDs...)
	if err != nil {
		return nil, err
	}
	p.Methods = link.Methods
	p.URL, p.Expires = stepUpURL(b.publicURL, link.ID), link.Expires
	team := cmp.Or(link.Team, b.workspace.TeamID) // the Decider's: see target
	creds, err := b.passkeys.List(ctx, team, t.by.User)
	if err != nil {
		// The page says so if there is none: the link is no less good.
		b.log.WarnContext(ctx, "list passkeys for step-up", "user", t.by.User, "err", err)
		return p, nil
	}
	if hasMethod(creds, link.Methods) {
		return p, nil
	}
	reg, expires, err := b.passkeys.RegistrationLink(ctx, team, t.by.User)
	if err != nil {
		b.log.WarnContext(ctx, "registration link for step-up", "user", t.by.User, "err", err)
		return p, nil
	}
	p.URL, p.Expires = "", time.Time{}
	p.RegisterURL, p.RegisterExpires = reg, expires
	return p, nil
}

// hasMethod reports whether one of creds is of a method in methods (none
// named: passkeys only, routing's default).
func hasMethod(creds []PasskeyInfo, methods []string) bool {
	if len(methods) == 0 {
		methods = []string{routing.StepUpWebAuthn}
	}
	return slices.ContainsFunc(creds, func(p PasskeyInfo) bool { return slices.Contains(methods, p.method()) })
}

// ephemeralBlocks tells one user something in a channel, visible only to
// them, with blocks (text is their notification's fallback).
func (b *Bot) ephemeralBlocks(ctx context.Context, channel, user, text string, blocks []slack.Block) error {
	opts := []slack.MsgOption{slack.MsgOptionText(text, false)}
	if len(blocks) > 0 {
		opts = append(opts, slack.MsgOptionBlocks(blocks...))
	}
	err := b.retry.Do(ctx, func(ctx context.Context) error {
		_, err := b.slack.PostEphemeralContext(ctx, channel, user, opts...)
		countLimited(b.metrics, MethodPostEphemeral, err)
		return err
	})
	if err != nil {
		b.metrics.SlackError(MethodPostEphemeral)
	}
	return err
}
