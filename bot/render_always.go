package bot

import (
	"github.com/slack-go/slack"

	"github.com/slackapprove/slackbot/approval"
)

// maxAlwaysAllowLine bounds the line that shows a coding agent's
// always-allow rule whole (its button shows what fits in 75 characters).
const maxAlwaysAllowLine = 600

// alwaysAllowBlock says, above the buttons, what "Approve and always
// allow" gives the agent: its rule in its own words, and where the agent
// keeps it.
func alwaysAllowBlock(c Card) slack.Block {
	text := approval.AlwaysAllowWords(c.AlwaysAllow, c.AlwaysAllowWhere)
	return slack.NewContextBlock("", plain(fitPlain(text, maxAlwaysAllowLine), false))
}
