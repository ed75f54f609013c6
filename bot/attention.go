package bot

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"

	"github.com/slack-go/slack"

	"github.com/slackapprove/slackbot/approval"
	"github.com/slackapprove/slackbot/runs"
)

// Notice turns what approval.Service.Attend found into the message that
// says it, posted once like a run's answer (Bot.PostAnswer with Key):
//
//   - a reminder is a reply in the card's thread that mentions the route's
//     approvers (users as <@U…>, usergroups as <!subteam^S…>);
//   - an escalation is a message in the escalation channel that mentions
//     the escalation approvers and links the card (chat.getPermalink), and
//     a reply in the card's thread that says where it went.
//
// Every id mentioned comes from the routing file, which admits only
// Slack ids; nothing the agent wrote can mention anyone.
func (cs *Cards) Notice(ctx context.Context, n *approval.Notice) ([]runs.Answer, error) {
	card := cs.card(n.Request, n.Call)
	m := cardMarks{}
	if n.Kind == approval.Remind {
		text := approval.ReminderLine(card, n.N, len(n.Route.Reminders(n.Request.CreatedAt, n.Request.ExpiresAt)),
			mentions(n.Route.Users, n.Route.Usergroups), m)
		return []runs.Answer{{Key: noticeKey(n, "thread"), Channel: n.Call.Message.Channel, ThreadTS: n.Call.Message.ID, Text: text}}, nil
	}
	e := n.Route.Escalate
	link, err := cs.permalink(ctx, n.Call.Message)
	if err != nil {
		return nil, err
	}
	text, thread := approval.EscalationLines(card, e.After, mentions(e.Users, e.Usergroups),
		"<"+link+"|"+approval.OpenRequest+">", "<#"+e.Channel+">", m)
	return []runs.Answer{
		{Key: noticeKey(n, "escalation"), Channel: e.Channel, Text: text},
		{Key: noticeKey(n, "thread"), Channel: n.Call.Message.Channel, ThreadTS: n.Call.Message.ID, Text: thread},
	}, nil
}

// permalink asks Slack for a link to the card.
func (cs *Cards) permalink(ctx context.Context, ref approval.MessageRef) (string, error) {
	var link string
	err := cs.retry.Do(ctx, func(ctx context.Context) error {
		var err error
		link, err = cs.slack.GetPermalinkContext(ctx, &slack.PermalinkParameters{Channel: ref.Channel, Ts: ref.ID})
		if err != nil {
			countAttempt(cs.metrics, MethodGetPermalink, err)
		}
		return err
	})
	if err != nil {
		return "", fmt.Errorf("link the card: %w", err)
	}
	return link, nil
}

// noticeKey names one message of one notice, for posting it once.
func noticeKey(n *approval.Notice, part string) string {
	sum := sha256.Sum256([]byte(strings.Join([]string{n.Kind, strconv.Itoa(n.N), part, n.Request.Token, n.Call.ID}, "\x00")))
	return "notice:" + hex.EncodeToString(sum[:16])
}

// mentions mentions users and usergroups the way Slack notifies them.
func mentions(users, usergroups []string) string {
	var m []string
	for _, u := range users {
		m = append(m, "<@"+u+">")
	}
	for _, g := range usergroups {
		m = append(m, "<!subteam^"+g+">")
	}
	if len(m) == 0 {
		return "approvers"
	}
	return strings.Join(m, " ")
}
