package bot

import (
	"context"
	"fmt"
	"strings"

	"github.com/slack-go/slack"

	"github.com/slackapprove/slackbot/runs"
)

// Bot is the chat of runs (runs.Chat): it posts runs' notes and answers
// in their Slack threads and reads threads for a fresh start.
var _ runs.Chat = (*Bot)(nil)

// PostInThread posts text as a reply in a thread (or to the channel when
// threadTS is empty), retrying as Slack asks.
func (b *Bot) PostInThread(ctx context.Context, channel, threadTS, text string) error {
	if len(text) > 39000 {
		text = truncate(text, 39000)
	}
	opts := []slack.MsgOption{slack.MsgOptionText(text, false)}
	if threadTS != "" {
		opts = append(opts, slack.MsgOptionTS(threadTS))
	}
	err := b.retry.Do(ctx, func(ctx context.Context) error {
		_, _, err := b.slack.PostMessageContext(ctx, channel, opts...)
		if err != nil {
			countAttempt(b.metrics, MethodPostMessage, err)
		}
		return err
	})
	if err != nil {
		return fmt.Errorf("post in thread: %w", err)
	}
	return nil
}

// EscapeText makes model or user text safe to post: Slack's control
// characters are escaped so it cannot mention anyone or link anywhere.
func EscapeText(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;").Replace(s)
}

// Escape implements runs.Chat: EscapeText.
func (b *Bot) Escape(s string) string { return EscapeText(s) }

// ToolLabel implements runs.Chat: how cards name the tool.
func (b *Bot) ToolLabel(tool string) string { return b.cards.toolLabel(tool) }
