package bot

import (
	"bytes"
	"encoding/json"
	"strings"
	"time"

	"github.com/slack-go/slack"

	"github.com/slackapprove/slackbot/agentrunner"
	"github.com/slackapprove/slackbot/approval"
)

// Card is everything one approval message shows: one pending call, and
// later its decision and the tool's outcome. ApprovalBlocks renders it the
// same way every time; nothing is read from a clock.
type Card struct {
	// Token is the resume token the run waits on.
	Token string `json:"token"`
	// ToolCallID is the call's tool_call_id.
	ToolCallID string `json:"tool_call_id"`
	// Kind says what the call waits for: a decision, an answer to a
	// question, or an external result.
	Kind agentrunner.CallKind `json:"kind"`
	// ToolName is the tool the model called.
	ToolName string `json:"tool_name"`
	// ToolLabel is how people see the tool on the card, its modals and App
	// Home: "<server>.<tool>" for an MCP server's tool, whose ToolName is
	// "<server>__<tool>". Empty means ToolName.
	ToolLabel string `json:"tool_label,omitempty"`
	// Args are the call's arguments: a JSON object, or a JSON string holding
	// one, as in Pydantic AI's ToolCallPart.
	Args json.RawMessage `json:"args,omitempty"`
	// Confirmation is the text a person confirms, e.g.
	// `Run delete_file({"path":"temp.txt"})?`, or the question for a
	// question. Empty means agentrunner.DefaultConfirmation.
	Confirmation string `json:"confirmation,omitempty"`
	// Requester is who is authenticated as asking: a Slack user id (U… or
	// W…) when RequesterIsSlackUser, else the name of the API key.
	Requester            string `json:"requester,omitempty"`
	RequesterIsSlackUser bool   `json:"requester_is_slack_user,omitempty"`
	// RequesterClaim is who the API client says it asks for (its
	// "requester": a person, a coding agent's working directory, an MCP
	// client): shown as its claim, beside the key, never as who asked.
	RequesterClaim string `json:"requester_claim,omitempty"`
	// SourceChannel is the channel id where the run was started; empty for
	// runs started through the HTTP API.
	SourceChannel string `json:"source_channel,omitempty"`
	// Context is free text from an API client saying why the call is made.
	Context string `json:"context,omitempty"`
	// Route is the name of the routing rule that sent the call here.
	Route string `json:"route,omitempty"`
	// Mentions are the usergroup ids (S…) to notify while the call waits.
	Mentions []string `json:"mentions,omitempty"`
	// CreatedAt is when the call was posted; ExpiresAt when it times out.
	CreatedAt time.Time `json:"created_at"`
	ExpiresAt time.Time `json:"expires_at"`
	// RequiredApprovals is how many distinct approvers must approve; values
	// below 1 mean 1.
	RequiredApprovals int `json:"required_approvals,omitempty"`
	// Votes are the approvals given so far.
	Votes []approval.Vote `json:"votes,omitempty"`
	// AllowDenyReason and AllowEdit add the "Deny with reason…" and
	// "Edit arguments…" buttons to an approval.
	AllowDenyReason bool `json:"allow_deny_reason,omitempty"`
	AllowEdit       bool `json:"allow_edit,omitempty"`
	// Confirm makes Approve open Slack's confirm dialog first (the route's
	// confirm: true).
	Confirm bool `json:"confirm,omitempty"`
	// Rule says why the call waits for a person (approval.RuleTool, …);
	// PolicyError why the route's policy could not decide it; AutoApprove
	// the route's auto_approve, which did not approve it.
	Rule        string `json:"rule,omitempty"`
	PolicyError string `json:"policy_error,omitempty"`
	AutoApprove string `json:"auto_approve,omitempty"`
	// GrantChoices are the "Approve for …" lengths the card offers (the
	// route's grants: on a route with one required approval).
	GrantChoices []time.Duration `json:"grant_choices,omitempty"`
	// EscalatedTo, once a pending call has escalated, are the user (U…)
	// and usergroup (S…) ids that may now decide it too.
	EscalatedTo []string `json:"escalated_to,omitempty"`
	// State is where the call stands.
	State approval.CallStatus `json:"state"`
	// DecidedBy is who decided: a Slack user id, "policy:<route>", or the
	// name of an API client.
	DecidedBy string    `json:"decided_by,omitempty"`
	DecidedAt time.Time `json:"decided_at"`
	// Reason is the denial reason, the failure message, or why the call was
	// cancelled.
	Reason string `json:"reason,omitempty"`
	// OverrideArgs are the arguments the call runs with when it was
	// approved with edited arguments.
	OverrideArgs json.RawMessage `json:"override_args,omitempty"`
	// Answer is the answer to a question or the external result.
	Answer json.RawMessage `json:"answer,omitempty"`
	// Outcome is what happened when the tool ran, once known.
	Outcome *approval.Outcome `json:"outcome,omitempty"`
	// PromptAgent names the coding agent ("Claude Code") of a permission
	// prompt; its card leads with what the tool will do (render_prompt.go).
	PromptAgent string `json:"prompt_agent,omitempty"`
}

// The values of approval.Outcome.Status.
const (
	OutcomeRan    = "ran"
	OutcomeFailed = "failed"
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
		blocks = append(blocks, slack.NewSectionBlock(plain(fitPlain("Context: "+c.Context, l.caps.context), false), nil, nil))
	}
	if l.edited() {
		blocks = append(blocks, l.argsBlocks("*Arguments as requested*", l.args, "", false)...)
		blocks = append(blocks, l.argsBlocks("*Arguments as approved (edited)*", l.override, "", false)...)
	} else {
		blocks = append(blocks, l.argsBlocks("*Arguments*", l.args, l.blockID(BlockIDArgs), pending)...)
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
		return append(blocks, slack.NewSectionBlock(plain("⏳ Waiting for an external result. Nothing to do here: this message updates when the result arrives.", true), nil, nil))
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
	return s + fitEnds(c.Confirmation, maxFallbackText-textLen(s), linePiece(neutralRune))
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
	return c
}

// stateLabel is the emoji and word that say where the card stands, first
// thing in the header and the notification.
func stateLabel(c Card) (emoji, word string) {
	switch c.State {
	case approval.CallPending:
		switch c.Kind {
		case agentrunner.KindQuestion:
			return "❓", "Question"
		case agentrunner.KindExternal:
			return "⏳", "Waiting for result"
		default:
			return "⏳", "Approval needed"
		}
	case approval.CallApproved:
		return "✅", "Approved"
	case approval.CallDenied:
		return "❌", "Denied"
	case approval.CallAnswered:
		if c.Kind == agentrunner.KindExternal {
			return "📥", "Result received"
		}
		return "💬", "Answered"
	case approval.CallFailed:
		return "⚠️", "Failed"
	case approval.CallExpired:
		return "⌛", "Expired"
	case approval.CallCancelled:
		return "🚫", "Cancelled"
	default:
		return "❔", "Unknown state " + fit(oneLine(string(c.State)), maxIdentifier, "…", func(r rune) string { return string(r) })
	}
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
		label := "Reason: "
		if c.State == approval.CallFailed {
			label = "Error: "
		}
		blocks = append(blocks, slack.NewSectionBlock(plain(label+"“"+fitPlain(c.Reason, l.caps.reason-textLen(label)-2)+"”", false), nil, nil))
	}
	if len(bytes.TrimSpace(c.Answer)) > 0 {
		label := "Answer"
		if c.Kind == agentrunner.KindExternal {
			label = "Result"
		}
		blocks = append(blocks, l.answerBlocks(label)...)
	}
	if c.Outcome != nil {
		blocks = append(blocks, slack.NewSectionBlock(plain(outcomeText(*c.Outcome, l.caps.summary), false), nil, nil))
	}
	return blocks
}

// outcomeLine says how the card ended and who decided when.
func outcomeLine(c Card) string {
	var line string
	by := actor(c.DecidedBy)
	at := ""
	if !c.DecidedAt.IsZero() {
		at = " · " + slackDate(c.DecidedAt)
	}
	switch c.State {
	case approval.CallApproved:
		line = "✅ *Approved*" + byClause(by) + at
		if len(c.OverrideArgs) > 0 {
			line += " · with edited arguments"
		}
	case approval.CallDenied:
		line = "❌ *Denied*" + byClause(by) + at
	case approval.CallAnswered:
		if c.Kind == agentrunner.KindExternal {
			line = "📥 *Result received*" + fromClause(by) + at
		} else {
			line = "💬 *Answered*" + byClause(by) + at
		}
	case approval.CallFailed:
		line = "⚠️ *Failed*" + at
	case approval.CallExpired:
		line = "⌛ *Expired* — no decision arrived"
		if !c.ExpiresAt.IsZero() {
			line += " by " + slackDate(c.ExpiresAt)
		}
	case approval.CallCancelled:
		line = "🚫 *Cancelled*" + byClause(by) + at
	default:
		line = "❔ *Unknown state* " + literal(string(c.State))
	}
	return line
}

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
	var head string
	switch o.Status {
	case OutcomeRan:
		head = "🟢 The tool ran"
	case OutcomeFailed:
		head = "🔴 The tool failed"
	default:
		head = "ℹ️ Tool outcome: " + fit(oneLine(o.Status), maxIdentifier, "…", escapeRune)
	}
	if strings.TrimSpace(o.Summary) == "" {
		return head + "."
	}
	return head + ": " + fitPlain(o.Summary, maxSummary)
}

func byClause(who string) string {
	if who == "" {
		return ""
	}
	return " by " + who
}

func fromClause(who string) string {
	if who == "" {
		return ""
	}
	return " from " + who
}

// actor renders who decided: a user mention for a Slack user id, the
// policy's route for "policy:<route>", else the literal name of an API
// client.
func actor(who string) string {
	switch {
	case who == "":
		return ""
	case isUserID(who):
		return "<@" + who + ">"
	case strings.HasPrefix(who, "policy:"):
		return "policy " + literal(strings.TrimPrefix(who, "policy:"))
	default:
		return literal(who)
	}
}

// requesterLine says who asked, where, when and through which route: an
// API client's claim comes first, as what the key says ("Requested for
// `carol`, says `bench` (API)").
func requesterLine(c Card) string {
	var b strings.Builder
	switch {
	case c.Requester == "":
		b.WriteString("Requested by an unknown requester")
	case c.RequesterIsSlackUser && isUserID(c.Requester):
		b.WriteString("Requested by <@" + c.Requester + ">")
	case c.RequesterIsSlackUser:
		b.WriteString("Requested by " + literal(c.Requester))
	case c.RequesterClaim != "":
		b.WriteString("Requested for " + literal(c.RequesterClaim) + ", says " + literal(c.Requester) + " (API)")
	default:
		b.WriteString("Requested by " + literal(c.Requester) + " (API)")
	}
	if c.SourceChannel != "" {
		if isChannelID(c.SourceChannel) {
			b.WriteString(" in <#" + c.SourceChannel + ">")
		} else {
			b.WriteString(" in " + literal(c.SourceChannel))
		}
	}
	if !c.CreatedAt.IsZero() {
		b.WriteString(" · " + slackDate(c.CreatedAt))
	}
	if c.Route != "" {
		b.WriteString(" · route " + literal(c.Route))
	}
	return b.String()
}

// statusLine is the expiry and the quorum while pending, and who approved
// when a quorum of several was reached.
func statusLine(c Card, max int) string {
	var parts []string
	if c.State == approval.CallPending && !c.ExpiresAt.IsZero() {
		parts = append(parts, "Expires "+slackDate(c.ExpiresAt))
	}
	if c.RequiredApprovals > 1 && (c.State == approval.CallPending || c.State == approval.CallApproved) {
		parts = append(parts, quorumParts(c)...)
	}
	if c.State == approval.CallPending && len(c.EscalatedTo) > 0 {
		parts = append(parts, "🚨 Escalated: "+fitJoin(escalationMentions(c.EscalatedTo), " ", max/2)+" may decide too")
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

func voter(user string) string {
	if isUserID(user) {
		return "<@" + user + ">"
	}
	return literal(user)
}

// mentionsLine notifies the card's usergroups. Ids that are not usergroup
// ids are shown, not mentioned.
func mentionsLine(c Card, max int) string {
	if len(c.Mentions) == 0 {
		return ""
	}
	label := "Approvers: "
	switch c.Kind {
	case agentrunner.KindQuestion:
		label = "Who can answer: "
	case agentrunner.KindExternal:
		label = "cc: "
	}
	seen := map[string]bool{}
	var groups []string
	for _, m := range c.Mentions {
		if seen[m] {
			continue
		}
		seen[m] = true
		if isUsergroupID(m) {
			groups = append(groups, "<!subteam^"+m+">")
		} else {
			groups = append(groups, literal(m))
		}
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
	value := EncodeAction(c.Token, c.ToolCallID)
	button := func(id, text string, style slack.Style) slack.BlockElement {
		b := slack.NewButtonBlockElement(id, value, plain(text, true))
		if style != "" {
			b = b.WithStyle(style)
		}
		return b
	}
	var elems []slack.BlockElement
	if c.Kind == agentrunner.KindQuestion {
		elems = append(elems, button(ActionIDAnswer, "Answer…", slack.StylePrimary))
	} else {
		approve := slack.NewButtonBlockElement(ActionIDApprove, value, plain("Approve", true)).WithStyle(slack.StylePrimary)
		if c.Confirm {
			approve = approve.WithConfirm(confirmDialog(c))
		}
		elems = append(elems, approve, button(ActionIDDeny, "Deny", slack.StyleDanger))
		if c.Kind == agentrunner.KindApproval {
			for _, d := range c.GrantChoices {
				grant := slack.NewButtonBlockElement(GrantActionID(d), value, plain("Approve for "+formatWait(d), true))
				if c.Confirm {
					grant = grant.WithConfirm(confirmDialog(c))
				}
				elems = append(elems, grant)
			}
		}
		if c.AllowDenyReason {
			elems = append(elems, button(ActionIDDenyReason, "Deny with reason…", ""))
		}
		if c.AllowEdit {
			elems = append(elems, button(ActionIDEdit, "Edit arguments…", ""))
		}
	}
	return slack.NewActionBlock(versionedID(BlockIDActions, version), elems...)
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
