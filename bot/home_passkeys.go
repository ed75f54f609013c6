package bot

import (
	"context"
	"fmt"
	"time"

	"github.com/slack-go/slack"

	"github.com/slackapprove/slackbot/approval"
)

// App Home's "Your passkeys": the list, Remove and Add a passkey. A
// person manages only their own: Slack's signed payload names who
// clicked, and every call names that user, in the installation's
// workspace (the team step-up links are bound to; see target).

// passkeyListTimeout bounds reading a person's passkeys for their Home,
// so that a slow store shows the rest of it.
const passkeyListTimeout = 5 * time.Second

// homePasskeys is "Your passkeys" of user's Home; nil where step-up is
// not set up.
func (b *Bot) homePasskeys(ctx context.Context, user string) *HomePasskeys {
	if b.passkeys == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, passkeyListTimeout)
	defer cancel()
	list, err := b.passkeys.List(ctx, b.workspace.TeamID, user)
	if err != nil {
		b.log.WarnContext(ctx, "list passkeys for App Home", "user", user, "err", err)
		return &HomePasskeys{Failed: true}
	}
	return &HomePasskeys{List: list}
}

// addPasskey answers "Add a passkey": a single-use registration link,
// made after the acknowledgement, shown in a modal while the click's
// trigger lasts (Slack allows three seconds), else sent as a direct
// message. App Home has no ephemeral messages, and the Home itself is no
// place for a link that must not outlive its use.
func (b *Bot) addPasskey(ctx context.Context, cb *slack.InteractionCallback) {
	user, trigger := cb.User.ID, cb.TriggerID
	if !b.passkeyClick(ctx, cb) {
		return
	}
	b.goAsync(ctx, "add a passkey", func(ctx context.Context) error {
		ctx, cancel := context.WithTimeout(ctx, stepUpTimeout)
		defer cancel()
		link, expires, err := b.passkeys.RegistrationLink(ctx, b.workspace.TeamID, user)
		if err != nil {
			_ = b.PublishHome(ctx, user, "slackbot could not make a registration link just now. Nothing changed; try again in a moment.")
			return fmt.Errorf("registration link: %w", err)
		}
		if trigger != "" {
			_, err := b.slack.OpenViewContext(ctx, trigger, RegisterModal(link, expires))
			if err == nil {
				return nil
			}
			countLimited(b.metrics, MethodViewsOpen, err)
			b.metrics.SlackError(MethodViewsOpen)
			b.log.WarnContext(ctx, "registration modal did not open; sending it as a direct message", "user", user, "err", err)
		}
		if err := b.dm(ctx, user, "Add a passkey: "+link, RegisterBlocks(link, expires)); err != nil {
			_ = b.PublishHome(ctx, user, "slackbot could not show you a registration link just now. Nothing changed; try again in a moment.")
			return err
		}
		return b.PublishHome(ctx, user, "slackbot sent you the registration link in a direct message.")
	})
}

// passkeyClick reports whether a Home passkey button's click may go on:
// it comes from this workspace, and this slackbot has passkey pages.
// Otherwise the clicker's Home says why.
func (b *Bot) passkeyClick(ctx context.Context, cb *slack.InteractionCallback) bool {
	switch {
	case !b.workspace.accepts(cb.Team.ID, cb.Enterprise.ID):
		b.publishHomeLater(ctx, cb.User.ID, "This button comes from another Slack workspace.")
	case b.passkeys == nil:
		b.publishHomeLater(ctx, cb.User.ID, passkeysUnavailable)
	default:
		return true
	}
	return false
}

// passkeysUnavailable is what a passkey button says where step-up is not
// set up (no Passkeys: an old Home still showing the section).
const passkeysUnavailable = "This slackbot has no passkey pages (its PUBLIC_URL is not set). Nothing changed."

// removePasskey removes one of the clicker's passkeys (after Slack's
// confirm dialog), after the acknowledgement: stepup audits it and tells
// the person, which takes a Slack call of its own. The Home then says
// what happened, without the passkey.
func (b *Bot) removePasskey(ctx context.Context, cb *slack.InteractionCallback, id string) {
	user := cb.User.ID
	if !b.passkeyClick(ctx, cb) {
		return
	}
	b.goAsync(ctx, "remove a passkey", func(ctx context.Context) error {
		ctx, cancel := context.WithTimeout(ctx, stepUpTimeout)
		defer cancel()
		err := b.passkeys.Remove(ctx, b.workspace.TeamID, user, id)
		notice := ":wastebasket: Passkey removed. It no longer verifies your approvals."
		switch {
		case approval.ErrorCode(err) == approval.ENOTFOUND:
			notice, err = "That passkey was already removed.", nil
		case err != nil:
			notice = "slackbot could not remove the passkey just now. It still works; try again in a moment."
		}
		if perr := b.PublishHome(ctx, user, notice); perr != nil {
			b.log.WarnContext(ctx, "publish home after removing a passkey", "user", user, "err", perr)
		}
		if err != nil {
			return fmt.Errorf("remove passkey: %w", err)
		}
		return nil
	})
}
