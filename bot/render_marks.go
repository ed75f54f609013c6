package bot

import (
	"time"

	"github.com/slackapprove/slackbot/approval"
)

// cardMarks write approval's words in a card's mrkdwn: a user, usergroup
// or channel id as Slack's mention of it, anything else as an inline code
// span (literal), dates in each reader's time zone.
type cardMarks struct{}

var _ approval.Marks = cardMarks{}

// Strong is s in bold.
func (cardMarks) Strong(s string) string { return "*" + s + "*" }

// Person mentions a user id; anything else is shown as a literal.
func (cardMarks) Person(who string) string {
	if isUserID(who) {
		return "<@" + who + ">"
	}
	return literal(who)
}

// Group mentions a usergroup id; anything else is shown as a literal.
func (cardMarks) Group(id string) string {
	if isUsergroupID(id) {
		return "<!subteam^" + id + ">"
	}
	return literal(id)
}

// Place links a channel id; anything else is shown as a literal.
func (cardMarks) Place(id string) string {
	if isChannelID(id) {
		return "<#" + id + ">"
	}
	return literal(id)
}

// Name is s as a literal.
func (cardMarks) Name(s string) string { return literal(s) }

// Code is s as an inline code span on one line.
func (cardMarks) Code(s string, max int) string { return inlineCode(oneLine(s), max) }

// Time is t as Slack's date, in each reader's time zone.
func (cardMarks) Time(t time.Time) string { return slackDate(t) }
