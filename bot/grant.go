package bot

import (
	"context"
	"fmt"

	"github.com/slack-go/slack"

	"github.com/slackapprove/slackbot/approval"
)

var _ approval.GrantNotifier = (*Cards)(nil)

// Granted implements approval.GrantNotifier: where the call was asked (the
// run's thread), it says that a grant approved it without a card, whose,
// and until when. A call from no Slack thread (the HTTP API) is told
// nothing here: its client gets the decision, answered_by grant:<approver>.
func (cs *Cards) Granted(ctx context.Context, r *approval.Request, c *approval.Call, g *approval.Grant) error {
	if r.Origin.Channel == "" {
		return nil
	}
	card := cs.card(r, c)
	text := approval.GrantedLine(card, g, cardMarks{})
	opts := []slack.MsgOption{slack.MsgOptionText(text, false)}
	if r.Origin.ThreadTS != "" {
		opts = append(opts, slack.MsgOptionTS(r.Origin.ThreadTS))
	}
	err := cs.retry.Do(ctx, func(ctx context.Context) error {
		_, _, err := cs.slack.PostMessageContext(ctx, r.Origin.Channel, opts...)
		if err != nil {
			countAttempt(cs.metrics, MethodPostMessage, err)
		}
		return err
	})
	if err != nil {
		return fmt.Errorf("tell the thread about a grant: %w", err)
	}
	return nil
}
