package bot

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"hash/crc32"
	"strconv"

	"github.com/slack-go/slack"

	"github.com/slackapprove/slackbot/agentrunner"
	"github.com/slackapprove/slackbot/approval"
)

// maxMessageText is how many characters of block text one message may
// carry, all blocks together. Slack refuses a message with more with
// msg_blocks_too_long (at about 13,200 in practice; its documentation
// speaks of 12,000 with a buffer for block containers).
const maxMessageText = 12_000

// minArgsPreview is the smallest argument preview worth showing; a card
// whose other text leaves less has that text cut harder first.
const minArgsPreview = 400

// textCaps are the longest texts of a card, in characters.
type textCaps struct {
	confirmation, context, reason, answer, summary, mentions, status int
}

var (
	// fullCaps are Slack's limits per block.
	fullCaps = textCaps{
		confirmation: maxSectionText, context: maxSectionText, reason: maxSectionText,
		answer: maxSectionText, summary: maxSummary, mentions: maxSectionText, status: maxSectionText,
	}
	// tightCaps leave arguments room when every other text is long.
	tightCaps = textCaps{
		confirmation: 1000, context: 800, reason: 1000, answer: 1000, summary: 300, mentions: 800, status: 800,
	}
)

// cardLayout is one card being fitted into a message: its texts made once
// (however long the arguments, they are read once per render), and the
// limits the current attempt renders them with.
type cardLayout struct {
	c         Card
	version   string
	caps      textCaps
	argsLimit int // characters of each arguments section

	args, override preview
	// change and local are a coding agent's change and the hook's diff
	// of a Write, editedChange the change it was approved with
	// (render_change.go).
	change, local, editedChange preview
	answer                      preview
	answerText                  string
	answerIsText                bool
}

func newCardLayout(c Card) *cardLayout {
	l := &cardLayout{c: c, version: cardVersion(c), caps: fullCaps, argsLimit: maxSectionText}
	l.args = prettyJSONEnds(c.Args, maxSectionText, maxSectionText/3)
	switch {
	case l.edited() && c.Change != nil && c.EditedChange != nil:
		l.change = textPreview(codeText(c.Change.Text), maxSectionText, maxSectionText/3)
		l.editedChange = textPreview(codeText(c.EditedChange.Text), maxSectionText, maxSectionText/3)
	case l.edited():
		l.override = prettyJSONEnds(c.OverrideArgs, maxSectionText, maxSectionText/3)
	case c.Change != nil:
		l.change = textPreview(codeText(c.Change.Text), maxSectionText, maxSectionText/3)
		l.local = textPreview(codeText(c.Change.LocalDiff), maxSectionText, maxSectionText/3)
	}
	if len(bytes.TrimSpace(c.Answer)) > 0 {
		if err := json.Unmarshal(c.Answer, &l.answerText); err == nil {
			l.answerIsText = true
		} else {
			l.answer = prettyJSON(c.Answer, maxSectionText)
		}
	}
	return l
}

// edited reports that the card shows the requested and the edited
// arguments.
func (l *cardLayout) edited() bool {
	return len(l.c.OverrideArgs) > 0 && l.c.State == approval.CallApproved
}

// fit renders the card within maxMessageText. The argument previews shrink
// first (each to what the other blocks leave, down to minArgsPreview);
// then every other long text is cut to tightCaps and the arguments get
// what is left. A card that still does not fit (it cannot, with the caps
// above) is rendered minimal.
func (l *cardLayout) fit() []slack.Block {
	sections := 1
	if l.edited() || (l.c.Change != nil && l.c.Change.LocalDiff != "") {
		sections = 2
	}
	for _, caps := range []textCaps{fullCaps, tightCaps} {
		l.caps, l.argsLimit = caps, maxSectionText
		blocks := l.blocks()
		if blocksTextLen(blocks) <= maxMessageText {
			return blocks
		}
		// Measure the card with the smallest previews, then share out
		// what is left; the truncation notes' digits vary a little.
		l.argsLimit = minArgsPreview
		small := l.blocks()
		rest := maxMessageText - blocksTextLen(small)
		if rest < 0 {
			continue
		}
		l.argsLimit = min(maxSectionText, minArgsPreview+rest/sections-10)
		if blocks := l.blocks(); blocksTextLen(blocks) <= maxMessageText {
			return blocks
		}
		return small
	}
	return MinimalApprovalBlocks(l.c)
}

// MinimalApprovalBlocks is the approval message cut to where the call
// stands, for a message Slack refused (msg_blocks_too_long,
// invalid_blocks): the header, the outcome and who decided, a note, and
// while pending a short confirmation and the buttons, with View all
// arguments. A decided card never has buttons.
func MinimalApprovalBlocks(c Card) []slack.Block {
	c = normalize(c)
	version := cardVersion(c) + "m"
	blocks := []slack.Block{slack.NewHeaderBlock(plain(headerText(c), true))}
	pending := c.State == approval.CallPending
	if pending {
		blocks = append(blocks, slack.NewSectionBlock(plain(fitEnds(c.Confirmation, 500, plainPiece), false), nil, nil))
	} else {
		blocks = append(blocks, slack.NewSectionBlock(mrkdwn(fitJoin([]string{outcomeLine(c)}, "", 1000)), nil, nil))
	}
	blocks = append(blocks, slack.NewContextBlock(versionedID(blockIDNote, version),
		mrkdwn("Slack refused the full message, so this one is shortened.")))
	if !pending || c.Kind == agentrunner.KindExternal {
		return blocks
	}
	actions := actionsBlock(c, version)
	actions.Elements.ElementSet = append(actions.Elements.ElementSet, viewArgsButton(c))
	return append(blocks, actions)
}

// blocksTextLen counts the characters of every text object in blocks, the
// text Slack counts toward maxMessageText.
func blocksTextLen(blocks []slack.Block) int {
	n := 0
	text := func(t *slack.TextBlockObject) {
		if t != nil {
			n += textLen(t.Text)
		}
	}
	element := func(e slack.BlockElement) {
		if b, ok := e.(*slack.ButtonBlockElement); ok {
			text(b.Text)
			if b.Confirm != nil {
				text(b.Confirm.Title)
				text(b.Confirm.Text)
				text(b.Confirm.Confirm)
				text(b.Confirm.Deny)
			}
		}
	}
	for _, b := range blocks {
		switch b := b.(type) {
		case *slack.HeaderBlock:
			text(b.Text)
		case *slack.SectionBlock:
			text(b.Text)
			for _, f := range b.Fields {
				text(f)
			}
			if b.Accessory != nil && b.Accessory.ButtonElement != nil {
				element(b.Accessory.ButtonElement)
			}
		case *slack.ContextBlock:
			for _, e := range b.ContextElements.Elements {
				if t, ok := e.(*slack.TextBlockObject); ok {
					text(t)
				}
			}
		case *slack.ActionBlock:
			for _, e := range b.Elements.ElementSet {
				element(e)
			}
		}
	}
	return n
}

// cardVersion names what a card shows, for its block ids: it changes with
// the state, the votes, the decision, the outcome and anything else an
// update brings.
func cardVersion(c Card) string {
	h := crc32.New(crc32.MakeTable(crc32.Castagnoli))
	field := func(b []byte) {
		var n [8]byte
		binary.LittleEndian.PutUint64(n[:], uint64(len(b)))
		h.Write(n[:])
		h.Write(b)
	}
	str := func(s string) { field([]byte(s)) }
	str(string(c.State))
	str(string(c.Kind))
	for _, v := range c.Votes {
		str(v.By)
		str(v.Key)
		str(v.At.UTC().String())
	}
	str(c.DecidedBy)
	str(c.DecidedAt.UTC().String())
	str(c.ExpiresAt.UTC().String())
	str(clip(c.Reason, 4*maxSectionText))
	field(c.OverrideArgs)
	field(c.Answer)
	if c.Outcome != nil {
		str(c.Outcome.Status)
		str(clip(c.Outcome.Summary, 4*maxSummary))
	}
	str(strconv.Itoa(c.RequiredApprovals))
	if c.Batch != nil {
		// Only when there is one, so cards without a batch keep their ids.
		str(strconv.Itoa(c.Batch.Count))
		for _, t := range c.Batch.Tools {
			str(t)
		}
	}
	return strconv.FormatUint(uint64(h.Sum32()), 36)
}

// versionedID is a block id for one version of a card.
func versionedID(base, version string) string { return base + "." + version }

func (l *cardLayout) blockID(base string) string { return versionedID(base, l.version) }

// CardBlockID returns the block_id that ApprovalBlocks gives the block
// named base (BlockIDActions, BlockIDArgs) on the message for c.
func CardBlockID(base string, c Card) string { return versionedID(base, cardVersion(normalize(c))) }
