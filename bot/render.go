package bot

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/slack-go/slack"

	"github.com/slackapprove/slackbot/agentrunner"
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
	// Requester is who started the run: a Slack user id (U… or W…) when
	// RequesterIsSlackUser, else the name of an API client.
	Requester            string `json:"requester,omitempty"`
	RequesterIsSlackUser bool   `json:"requester_is_slack_user,omitempty"`
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
	Votes []Vote `json:"votes,omitempty"`
	// AllowDenyReason and AllowEdit add the "Deny with reason…" and
	// "Edit arguments…" buttons to an approval.
	AllowDenyReason bool `json:"allow_deny_reason,omitempty"`
	AllowEdit       bool `json:"allow_edit,omitempty"`
	// State is where the call stands.
	State CardState `json:"state"`
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
	Outcome *ToolOutcome `json:"outcome,omitempty"`
}

// CardState is where a pending call stands.
type CardState string

// The states of a card. Every state but StatePending is final.
const (
	StatePending   CardState = "pending"
	StateApproved  CardState = "approved"
	StateDenied    CardState = "denied"
	StateAnswered  CardState = "answered"
	StateFailed    CardState = "failed"
	StateExpired   CardState = "expired"
	StateCancelled CardState = "cancelled"
)

// Vote is one approval towards a call's quorum.
type Vote struct {
	User string    `json:"user"`
	At   time.Time `json:"at"`
}

// ToolOutcome is what happened when an approved or answered call's tool
// ran.
type ToolOutcome struct {
	// Status is OutcomeRan or OutcomeFailed.
	Status string `json:"status"`
	// Summary is a short, human-readable result or error.
	Summary string `json:"summary,omitempty"`
}

// The values of ToolOutcome.Status.
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
)

// The block_id of the approval message's blocks that carry buttons.
const (
	BlockIDActions = "approval_actions" // the actions block
	BlockIDArgs    = "approval_args"    // the arguments section (View all arguments)
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
	c = normalize(c)
	blocks := []slack.Block{
		slack.NewHeaderBlock(plain(headerText(c), true)),
	}
	if c.State != StatePending {
		blocks = append(blocks, outcomeBlocks(c)...)
	}
	blocks = append(blocks,
		slack.NewSectionBlock(plain(fitPlain(c.Confirmation, maxSectionText), false), nil, nil),
		slack.NewContextBlock("approval_requester", mrkdwn(requesterLine(c))),
	)
	if strings.TrimSpace(c.Context) != "" {
		blocks = append(blocks, slack.NewSectionBlock(plain(fitPlain("Context: "+c.Context, maxSectionText), false), nil, nil))
	}
	pending := c.State == StatePending
	if len(c.OverrideArgs) > 0 && c.State == StateApproved {
		blocks = append(blocks, argsBlocks(c, "*Arguments as requested*", c.Args, "", false)...)
		blocks = append(blocks, argsBlocks(c, "*Arguments as approved (edited)*", c.OverrideArgs, "", false)...)
	} else {
		blocks = append(blocks, argsBlocks(c, "*Arguments*", c.Args, BlockIDArgs, pending)...)
	}
	if line := statusLine(c); line != "" {
		blocks = append(blocks, slack.NewContextBlock("approval_status", mrkdwn(line)))
	}
	if !pending {
		return blocks
	}
	if line := mentionsLine(c); line != "" {
		blocks = append(blocks, slack.NewSectionBlock(mrkdwn(line), nil, nil))
	}
	if c.Kind == agentrunner.KindExternal {
		return append(blocks, slack.NewSectionBlock(plain("⏳ Waiting for an external result. Nothing to do here: this message updates when the result arrives.", true), nil, nil))
	}
	return append(blocks, actionsBlock(c))
}

// ApprovalText returns the message's fallback text (chat.postMessage's
// text), which Slack shows in notifications: the state, the tool and, while
// pending, the confirmation text or question. It mentions no one, is
// escaped, and is at most 300 characters.
func ApprovalText(c Card) string {
	c = normalize(c)
	emoji, word := stateLabel(c)
	s := emoji + " " + word + ": " + oneLine(c.ToolLabel)
	if c.State == StatePending && c.Kind != agentrunner.KindExternal {
		s += " — " + oneLine(c.Confirmation)
	}
	return fit(s, maxFallbackText, "…", neutralRune)
}

// normalize fills in the defaults a caller may leave out.
func normalize(c Card) Card {
	if c.Kind == "" {
		c.Kind = agentrunner.KindApproval
	}
	if c.State == "" {
		c.State = StatePending
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
		c.Confirmation = agentrunner.DefaultConfirmation(agentrunner.ToolCallPart{
			ToolName: c.ToolLabel, Args: c.Args, ToolCallID: c.ToolCallID,
		})
	}
	return c
}

// stateLabel is the emoji and word that say where the card stands, first
// thing in the header and the notification.
func stateLabel(c Card) (emoji, word string) {
	switch c.State {
	case StatePending:
		switch c.Kind {
		case agentrunner.KindQuestion:
			return "❓", "Question"
		case agentrunner.KindExternal:
			return "⏳", "Waiting for result"
		default:
			return "⏳", "Approval needed"
		}
	case StateApproved:
		return "✅", "Approved"
	case StateDenied:
		return "❌", "Denied"
	case StateAnswered:
		if c.Kind == agentrunner.KindExternal {
			return "📥", "Result received"
		}
		return "💬", "Answered"
	case StateFailed:
		return "⚠️", "Failed"
	case StateExpired:
		return "⌛", "Expired"
	case StateCancelled:
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
func outcomeBlocks(c Card) []slack.Block {
	var line string
	by := actor(c.DecidedBy)
	at := ""
	if !c.DecidedAt.IsZero() {
		at = " · " + slackDate(c.DecidedAt)
	}
	switch c.State {
	case StateApproved:
		line = "✅ *Approved*" + byClause(by) + at
		if len(c.OverrideArgs) > 0 {
			line += " · with edited arguments"
		}
	case StateDenied:
		line = "❌ *Denied*" + byClause(by) + at
	case StateAnswered:
		if c.Kind == agentrunner.KindExternal {
			line = "📥 *Result received*" + fromClause(by) + at
		} else {
			line = "💬 *Answered*" + byClause(by) + at
		}
	case StateFailed:
		line = "⚠️ *Failed*" + at
	case StateExpired:
		line = "⌛ *Expired* — no decision arrived"
		if !c.ExpiresAt.IsZero() {
			line += " by " + slackDate(c.ExpiresAt)
		}
	case StateCancelled:
		line = "🚫 *Cancelled*" + byClause(by) + at
	default:
		line = "❔ *Unknown state* " + literal(string(c.State))
	}
	blocks := []slack.Block{slack.NewSectionBlock(mrkdwn(line), nil, nil)}

	if strings.TrimSpace(c.Reason) != "" {
		label := "Reason: "
		if c.State == StateFailed {
			label = "Error: "
		}
		blocks = append(blocks, slack.NewSectionBlock(plain(label+"“"+fitPlain(c.Reason, maxSectionText-textLen(label)-2)+"”", false), nil, nil))
	}
	if len(bytes.TrimSpace(c.Answer)) > 0 {
		label := "Answer"
		if c.Kind == agentrunner.KindExternal {
			label = "Result"
		}
		blocks = append(blocks, answerBlocks(label, c.Answer)...)
	}
	if c.Outcome != nil {
		blocks = append(blocks, slack.NewSectionBlock(plain(outcomeText(*c.Outcome), false), nil, nil))
	}
	return blocks
}

// answerBlocks show an answer: a JSON string as text, anything else as
// pretty JSON.
func answerBlocks(label string, answer json.RawMessage) []slack.Block {
	var s string
	if err := json.Unmarshal(answer, &s); err == nil {
		return []slack.Block{slack.NewSectionBlock(plain(fitPlain(label+": "+s, maxSectionText), false), nil, nil)}
	}
	code := codeSection("*"+label+"*", prettyJSON(answer), maxSectionText)
	blocks := []slack.Block{slack.NewSectionBlock(mrkdwn(code.text), nil, nil)}
	if code.truncated() {
		blocks = append(blocks, slack.NewContextBlock("", mrkdwn(code.note(false))))
	}
	return blocks
}

func outcomeText(o ToolOutcome) string {
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

// requesterLine says who asked, where, when and through which route.
func requesterLine(c Card) string {
	var b strings.Builder
	b.WriteString("Requested by ")
	switch {
	case c.Requester == "":
		b.WriteString("an unknown requester")
	case c.RequesterIsSlackUser && isUserID(c.Requester):
		b.WriteString("<@" + c.Requester + ">")
	case c.RequesterIsSlackUser:
		b.WriteString(literal(c.Requester))
	default:
		b.WriteString(literal(c.Requester) + " (API)")
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
func statusLine(c Card) string {
	var parts []string
	if c.State == StatePending && !c.ExpiresAt.IsZero() {
		parts = append(parts, "Expires "+slackDate(c.ExpiresAt))
	}
	if c.RequiredApprovals > 1 && (c.State == StatePending || c.State == StateApproved) {
		votes := fmt.Sprintf("%d of %d approvals", len(c.Votes), c.RequiredApprovals)
		if len(c.Votes) > 0 {
			names := make([]string, 0, len(c.Votes))
			for _, v := range c.Votes {
				names = append(names, voter(v.User))
			}
			votes += ": " + strings.Join(names, ", ")
		}
		parts = append(parts, votes)
	}
	return fitJoin(parts, " · ", maxSectionText)
}

func voter(user string) string {
	if isUserID(user) {
		return "<@" + user + ">"
	}
	return literal(user)
}

// mentionsLine notifies the card's usergroups. Ids that are not usergroup
// ids are shown, not mentioned.
func mentionsLine(c Card) string {
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
	return label + fitJoin(groups, " ", maxSectionText-textLen(label))
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

func actionsBlock(c Card) *slack.ActionBlock {
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
		elems = append(elems,
			button(ActionIDApprove, "Approve", slack.StylePrimary),
			button(ActionIDDeny, "Deny", slack.StyleDanger),
		)
		if c.AllowDenyReason {
			elems = append(elems, button(ActionIDDenyReason, "Deny with reason…", ""))
		}
		if c.AllowEdit {
			elems = append(elems, button(ActionIDEdit, "Edit arguments…", ""))
		}
	}
	return slack.NewActionBlock(BlockIDActions, elems...)
}

// argsBlocks show arguments as pretty JSON in a code block. When they do
// not fit, a note says how much is shown and, if viewButton, a View all
// arguments button opens ArgsModal.
func argsBlocks(c Card, label string, args json.RawMessage, blockID string, viewButton bool) []slack.Block {
	code := codeSection(label, prettyJSON(args), maxSectionText)
	var accessory *slack.Accessory
	if code.truncated() && viewButton {
		accessory = slack.NewAccessory(slack.NewButtonBlockElement(ActionIDViewArgs, EncodeAction(c.Token, c.ToolCallID), plain("View all arguments", true)))
	}
	section := slack.NewSectionBlock(mrkdwn(code.text), nil, accessory)
	section.BlockID = blockID
	blocks := []slack.Block{section}
	if code.truncated() {
		blocks = append(blocks, slack.NewContextBlock("", mrkdwn(code.note(viewButton))))
	}
	return blocks
}

// codeBlock is a code block cut to fit a text object.
type codeBlock struct {
	text  string // label, then the code block
	shown int    // characters of the content shown
	rest  string // the content that did not fit, for the next chunk
}

func (c codeBlock) truncated() bool { return c.rest != "" }

// note says how much of the content is shown.
func (c codeBlock) note(viewButton bool) string {
	total := c.shown + utf8.RuneCountInString(c.rest)
	s := fmt.Sprintf("Showing %s of %s characters.", thousands(c.shown), thousands(total))
	if viewButton {
		s += " Use *View all arguments* to see the rest."
	}
	return s
}

// codeSection renders label and content as a mrkdwn code block of at most
// max characters, cutting content (at a line end when one is near) if it
// does not fit.
func codeSection(label, content string, max int) codeBlock {
	const fenceOpen, fenceClose = "```\n", "\n```"
	head := fenceOpen
	if label != "" {
		head = label + "\n" + fenceOpen
	}
	body, rest := fitCode(content, max-textLen(head)-textLen(fenceClose))
	return codeBlock{
		text:  head + body + fenceClose,
		shown: utf8.RuneCountInString(content[:len(content)-len(rest)]),
		rest:  rest,
	}
}

// fitCode escapes s for the inside of a mrkdwn code block and cuts it to at
// most max characters. It returns the escaped text and what was left out.
// A run of backticks gets zero-width spaces between them so the content
// cannot close the block.
func fitCode(s string, max int) (escaped, rest string) {
	var b strings.Builder
	n := 0
	prev := rune(0)
	// Where the last full line ended, to cut there if it is near the end.
	lineEnd, lineEndIn := -1, 0
	for i, r := range s {
		piece := escapeRune(r)
		if r == '`' && prev == '`' {
			piece = "\u200b`"
		}
		if n+textLen(piece) > max {
			if lineEnd >= 0 && b.Len()-lineEnd < b.Len()/4 {
				out := b.String()[:lineEnd]
				return out, s[lineEndIn:]
			}
			return b.String(), s[i:]
		}
		if r == '\n' {
			lineEnd, lineEndIn = b.Len(), i+1
		}
		b.WriteString(piece)
		n += textLen(piece)
		prev = r
	}
	return b.String(), ""
}

// prettyJSON indents a JSON value for people: arguments given as a JSON
// string holding an object are decoded first, null or nothing is {}, and
// anything that is not JSON is shown as it is.
func prettyJSON(raw json.RawMessage) string {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return "{}"
	}
	if raw[0] == '"' {
		var s string
		if err := json.Unmarshal(raw, &s); err == nil {
			if t := strings.TrimSpace(s); strings.HasPrefix(t, "{") && json.Valid([]byte(t)) {
				raw = []byte(t)
			}
		}
	}
	var buf bytes.Buffer
	if err := json.Indent(&buf, raw, "", "  "); err != nil {
		return reveal(string(raw), true)
	}
	// Inside JSON strings, \uXXXX means the same character, so revealing
	// invisible characters keeps the JSON equivalent.
	return reveal(buf.String(), true)
}

// plain returns a plain_text text object. Plain text is never parsed for
// mentions or formatting; callers escape &, < and >.
func plain(text string, emoji bool) *slack.TextBlockObject {
	return slack.NewTextBlockObject(slack.PlainTextType, text, emoji, false)
}

// mrkdwn returns a verbatim mrkdwn text object: Slack does not turn bare
// URLs, channel names or @here into links or mentions, so only the <…>
// sequences the renderer writes are special.
func mrkdwn(text string) *slack.TextBlockObject {
	return slack.NewTextBlockObject(slack.MarkdownType, text, false, true)
}

// slackDate shows t in each reader's time zone, with a UTC fallback.
func slackDate(t time.Time) string {
	return fmt.Sprintf("<!date^%d^{date_short_pretty} at {time}|%s>", t.Unix(), t.UTC().Format("2006-01-02 15:04 UTC"))
}

// fitPlain escapes s for a plain_text object (keeping line breaks) and cuts
// it to max characters.
func fitPlain(s string, max int) string {
	return fit(reveal(s, true), max, "…", escapeRune)
}

// literal renders a short name (route, client, tool) inside mrkdwn as an
// inline code span: no formatting, no mentions, one line.
func literal(s string) string {
	s = strings.ReplaceAll(oneLine(s), "`", "ˋ")
	if strings.TrimSpace(s) == "" {
		s = "?"
	}
	return "`" + fit(s, maxIdentifier, "…", escapeRune) + "`"
}

// oneLine reveals invisible characters and turns line breaks and tabs into
// spaces.
func oneLine(s string) string {
	s = reveal(s, false)
	return strings.Map(func(r rune) rune {
		if r == '\n' || r == '\t' {
			return ' '
		}
		return r
	}, s)
}

// fit encodes s rune by rune and cuts it, on a rune boundary and never
// inside an escape, so that the result with ellipsis appended fits in max
// characters. s is returned whole when it fits.
func fit(s string, max int, ellipsis string, encode func(rune) string) string {
	var b strings.Builder
	n, cut := 0, 0
	budget := max - textLen(ellipsis)
	for _, r := range s {
		piece := encode(r)
		n += textLen(piece)
		if n > max {
			return b.String()[:cut] + ellipsis
		}
		b.WriteString(piece)
		if n <= budget {
			cut = b.Len()
		}
	}
	return b.String()
}

// escapeRune applies Slack's escaping: &, < and > become entities.
func escapeRune(r rune) string {
	switch r {
	case '&':
		return "&amp;"
	case '<':
		return "&lt;"
	case '>':
		return "&gt;"
	}
	return string(r)
}

// neutralRune escapes like escapeRune and follows mrkdwn's formatting
// characters with a zero-width space, so text that is not in a code block
// cannot turn bold, italic, struck or into code.
func neutralRune(r rune) string {
	switch r {
	case '*', '_', '~', '`':
		return string(r) + "\u200b"
	}
	return escapeRune(r)
}

// reveal replaces invalid UTF-8 and characters that are invisible or
// reorder text (bidi controls, zero-width characters, control characters)
// with \uXXXX, so a call cannot look different from what it is. Line
// breaks and tabs are kept when keepBreaks.
func reveal(s string, keepBreaks bool) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	var b strings.Builder
	for _, r := range s {
		if (r == '\n' || r == '\t') && keepBreaks {
			b.WriteRune(r)
			continue
		}
		if invisible(r) {
			fmt.Fprintf(&b, `\u%04x`, r)
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

func invisible(r rune) bool {
	switch {
	case r < 0x20, r >= 0x7f && r < 0xa0:
		return true
	case r >= 0x200b && r <= 0x200f, // zero-width spaces, joiners, marks
		r >= 0x2028 && r <= 0x202e, // separators, bidi embeddings and overrides
		r >= 0x2060 && r <= 0x2064, // word joiner, invisible operators
		r >= 0x2066 && r <= 0x2069, // bidi isolates
		r == 0x061c, r == 0xfeff:
		return true
	}
	return false
}

// textLen is the length of s in UTF-16 code units: Slack's character count
// or more, so limits checked with it hold.
func textLen(s string) int {
	n := 0
	for _, r := range s {
		n += utf16.RuneLen(r)
	}
	return n
}

// thousands formats n with comma separators: 10312 → 10,312.
func thousands(n int) string {
	s := strconv.Itoa(n)
	if n < 0 {
		return "-" + thousands(-n)
	}
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// isUserID reports whether s looks like a Slack user id (U… or W…), the
// only thing ever rendered as a user mention.
func isUserID(s string) bool { return isSlackID(s, "UW") }

// isChannelID reports whether s looks like a Slack conversation id.
func isChannelID(s string) bool { return isSlackID(s, "CGD") }

// isUsergroupID reports whether s looks like a Slack usergroup id.
func isUsergroupID(s string) bool { return isSlackID(s, "S") }

func isSlackID(s, prefixes string) bool {
	if len(s) < 3 || len(s) > 24 || !strings.ContainsRune(prefixes, rune(s[0])) {
		return false
	}
	for i := 1; i < len(s); i++ {
		if c := s[i]; !('A' <= c && c <= 'Z' || '0' <= c && c <= '9') {
			return false
		}
	}
	return true
}
