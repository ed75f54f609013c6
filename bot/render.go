package bot

import (
	"bytes"
	"strings"

	"github.com/slack-go/slack"

	"github.com/slackapprove/slackbot/agentrunner"
	"github.com/slackapprove/slackbot/approval"
)

// Card is everything one approval message shows: the neutral view of one
// call (approval.CallView), which the functions of this file lay out in
// Block Kit, the same way every time; nothing is read from a clock.
type Card = approval.CallView

// The values of approval.Outcome.Status.
const (
	OutcomeRan    = approval.OutcomeRan
	OutcomeFailed = approval.OutcomeFailed
)

// The action_id of each button ApprovalBlocks renders. Every button's value
// is EncodeAction(card.Token, card.ToolCallID).
const (
	ActionIDApprove    = "approve"     // approve the call
	ActionIDDeny       = "deny"        // deny it with the default message
	ActionIDDenyReason = "deny_reason" // open DenyReasonModal
	ActionIDEdit       = "edit"        // open EditArgsModal
	ActionIDAnswer     = "answer"      // open AnswerModal (questions)
	ActionIDViewArgs   = "view_args"   // open ArgsModal (truncated arguments)
	// ActionIDApproveFor is the prefix of the grant buttons' action ids
	// ("approve_for_480m": approve, and grant for 8 h); see GrantActionID.
	ActionIDApproveFor = "approve_for_"
	// ActionIDApproveAlways approves the call and gives the coding agent
	// the always-allow rule it offered (the card shows which).
	ActionIDApproveAlways = "approve_always"
	// ActionIDApproveAll and ActionIDDenyAll decide every pending approval
	// of the card's request (approval.Service.DecideAll), each confirmed
	// first in a dialog that counts and names them.
	ActionIDApproveAll = "approve_all"
	ActionIDDenyAll    = "deny_all"
)

// The block_id of the approval message's blocks that carry buttons, before
// the card's version: Slack asks for new block ids when a message is
// updated, so each is followed by "." and a version that changes whenever
// the card does (see CardBlockID).
const (
	BlockIDActions = "approval_actions" // the actions block
	BlockIDArgs    = "approval_args"    // the arguments section (View all arguments)
)

// The block_id of the other named blocks, before the version.
const (
	blockIDRequester = "approval_requester"
	blockIDStatus    = "approval_status"
	blockIDNote      = "approval_note"
	blockIDWhy       = "approval_why"
)

// Slack's limits, in characters. Lengths are measured in UTF-16 code units,
// which is never less than the number of characters Slack counts.
const (
	maxSectionText   = 3000
	maxHeaderText    = 150
	maxButtonText    = 75
	maxFallbackText  = 300 // our own limit: notifications show little more
	maxMessageBlocks = 50
	maxContextItems  = 10
	maxIdentifier    = 80 // route, client and tool names inside mrkdwn lines
	maxSummary       = 500
)

// ApprovalBlocks renders an approval message for c. A pending card shows
// the tool, the confirmation text, who asked and where, the arguments as
// pretty JSON (truncated to Slack's limits, with a View all arguments
// button), the expiry, the quorum and the buttons. Once decided, expired or
// cancelled, the same function renders the final message: no buttons, the
// state in the header and in the first line, who decided and when, and the
// tool's outcome when known.
//
// Everything the model, the requester or an approver wrote is escaped: the
// only mentions in the result are the card's requester, decider and voters
// (Slack user ids), its source channel and its usergroups.
func ApprovalBlocks(c Card) []slack.Block {
	return newCardLayout(normalize(c)).fit()
}

// blocks renders the card with l's caps and argument preview limit.
func (l *cardLayout) blocks() []slack.Block {
	c := l.c
	blocks := []slack.Block{
		slack.NewHeaderBlock(plain(headerText(c), true)),
	}
	if c.State != approval.CallPending {
		blocks = append(blocks, l.outcomeBlocks()...)
	}
	blocks = append(blocks,
		slack.NewSectionBlock(plain(fitEnds(c.Confirmation, l.caps.confirmation, plainPiece), false), nil, nil),
		slack.NewContextBlock(l.blockID(blockIDRequester), mrkdwn(requesterLine(c))),
	)
	pending := c.State == approval.CallPending
	if line := whyLine(c, l.caps.status); pending && line != "" {
		blocks = append(blocks, slack.NewContextBlock(l.blockID(blockIDWhy), mrkdwn(line)))
	}
	if strings.TrimSpace(c.Context) != "" {
		blocks = append(blocks, slack.NewSectionBlock(plain(fitPlain(approval.ContextLabel+c.Context, l.caps.context), false), nil, nil))
	}
	switch {
	case l.edited() && c.Change != nil && c.EditedChange != nil:
		// What was asked and what runs, each as its change; the hook's
		// diff was against the content asked for, so neither shows it.
		blocks = append(blocks, l.changeBlocks(c.Change, l.change, preview{}, approval.ArgsRequestedLabel, "", false)...)
		blocks = append(blocks, l.changeBlocks(c.EditedChange, l.editedChange, preview{}, approval.ArgsApprovedLabel, "", false)...)
	case l.edited():
		blocks = append(blocks, l.argsBlocks(cardMarks{}.Strong(approval.ArgsRequestedLabel), l.args, "", false)...)
		blocks = append(blocks, l.argsBlocks(cardMarks{}.Strong(approval.ArgsApprovedLabel), l.override, "", false)...)
	case c.Change != nil:
		blocks = append(blocks, l.changeBlocks(c.Change, l.change, l.local, "", l.blockID(BlockIDArgs), pending)...)
	default:
		blocks = append(blocks, l.argsBlocks(cardMarks{}.Strong(approval.ArgsLabel), l.args, l.blockID(BlockIDArgs), pending)...)
	}
	if line := statusLine(c, l.caps.status); line != "" {
		blocks = append(blocks, slack.NewContextBlock(l.blockID(blockIDStatus), mrkdwn(line)))
	}
	if !pending {
		return blocks
	}
	if line := mentionsLine(c, l.caps.mentions); line != "" {
		blocks = append(blocks, slack.NewSectionBlock(mrkdwn(line), nil, nil))
	}
	if c.Kind == agentrunner.KindExternal {
		return append(blocks, slack.NewSectionBlock(plain(approval.ExternalWaitText, true), nil, nil))
	}
	if c.AlwaysAllow != "" {
		blocks = append(blocks, alwaysAllowBlock(c))
	}
	return append(blocks, actionsBlock(c, l.version))
}

// ApprovalText returns the message's fallback text (chat.postMessage's
// text), which Slack shows in notifications: the state, the tool and, while
// pending, the confirmation text or question. It mentions no one, is
// escaped, and is at most 300 characters.
func ApprovalText(c Card) string {
	c = normalize(c)
	emoji, word := stateLabel(c)
	s := emoji + " " + word + ": " + oneLine(c.ToolLabel)
	if c.State != approval.CallPending || c.Kind == agentrunner.KindExternal {
		return fit(s, maxFallbackText, "…", neutralRune)
	}
	s = fit(s+" — ", maxFallbackText-minFallbackConfirmation, "… — ", neutralRune)
	return s + fitEnds(summary(c), maxFallbackText-textLen(s), linePiece(neutralRune))
}

// minFallbackConfirmation is the room the fallback text keeps for the
// confirmation, however long the tool's name.
const minFallbackConfirmation = 100

// normalize fills in the defaults a caller may leave out.
func normalize(c Card) Card {
	if c.Kind == "" {
		c.Kind = agentrunner.KindApproval
	}
	if c.State == "" {
		c.State = approval.CallPending
	}
	if c.RequiredApprovals < 1 {
		c.RequiredApprovals = 1
	}
	if strings.TrimSpace(c.ToolName) == "" {
		c.ToolName = "(unnamed tool)"
	}
	if strings.TrimSpace(c.ToolLabel) == "" {
		c.ToolLabel = c.ToolName
	}
	if strings.TrimSpace(c.Confirmation) == "" {
		c.Confirmation = unsetConfirmation(c)
	}
	if c.AlwaysAllow != "" && !alwaysAllowShown(c) {
		c.AlwaysAllow = "" // never offer a rule the card cannot show whole
	}
	return c
}

// stateLabel is the emoji and word that say where the card stands, first
// thing in the header and the notification (approval.StateWords; an
// unknown state is shown after its words).
func stateLabel(c Card) (emoji, word string) {
	emoji, word, known := approval.StateWords(c.Kind, c.State)
	if !known {
		word += " " + fit(oneLine(string(c.State)), maxIdentifier, "…", func(r rune) string { return string(r) })
	}
	return emoji, word
}

func headerText(c Card) string {
	emoji, word := stateLabel(c)
	return fit(emoji+" "+word+": "+oneLine(c.ToolLabel), maxHeaderText, "…", escapeRune)
}

// outcomeBlocks say how the card ended: who decided and when, the reason,
// the answer, the tool's outcome.
func (l *cardLayout) outcomeBlocks() []slack.Block {
	c := l.c
	blocks := []slack.Block{slack.NewSectionBlock(mrkdwn(outcomeLine(c)), nil, nil)}
	if strings.TrimSpace(c.Reason) != "" {
		label := approval.ReasonLabel(c.State)
		blocks = append(blocks, slack.NewSectionBlock(plain(label+"“"+fitPlain(c.Reason, l.caps.reason-textLen(label)-2)+"”", false), nil, nil))
	}
	if len(bytes.TrimSpace(c.Answer)) > 0 {
		blocks = append(blocks, l.answerBlocks(approval.AnswerLabel(c.Kind))...)
	}
	if c.Outcome != nil {
		blocks = append(blocks, slack.NewSectionBlock(plain(outcomeText(*c.Outcome, l.caps.summary), false), nil, nil))
	}
	return blocks
}

// outcomeLine says how the card ended and who decided when (and how a
// stepped-up approval was verified).
func outcomeLine(c Card) string { return approval.EndingLine(c, cardMarks{}) }

// answerBlocks show an answer: a JSON string as text, anything else as
// pretty JSON.
func (l *cardLayout) answerBlocks(label string) []slack.Block {
	if l.answerIsText {
		return []slack.Block{slack.NewSectionBlock(plain(fitPlain(label+": "+l.answerText, l.caps.answer), false), nil, nil)}
	}
	code := codeSection("*"+label+"*", l.answer, 0, l.caps.answer)
	blocks := []slack.Block{slack.NewSectionBlock(mrkdwn(code.text), nil, nil)}
	if code.truncated() {
		blocks = append(blocks, slack.NewContextBlock("", mrkdwn(code.note(false))))
	}
	return blocks
}

func outcomeText(o approval.Outcome, maxSummary int) string {
	head, known := approval.OutcomeWords(o.Status)
	if !known {
		head += fit(oneLine(o.Status), maxIdentifier, "…", escapeRune)
	}
	if strings.TrimSpace(o.Summary) == "" {
		return head + "."
	}
	return head + ": " + fitPlain(o.Summary, maxSummary)
}

// requesterLine says who asked, where, when and through which route
// (approval.RequesterLine).
func requesterLine(c Card) string { return approval.RequesterLine(c, cardMarks{}) }

// statusLine is the expiry and the quorum while pending, and who approved
// when a quorum of several was reached.
func statusLine(c Card, max int) string {
	var parts []string
	if c.State == approval.CallPending && !c.ExpiresAt.IsZero() {
		parts = append(parts, approval.ExpiresWords(c, cardMarks{}))
	}
	if c.RequiredApprovals > 1 && (c.State == approval.CallPending || c.State == approval.CallApproved) {
		parts = append(parts, approval.QuorumWords(c, cardMarks{})...)
	}
	if c.State == approval.CallPending && len(c.EscalatedTo) > 0 {
		parts = append(parts, approval.EscalatedWords(fitJoin(escalationMentions(c.EscalatedTo), " ", max/2)))
	}
	return fitJoin(parts, " · ", max)
}

// escalationMentions mentions the ids a call escalated to; anything that
// is not a user or usergroup id is shown, not mentioned.
func escalationMentions(ids []string) []string {
	var out []string
	for _, id := range ids {
		switch {
		case isUserID(id):
			out = append(out, "<@"+id+">")
		case isUsergroupID(id):
			out = append(out, "<!subteam^"+id+">")
		default:
			out = append(out, literal(id))
		}
	}
	return out
}

// mentionsLine notifies the card's usergroups. Ids that are not usergroup
// ids are shown, not mentioned.
func mentionsLine(c Card, max int) string {
	if len(c.Mentions) == 0 {
		return ""
	}
	label := approval.MentionsLabel(c.Kind)
	seen := map[string]bool{}
	var groups []string
	for _, m := range c.Mentions {
		if seen[m] {
			continue
		}
		seen[m] = true
		groups = append(groups, cardMarks{}.Group(m))
	}
	return label + fitJoin(groups, " ", max-textLen(label))
}

// fitJoin joins parts with sep, leaving out whole parts (never half a
// mention) that would make the result longer than max.
func fitJoin(parts []string, sep string, max int) string {
	var b strings.Builder
	n := 0
	for i, p := range parts {
		add := textLen(p)
		if i > 0 {
			add += textLen(sep)
		}
		if n+add > max-textLen(sep+"…") {
			if i > 0 {
				b.WriteString(sep)
			}
			b.WriteString("…")
			break
		}
		if i > 0 {
			b.WriteString(sep)
		}
		b.WriteString(p)
		n += add
	}
	return b.String()
}

func actionsBlock(c Card, version string) *slack.ActionBlock {
	return slack.NewActionBlock(versionedID(BlockIDActions, version), choiceButtons(c, c.Choices())...)
}

// choiceButtons are the buttons of choices on c's call: each with its
// action id, c's value and its words, and the card's confirm dialog where
// the choice asks to be confirmed.
func choiceButtons(c Card, choices []approval.Choice) []slack.BlockElement {
	value := EncodeAction(c.Token, c.ToolCallID)
	var elems []slack.BlockElement
	for _, ch := range choices {
		b := slack.NewButtonBlockElement(choiceActionID(ch), value, plain(fitPlain(approval.ChoiceLabel(ch), maxButtonText), true))
		switch ch.Kind {
		case approval.ChooseApprove, approval.ChooseAnswer:
			b = b.WithStyle(slack.StylePrimary)
		case approval.ChooseDeny:
			b = b.WithStyle(slack.StyleDanger)
		}
		switch {
		case ch.Confirm && ch.Batch != nil:
			b = b.WithConfirm(batchConfirmDialog(ch))
		case ch.Confirm:
			b = b.WithConfirm(confirmDialog(c))
		}
		elems = append(elems, b)
	}
	return elems
}

// choiceActionID is the action id of the button of ch.
func choiceActionID(ch approval.Choice) string {
	switch ch.Kind {
	case approval.ChooseApprove:
		return ActionIDApprove
	case approval.ChooseDeny:
		return ActionIDDeny
	case approval.ChooseApproveFor:
		return GrantActionID(ch.Grant)
	case approval.ChooseApproveAlways:
		return ActionIDApproveAlways
	case approval.ChooseDenyWithReason:
		return ActionIDDenyReason
	case approval.ChooseEdit:
		return ActionIDEdit
	case approval.ChooseApproveAll:
		return ActionIDApproveAll
	case approval.ChooseDenyAll:
		return ActionIDDenyAll
	default:
		return ActionIDAnswer
	}
}

// viewArgsButton opens ArgsModal.
func viewArgsButton(c Card) *slack.ButtonBlockElement {
	return slack.NewButtonBlockElement(ActionIDViewArgs, EncodeAction(c.Token, c.ToolCallID), plain("View all arguments", true))
}

// argsBlocks show arguments as pretty JSON in a code block of at most
// l.argsLimit characters. When they do not fit, a note says how much is
// shown and, if viewButton, a View all arguments button opens ArgsModal.
func (l *cardLayout) argsBlocks(label string, args preview, blockID string, viewButton bool) []slack.Block {
	code := codeSectionEnds(label, args, l.argsLimit)
	var accessory *slack.Accessory
	if code.truncated() && viewButton {
		accessory = slack.NewAccessory(viewArgsButton(l.c))
	}
	section := slack.NewSectionBlock(mrkdwn(code.text), nil, accessory)
	section.BlockID = blockID
	blocks := []slack.Block{section}
	if code.end != "" {
		blocks = append(blocks, slack.NewContextBlock("", mrkdwn(code.gapNote())),
			slack.NewSectionBlock(mrkdwn(code.end), nil, nil))
	}
	if code.truncated() {
		blocks = append(blocks, slack.NewContextBlock("", mrkdwn(code.note(viewButton))))
	}
	return blocks
}
