package bot

import (
	"cmp"
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/slack-go/slack"

	"github.com/slackapprove/slackbot/agentrunner"
)

// How a fresh start reads a thread slackbot keeps no history for
// (runs.Chat's ThreadMessages).
const (
	// repliesPage is the page size of conversations.replies: 15 is the
	// most Slack serves a commercially distributed app outside the
	// Marketplace (which may also call it only once a minute).
	repliesPage = 15
	// maxRepliesPages bounds the conversations.replies pages a fresh start
	// reads, and repliesBudget the time it spends on them: the run does not
	// wait out a rate limit, it starts from what it has.
	maxRepliesPages = 7
	repliesBudget   = 10 * time.Second
	// maxThreadMessage bounds each message a fresh start reads, so a
	// thread costs the model a bounded prompt.
	maxThreadMessage = 4000
)

// ThreadMessages reads a thread as conversations.replies shows it, for a
// run that starts in a thread slackbot keeps no history for: its last
// limit messages before the message at exclude (which the run gets as its
// prompt), botUser's as the model's turns, everyone else's as user turns
// naming their author. Leading model turns are dropped: a conversation
// starts with a person. It reads at most maxRepliesPages pages within
// repliesBudget; when a later page fails it uses the pages it read.
func (b *Bot) ThreadMessages(ctx context.Context, channel, threadTS, exclude, botUser string, limit int) ([]agentrunner.Message, error) {
	ctx, cancel := context.WithTimeout(ctx, repliesBudget)
	defer cancel()
	var kept []slack.Message
	params := &slack.GetConversationRepliesParameters{ChannelID: channel, Timestamp: threadTS, Limit: repliesPage}
	for page := 0; page < maxRepliesPages; page++ {
		var msgs []slack.Message
		var more bool
		var next string
		err := b.retry.Do(ctx, func(ctx context.Context) error {
			var err error
			msgs, more, next, err = b.slack.GetConversationRepliesContext(ctx, params)
			if err != nil {
				countAttempt(b.metrics, MethodConversationsReplies, err)
			}
			return err
		})
		if err != nil && page == 0 {
			return nil, fmt.Errorf("read thread: %w", err)
		}
		if err != nil {
			b.log.WarnContext(ctx, "read thread: using the pages read so far", "err", err, "pages", page)
			break
		}
		for _, m := range msgs {
			said := m.SubType == "" || m.SubType == "bot_message" || m.SubType == "thread_broadcast"
			// Later messages wait for their own turn.
			if said && (exclude == "" || tsBefore(m.Timestamp, exclude)) {
				kept = append(kept, m)
			}
		}
		if len(kept) > limit {
			kept = kept[len(kept)-limit:]
		}
		if !more || next == "" {
			break
		}
		params.Cursor = next
	}
	var out []agentrunner.Message
	for _, m := range kept {
		text := truncate(strings.TrimSpace(mentionRE.ReplaceAllString(m.Text, "")), maxThreadMessage)
		if text == "" {
			continue
		}
		if m.User == botUser && botUser != "" {
			if len(out) == 0 {
				continue
			}
			out = append(out, agentrunner.Message{Kind: agentrunner.KindResponse, Parts: []agentrunner.Part{agentrunner.Text(text)}})
			continue
		}
		who := m.User
		if who == "" {
			who = cmp.Or(m.Username, m.BotID, "someone")
		}
		out = append(out, agentrunner.Message{Kind: agentrunner.KindRequest,
			Parts: []agentrunner.Part{agentrunner.UserPrompt("<@" + who + "> wrote: " + text)}})
	}
	return out, nil
}

// tsBefore reports whether Slack timestamp a ("1700000000.000100") is
// earlier than b.
func tsBefore(a, b string) bool {
	as, af, _ := strings.Cut(a, ".")
	bs, bf, _ := strings.Cut(b, ".")
	if len(as) != len(bs) {
		return len(as) < len(bs)
	}
	if as != bs {
		return as < bs
	}
	return af < bf
}
