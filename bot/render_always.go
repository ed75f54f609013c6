package bot

import (
	"github.com/slack-go/slack"

	"github.com/slackapprove/slackbot/approval"
)

// alwaysAllowText is what "Approve and always allow" gives a coding
// agent, as the card shows it above the buttons: its rule whole, in its
// own words, and where the agent keeps it (the button shows what of the
// rule fits in 75 characters).
func alwaysAllowText(c Card) string {
	return fitPlain(approval.AlwaysAllowWords(c.AlwaysAllow, c.AlwaysAllowWhere), maxSectionText)
}

// alwaysAllowShown reports whether c's always-allow rule can be shown
// whole in one section; a card offers only a rule it shows whole.
func alwaysAllowShown(c Card) bool {
	words := approval.AlwaysAllowWords(c.AlwaysAllow, c.AlwaysAllowWhere)
	return textLen(fitPlain(words, 4*len(words)+16)) <= maxSectionText
}

func alwaysAllowBlock(c Card) slack.Block {
	return slack.NewSectionBlock(plain(alwaysAllowText(c), false), nil, nil)
}
