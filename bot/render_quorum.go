package bot

import "github.com/slackapprove/slackbot/approval"

// quorumParts count the approvals of a call that needs several, per set of
// arguments (approval.QuorumWords).
func quorumParts(c Card) []string { return approval.QuorumWords(c, cardMarks{}) }
