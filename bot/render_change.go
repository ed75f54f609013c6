package bot

import (
	"strings"

	"github.com/slack-go/slack"

	"github.com/slackapprove/slackbot/approval"
)

// A coding agent's tool call shows its change (approval.Change) where
// other calls show their arguments' JSON: the agent's description as its
// words, the command, diff, content or patch as a code block (start and
// end when it is long, with a View full … button on a pending card), a
// Write's diff against the file as the hook computed it, marked so, and
// every other argument on a line of its own. All of it is the same text
// the call runs with; nothing in it can format, mention or link: code
// blocks escape &, < and > and break runs of backticks (fitCode), and the
// description is plain text.

// changeBlocks show the change ch (its text previewed in p, a Write's
// local diff in local) in place of the arguments, under heading when it
// is one of two (as requested, as approved); blockID names its section.
func (l *cardLayout) changeBlocks(ch *approval.Change, p, local preview, heading, blockID string, viewButton bool) []slack.Block {
	var blocks []slack.Block
	if strings.TrimSpace(ch.Description) != "" {
		blocks = append(blocks, slack.NewSectionBlock(plain(fitPlain(approval.DescriptionLabel+"“"+ch.Description+"”", l.caps.context), false), nil, nil))
	}
	label := changeLabel(ch)
	if heading != "" {
		label = cardMarks{}.Strong(heading) + "\n" + label
	}
	code := codeSectionEnds(label, p, l.argsLimit)
	var accessory *slack.Accessory
	if (code.truncated() || ch.Cut) && viewButton {
		accessory = slack.NewAccessory(viewChangeButton(l.c))
	}
	section := slack.NewSectionBlock(mrkdwn(code.text), nil, accessory)
	section.BlockID = blockID
	blocks = append(blocks, section)
	if code.end != "" {
		blocks = append(blocks, slack.NewContextBlock("", mrkdwn(code.gapNote())),
			slack.NewSectionBlock(mrkdwn(code.end), nil, nil))
	}
	if code.truncated() {
		blocks = append(blocks, slack.NewContextBlock("", mrkdwn(changeNote(code, ch, viewButton))))
	}
	if ch.Cut {
		blocks = append(blocks, slack.NewContextBlock("", mrkdwn(approval.ChangeCutWords(ch))))
	}
	if ch.LocalDiff != "" && local.total > 0 {
		code := codeSectionEnds("_"+approval.LocalDiffLabel+"_", local, l.argsLimit)
		blocks = append(blocks, slack.NewSectionBlock(mrkdwn(code.text), nil, nil))
		if code.end != "" {
			blocks = append(blocks, slack.NewContextBlock("", mrkdwn(code.gapNote())),
				slack.NewSectionBlock(mrkdwn(code.end), nil, nil))
		}
		if code.truncated() || ch.LocalDiffCut {
			blocks = append(blocks, slack.NewContextBlock("", mrkdwn(strings.TrimSuffix(code.note(false), ".")+" of the hook's diff.")))
		}
	}
	if len(ch.Rest) > 0 {
		text, _ := compactEnds(ch.Rest, l.caps.status)
		blocks = append(blocks, slack.NewContextBlock("", mrkdwn(approval.RestLabel+inlineCode(text, l.caps.status+20))))
	}
	return blocks
}

// changeLabel is the bold name of a change's text, with its file.
func changeLabel(ch *approval.Change) string {
	label := cardMarks{}.Strong(ch.Label())
	if ch.Path != "" {
		label += " " + literalPath(ch.Path)
	}
	return label
}

// literalPath shows a file path as an inline code span, its end kept
// when it is long (the file's name is at its end).
func literalPath(p string) string { return inlineCodeEnds(oneLine(p), 300) }

// changeNote says how much of a change the card shows, and where the rest
// is.
func changeNote(code codeBlock, ch *approval.Change, viewButton bool) string {
	s := strings.TrimSuffix(code.note(false), ".") + " of the " + strings.ToLower(ch.Label()) + "."
	if viewButton {
		s += " Use *" + viewChangeLabel(ch) + "* to see the rest."
	}
	return s
}

// viewChangeLabel is the button that opens ArgsModal on a change:
// "View full diff".
func viewChangeLabel(ch *approval.Change) string { return "View full " + strings.ToLower(ch.Label()) }

// viewChangeButton opens ArgsModal, which shows the whole change.
func viewChangeButton(c Card) *slack.ButtonBlockElement {
	return slack.NewButtonBlockElement(ActionIDViewArgs, EncodeAction(c.Token, c.ToolCallID), plain(viewChangeLabel(c.Change), true))
}

// textPreview is the start (limit characters) of s for a code block, and
// when s is longer its last tail characters: invisible characters are
// revealed (see reveal), line breaks and tabs kept.
func textPreview(s string, limit, tail int) preview {
	w := &textSink{limit: limit}
	w.reveal([]byte(s), true)
	p := w.preview()
	if p.whole() || tail <= 0 {
		return p
	}
	e := &textSink{from: max(p.total-tail, 1)}
	e.reveal([]byte(s), true)
	p.suffix = e.b.String()
	return p
}

// codeText is s as a code block shows it: the block's closing fence
// starts a line of its own, so one final line break is left out.
func codeText(s string) string { return strings.TrimSuffix(s, "\n") }

// changeModal is ArgsModal for a change: the whole text, as many code
// blocks as a modal holds (its start and its end beyond that), the hook's
// diff of a Write, and the other arguments.
func changeModal(c Card) slack.ModalViewRequest {
	ch := c.Change
	blocks := []slack.Block{
		slack.NewSectionBlock(plain(fitPlain(ch.Lead()+" ("+c.ToolLabel+")", maxSectionText), false), nil, nil),
	}
	if strings.TrimSpace(ch.Description) != "" {
		blocks = append(blocks, slack.NewSectionBlock(plain(fitPlain(approval.DescriptionLabel+"“"+ch.Description+"”", maxSectionText), false), nil, nil))
	}
	room := maxModalBlocks - 6 // the lead, the description, the notes and the other arguments
	localRoom := 0
	if ch.LocalDiff != "" {
		localRoom = room / 4
	}
	blocks = append(blocks, slack.NewSectionBlock(mrkdwn(changeLabel(ch)), nil, nil))
	blocks = append(blocks, previewChunks(textPreview(codeText(ch.Text), (room-localRoom-2)*maxSectionText, maxSectionText), room-localRoom)...)
	if ch.Cut {
		blocks = append(blocks, slack.NewContextBlock("", mrkdwn(approval.ChangeCutWords(ch))))
	}
	if ch.LocalDiff != "" {
		blocks = append(blocks, slack.NewSectionBlock(mrkdwn("_"+approval.LocalDiffLabel+"_"), nil, nil))
		blocks = append(blocks, previewChunks(textPreview(codeText(ch.LocalDiff), (localRoom-2)*maxSectionText, maxSectionText), localRoom)...)
	}
	if len(ch.Rest) > 0 {
		rest := codeSection(approval.RestLabel, prettyJSON(ch.Rest, maxSectionText), 0, maxSectionText)
		blocks = append(blocks, slack.NewSectionBlock(mrkdwn(rest.text), nil, nil))
		if rest.truncated() {
			blocks = append(blocks, slack.NewContextBlock("", mrkdwn(rest.note(false))))
		}
	}
	return slack.ModalViewRequest{
		Type:            slack.VTModal,
		CallbackID:      CallbackViewArgs,
		Title:           plain("Tool call arguments", true),
		Close:           plain("Close", true),
		Blocks:          slack.Blocks{BlockSet: blocks},
		PrivateMetadata: encodeModalMetadata(c, approval.MessageRef{}),
	}
}

// previewChunks lays p out in at most room blocks of code: as many code
// blocks of its start as fit, then what stands for its middle and its end
// when it does not all fit, then a note saying how much is shown.
func previewChunks(p preview, room int) []slack.Block {
	var blocks []slack.Block
	shown := 0
	last := room - 1 // the final note
	if !p.whole() {
		last -= 2
	}
	for p.prefix != "" && len(blocks) < last {
		chunk := codeSection("", p, shown, maxSectionText)
		if chunk.shown == shown {
			break // nothing fits: cannot happen with Slack's limits, but never loop
		}
		blocks = append(blocks, slack.NewSectionBlock(mrkdwn(chunk.text), nil, nil))
		shown, p.prefix = chunk.shown, chunk.rest
	}
	end := codeBlock{shown: shown, total: p.total}
	if shown < p.total && p.suffix != "" {
		text, n := fitCodeEnd(p.suffix, maxSectionText-textLen(fenceOpen+fenceClose), p.total-shown)
		end.end, end.tail = fenceOpen+text+fenceClose, n
		if end.truncated() {
			blocks = append(blocks, slack.NewContextBlock("", mrkdwn(end.gapNote())))
		}
		blocks = append(blocks, slack.NewSectionBlock(mrkdwn(end.end), nil, nil))
	}
	if end.truncated() {
		blocks = append(blocks, slack.NewContextBlock("", mrkdwn(strings.TrimSuffix(end.note(false), ".")+": the rest is too long for Slack.")))
	}
	return blocks
}

// summary is the confirmation of a call where only one line shows it (the
// notification, App Home): a command's change leads with its sentence
// and goes on with the command itself, so the one line still says what
// runs (its end kept by the callers' fitEnds).
func summary(c Card) string {
	if c.Change != nil && c.Change.Kind == approval.ChangeCommand {
		return c.Confirmation + ": " + c.Change.Text
	}
	return c.Confirmation
}
