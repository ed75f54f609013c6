package bot

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"

	"github.com/slack-go/slack"

	"github.com/slackapprove/slackbot/runs"
)

// answerEventType is the metadata event type of a run's answer.
const answerEventType = "slackbot_answer"

// answerMarker identifies an answer in message metadata: a digest of its
// key.
func answerMarker(key string) string {
	sum := sha256.Sum256([]byte("answer\x00" + key))
	return hex.EncodeToString(sum[:12])
}

// PostAnswer posts a's text in its thread, with a marker in the message
// metadata, and returns the message's ts. With look set (an earlier
// attempt, perhaps by a process that died, may have posted it), or after
// an attempt that failed ambiguously, it first looks for the marker in
// the thread and returns the ts of the answer it finds instead of
// posting it again. When Slack refuses that look-up for good
// (lookupRefused) it posts anyway and counts it (Metrics.AnswerUnchecked):
// a rare duplicate beats a lost answer. A transient failure of the
// look-up is retried like any Slack call.
func (b *Bot) PostAnswer(ctx context.Context, a runs.Answer, look bool) (string, error) {
	text := a.Text
	if len(text) > 39000 {
		text = truncate(text, 39000)
	}
	marker := answerMarker(a.Key)
	opts := []slack.MsgOption{slack.MsgOptionText(text, false), slack.MsgOptionMetadata(slack.SlackMetadata{
		EventType: answerEventType, EventPayload: map[string]any{"answer": marker},
	})}
	if a.ThreadTS != "" {
		opts = append(opts, slack.MsgOptionTS(a.ThreadTS))
	}
	var ts, unchecked string
	err := b.retry.Do(ctx, func(ctx context.Context) error {
		if look && unchecked == "" {
			found, err := b.findAnswer(ctx, a, marker)
			if code, refused := lookupRefused(err); refused {
				// Slack will not show the thread (a scope or a membership
				// the app lacks, a method it does not offer), and will not
				// later: posting may repeat the answer, which beats never
				// giving it.
				b.log.WarnContext(ctx, "Slack refused the look-up for an earlier post of an answer; posting it anyway", "err", err, "channel", a.Channel)
				unchecked = code
			} else if err != nil {
				return err
			}
			if found != "" {
				ts = found
				return nil
			}
		}
		_, got, err := b.slack.PostMessageContext(ctx, a.Channel, opts...)
		if err != nil {
			countAttempt(b.metrics, MethodPostMessage, err)
			var rl *slack.RateLimitedError
			if !errors.As(err, &rl) && retryable(err) {
				look = true
			}
			return err
		}
		ts = got
		return nil
	})
	if err != nil {
		return "", fmt.Errorf("post answer: %w", err)
	}
	if unchecked != "" {
		b.metrics.AnswerUnchecked(unchecked)
	}
	return ts, nil
}

// answerPages bounds the pages of a thread findAnswer reads.
const answerPages = 5

// findAnswer looks for the answer with marker in a's thread (or, for an
// answer outside a thread, among the channel's latest messages).
func (b *Bot) findAnswer(ctx context.Context, a runs.Answer, marker string) (string, error) {
	match := func(msgs []slack.Message) string {
		for _, m := range msgs {
			if m.Metadata.EventType == answerEventType && m.Metadata.EventPayload["answer"] == marker {
				return m.Timestamp
			}
		}
		return ""
	}
	if a.ThreadTS == "" {
		resp, err := b.slack.GetConversationHistoryContext(ctx, &slack.GetConversationHistoryParameters{
			ChannelID: a.Channel, Limit: 200, IncludeAllMetadata: true,
		})
		if err != nil {
			countAttempt(b.metrics, MethodConversationsHistory, err)
			return "", fmt.Errorf("look for a posted answer: %w", err)
		}
		return match(resp.Messages), nil
	}
	cursor := ""
	for range answerPages {
		msgs, more, next, err := b.slack.GetConversationRepliesContext(ctx, &slack.GetConversationRepliesParameters{
			ChannelID: a.Channel, Timestamp: a.ThreadTS, Cursor: cursor, Limit: 200, IncludeAllMetadata: true,
		})
		if err != nil {
			countAttempt(b.metrics, MethodConversationsReplies, err)
			return "", fmt.Errorf("look for a posted answer: %w", err)
		}
		if ts := match(msgs); ts != "" {
			return ts, nil
		}
		if !more || next == "" {
			break
		}
		cursor = next
	}
	return "", nil
}
