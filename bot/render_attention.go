package bot

import (
	"strconv"
	"strings"
	"time"

	"github.com/slack-go/slack"

	"github.com/slackapprove/slackbot/approval"
)

// What a pending card says and asks beyond its buttons (issue 14): why
// the call needs a person, the confirm dialog of Approve, and the action
// ids of the grant buttons.

// whyLine says why the call needs a person: the rule that deferred it,
// and what the route's policy made of it (approval.WhyWords), within max
// characters.
func whyLine(c Card, max int) string {
	why, policy := approval.WhyWords(c, cardMarks{})
	switch {
	case why == "" && policy == "":
		return ""
	case why == "":
		return fit(approval.WhyPrefix+policy+".", max, "…", func(r rune) string { return string(r) })
	case policy == "":
		return approval.WhyPrefix + why + "."
	}
	return fitJoin([]string{approval.WhyPrefix + why, policy + "."}, " · ", max)
}

// inlineCode is s as an inline code span of at most max characters.
func inlineCode(s string, max int) string {
	return "`" + fit(strings.ReplaceAll(s, "`", "ˋ"), max, "…", escapeRune) + "`"
}

// inlineCodeEnds is inlineCode for text that may hide a command's end
// (see fitEnds).
func inlineCodeEnds(s string, max int) string {
	return "`" + fitEnds(s, max, linePiece(func(r rune) string {
		if r == '`' {
			return "ˋ"
		}
		return escapeRune(r)
	})) + "`"
}

// Slack's limits on a confirm dialog (composition objects: confirmation
// dialog object).
const (
	maxConfirmTitle = 100
	maxConfirmText  = 300
	// maxConfirmButton is Slack's limit on a confirm dialog's buttons.
	maxConfirmButton = 30
)

// confirmDialog is the "Are you sure?" of an Approve button
// (approval.ConfirmWords): the tool in the title, the confirmation text
// (the tool and its arguments on one line) as the body, and "Approve" /
// "Cancel".
func confirmDialog(c Card) *slack.ConfirmationBlockObject {
	title, yes, no := approval.ConfirmWords(oneLine(c.ToolLabel))
	title = fitPlain(title, maxConfirmTitle)
	text := fitEnds(c.Confirmation, maxConfirmText, linePiece(escapeRune))
	d := slack.NewConfirmationBlockObject(plain(title, false), plain(text, false), plain(yes, false), plain(no, false))
	d.Style = slack.StylePrimary
	return d
}

// batchConfirmDialog asks "are you sure?" before "Approve all N" or
// "Deny all N", counting and naming the calls it decides
// (approval.BatchConfirmWords), within Slack's limits.
func batchConfirmDialog(ch approval.Choice) *slack.ConfirmationBlockObject {
	title, text, yes, no := approval.BatchConfirmWords(ch, confirmMarks{})
	d := slack.NewConfirmationBlockObject(plain(fitPlain(title, maxConfirmTitle), false),
		plain(fitPlain(text, maxConfirmText), false), plain(fitPlain(yes, maxConfirmButton), false), plain(no, false))
	d.Style = slack.StylePrimary
	if ch.Kind == approval.ChooseDenyAll {
		d.Style = slack.StyleDanger
	}
	return d
}

// confirmMarks write a confirm dialog's plain text: names as they are, on
// one line (plain text formats and mentions nothing).
type confirmMarks struct{ cardMarks }

// Name is s on one line.
func (confirmMarks) Name(s string) string { return oneLine(s) }

// GrantActionID is the action id of the button that approves and grants
// for d: ActionIDApproveFor and d in whole minutes.
func GrantActionID(d time.Duration) string {
	return ActionIDApproveFor + strconv.FormatInt(int64(d/time.Minute), 10) + "m"
}

// grantOf returns the grant length an action id asks for; ok is false for
// an action id that is not a grant button's.
func grantOf(actionID string) (time.Duration, bool) {
	m, ok := strings.CutPrefix(actionID, ActionIDApproveFor)
	if !ok {
		return 0, false
	}
	n, err := strconv.ParseInt(strings.TrimSuffix(m, "m"), 10, 32)
	d := time.Duration(n) * time.Minute
	if err != nil || n <= 0 || GrantActionID(d) != actionID {
		return 0, false // only the spelling a card's button has
	}
	return d, true
}
