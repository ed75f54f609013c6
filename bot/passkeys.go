package bot

import (
	"context"
	"fmt"
	"net/url"
	"time"

	"github.com/slack-go/slack"

	"github.com/slackapprove/slackbot/routing"
)

// Passkeys is what the Bot needs of the step-up pages (package stepup,
// whose *Handler implements it): a person's registered passkeys, removing
// one, and a single-use link that registers another. bot never imports
// stepup (docs/ARCHITECTURE.md, "Import rules"): the interface is
// defined here, where it is consumed, and cmd/slackbot passes the
// Handler in.
type Passkeys interface {
	// RegistrationLink returns the URL of a single-use page, bound to
	// team and user, that registers a passkey, and when it expires.
	RegistrationLink(ctx context.Context, team, user string) (string, time.Time, error)
	// List returns user's passkeys (and a TOTP authenticator, Method
	// "totp", when they enrolled one).
	List(ctx context.Context, team, user string) ([]PasskeyInfo, error)
	// Remove removes one of user's passkeys: it is audited, and the
	// person is told in Slack.
	Remove(ctx context.Context, team, user, id string) error
}

// PasskeyInfo is one of a person's step-up credentials as App Home lists
// it; stepup.PasskeyInfo has the same fields.
type PasskeyInfo struct {
	ID, Name string
	// Method is routing.StepUpWebAuthn (a passkey; "" means it too) or
	// routing.StepUpTOTP.
	Method          string
	Added, LastUsed time.Time
}

// method is p's step-up method, "webauthn" when unset.
func (p PasskeyInfo) method() string {
	if p.Method == "" {
		return routing.StepUpWebAuthn
	}
	return p.Method
}

// stepUpURL is the page of step-up link id on publicURL's host
// (PUBLIC_URL/step-up/<id>); "" when there is no public URL, which
// leaves step-up unavailable.
func stepUpURL(publicURL, id string) string {
	if publicURL == "" || id == "" {
		return ""
	}
	u, err := url.JoinPath(publicURL, "step-up", url.PathEscape(id))
	if err != nil {
		return ""
	}
	return u
}

// Notify sends user a direct message (chat.postMessage to the user id,
// which Slack delivers in the app's DM with them): package stepup tells
// people this way that a passkey was added to or removed from their
// account, so that one they did not add is noticed. text is plain:
// anything in it that Slack would read as a mention or a link is
// escaped, since it may quote a name the person typed. team is the
// workspace the person belongs to; the bot token reaches only its own,
// so it is not used to route the message. A failure is logged, not
// returned: the change it reports has happened either way.
func (cs *Cards) Notify(ctx context.Context, team, user, text string) {
	if user == "" || text == "" {
		return
	}
	err := cs.retry.Do(ctx, func(ctx context.Context) error {
		_, _, err := cs.slack.PostMessageContext(ctx, user, slack.MsgOptionText(EscapeText(text), false))
		countLimited(cs.metrics, MethodPostMessage, err)
		return err
	})
	if err != nil {
		cs.metrics.SlackError(MethodPostMessage)
		cs.log.WarnContext(ctx, "direct message not sent", "user", user, "team", team, "err", err)
	}
}

// dm sends user a direct message with blocks (text is the notification's
// fallback).
func (b *Bot) dm(ctx context.Context, user, text string, blocks []slack.Block) error {
	err := b.retry.Do(ctx, func(ctx context.Context) error {
		_, _, err := b.slack.PostMessageContext(ctx, user, slack.MsgOptionText(text, false), slack.MsgOptionBlocks(blocks...))
		countLimited(b.metrics, MethodPostMessage, err)
		return err
	})
	if err != nil {
		b.metrics.SlackError(MethodPostMessage)
		return fmt.Errorf("direct message to %s: %w", user, err)
	}
	return nil
}
