package bot

import (
	"strconv"
	"strings"

	"github.com/slack-go/slack"

	"github.com/slackapprove/slackbot/approval"
)

// ActionIDRevokeGrant is the Revoke button of a grant on App Home; its
// value is the grant's id.
const ActionIDRevokeGrant = "revoke_grant"

// Bounds of the Home tab: Slack allows 100 blocks in a view; each list
// shows what HomeContent holds, the grants at most maxHomeGrants.
const (
	maxViewBlocks       = 100
	maxHomeGrants       = 20
	maxHomeConfirmation = 200
)

// HomeItem is one call on a Home tab: its card, and whether it waits for
// the viewer only because it escalated to them.
type HomeItem struct {
	Card      Card
	Message   approval.MessageRef
	Escalated bool
}

// HomeGrant is one grant on a Home tab, with its tool as cards label it.
type HomeGrant struct {
	Grant     approval.Grant
	ToolLabel string
}

// HomeContent is everything a Home tab shows; HomeBlocks renders it the
// same way every time.
type HomeContent struct {
	// Notice, when set, is a line at the top: what became of the viewer's
	// last click on their Home (mrkdwn, already escaped).
	Notice       string
	Waiting      []HomeItem
	MoreWaiting  int
	Requests     []HomeItem
	MoreRequests int
	Grants       []HomeGrant
	// Partial: some pending requests could not be read or authorized.
	Partial bool
}

// HomeBlocks renders a Home tab: Waiting for you (each call with the
// card's Approve and Deny, the same action ids and values, and the card's
// grant buttons and confirm dialog), Your requests (where each stands and
// where its card is), Your grants (each with Revoke), each with an empty
// state. It stays within Slack's 100 blocks and 3000 characters a section.
func HomeBlocks(h HomeContent) []slack.Block {
	var blocks []slack.Block
	if h.Notice != "" {
		blocks = append(blocks, slack.NewSectionBlock(mrkdwn(fit(h.Notice, maxSectionText, "…", func(r rune) string { return string(r) })), nil, nil), slack.NewDividerBlock())
	}
	blocks = append(blocks, slack.NewHeaderBlock(plain("⏳ Waiting for you", true)))
	if len(h.Waiting) == 0 {
		blocks = append(blocks, homeNote("Nothing waits for your decision. Calls of the routes you approve show up here, oldest first, as they do in their channels."))
	}
	for i, it := range h.Waiting {
		c := normalize(it.Card)
		blocks = append(blocks, slack.NewSectionBlock(mrkdwn(waitingText(c, it)), nil, nil))
		if actions := homeActions(c, i); actions != nil {
			blocks = append(blocks, actions)
		}
	}
	if h.MoreWaiting > 0 {
		blocks = append(blocks, homeNote("…and "+strconv.Itoa(h.MoreWaiting)+" more waiting for you, oldest first: decide these to see them."))
	}
	blocks = append(blocks, slack.NewDividerBlock(), slack.NewHeaderBlock(plain("📤 Your requests", true)))
	if len(h.Requests) == 0 {
		blocks = append(blocks, homeNote("None of your requests waits for a decision."))
	}
	for _, it := range h.Requests {
		blocks = append(blocks, slack.NewSectionBlock(mrkdwn(requestText(normalize(it.Card), it)), nil, nil))
	}
	if h.MoreRequests > 0 {
		blocks = append(blocks, homeNote("…and "+strconv.Itoa(h.MoreRequests)+" more of your requests waiting."))
	}
	blocks = append(blocks, slack.NewDividerBlock(), slack.NewHeaderBlock(plain("🔓 Your grants", true)))
	if len(h.Grants) == 0 {
		blocks = append(blocks, homeNote("You have no grant in force. “Approve for …” on a card approves that call and its repeats by the same requester for a while; they are listed here, with Revoke."))
	}
	for i, g := range h.Grants {
		if i == maxHomeGrants {
			blocks = append(blocks, homeNote("…and "+strconv.Itoa(len(h.Grants)-maxHomeGrants)+" more grants; revoke these to see them."))
			break
		}
		blocks = append(blocks, grantBlock(g))
	}
	if h.Partial {
		blocks = append(blocks, homeNote("⚠️ Some pending requests could not be read or their approvers looked up; this list may be incomplete."))
	}
	return blocks[:min(len(blocks), maxViewBlocks)]
}

// HomeView is the Home tab of h, for views.publish.
func HomeView(h HomeContent) slack.HomeTabViewRequest {
	return slack.HomeTabViewRequest{Type: slack.VTHomeTab, CallbackID: "slackbot_home", Blocks: slack.Blocks{BlockSet: HomeBlocks(h)}}
}

func homeNote(text string) slack.Block {
	return slack.NewContextBlock("", mrkdwn(text))
}

// waitingText is a waiting call: the tool, what it does, who asked and
// where, the expiry and the card, why it needs a person.
func waitingText(c Card, it HomeItem) string {
	emoji, word := stateLabel(c)
	lines := []string{
		emoji + " *" + word + ":* " + literal(c.ToolLabel),
		inlineCodeEnds(c.Confirmation, maxHomeConfirmation),
		requesterLine(c),
	}
	status := []string{"Expires " + slackDate(c.ExpiresAt)}
	if c.RequiredApprovals > 1 {
		status = append(status, strconv.Itoa(len(c.Votes))+" of "+strconv.Itoa(c.RequiredApprovals)+" approvals")
	}
	if it.Escalated {
		status = append(status, "🚨 escalated to you")
	}
	status = append(status, cardWhere(it.Message))
	lines = append(lines, strings.Join(status, " · "))
	if why := whyLine(c, 600); why != "" {
		lines = append(lines, why)
	}
	return strings.Join(lines, "\n")
}

// requestText is one of the viewer's own requests: where it stands and
// where its card is.
func requestText(c Card, it HomeItem) string {
	emoji, word := stateLabel(c)
	line := emoji + " *" + word + ":* " + literal(c.ToolLabel) + " · route " + literal(c.Route)
	status := "Expires " + slackDate(c.ExpiresAt) + " · " + cardWhere(it.Message)
	if c.RequiredApprovals > 1 {
		status = strconv.Itoa(len(c.Votes)) + " of " + strconv.Itoa(c.RequiredApprovals) + " approvals · " + status
	}
	return line + "\n" + inlineCodeEnds(c.Confirmation, maxHomeConfirmation) + "\n" + status
}

// cardWhere says where a call's card is.
func cardWhere(ref approval.MessageRef) string {
	if !isChannelID(ref.Channel) {
		return "no card yet"
	}
	return "card in <#" + ref.Channel + ">"
}

// homeActions are a waiting call's buttons: the card's choices that need
// no form (Approve with its confirm dialog, Deny, the grant buttons), with
// the card's action ids and values, so a click decides as a click on the
// card does; nil when the call has none (a question, an external result).
func homeActions(c Card, i int) *slack.ActionBlock {
	var oneClick []approval.Choice
	for _, ch := range c.Choices() {
		if !ch.Form() {
			oneClick = append(oneClick, ch)
		}
	}
	if len(oneClick) == 0 {
		return nil
	}
	return slack.NewActionBlock("home_call."+strconv.Itoa(i), choiceButtons(c, oneClick)...)
}

// grantBlock is one grant with its Revoke button.
func grantBlock(hg HomeGrant) slack.Block {
	g := hg.Grant
	label := hg.ToolLabel
	if strings.TrimSpace(label) == "" {
		label = g.Tool
	}
	who := literal(g.Requester)
	switch {
	case isUserID(g.Requester):
		who = "<@" + g.Requester + ">"
	case g.Name != "":
		// As the card said: the API client's claim, then its key.
		who = literal(g.Name) + ", says " + literal(strings.TrimPrefix(g.Requester, approval.APIClientPrefix))
	}
	args, _ := compactStart(g.Args, maxHomeConfirmation)
	text := literal(label) + " for " + who + " · route " + literal(g.Route) + " · until " + slackDate(g.Until) +
		"\n" + inlineCode(args, maxHomeConfirmation)
	confirm := slack.NewConfirmationBlockObject(plain("Revoke this grant?", false),
		plain(fitPlain("Later calls of "+oneLine(label)+" with these arguments will need an approval again.", maxConfirmText), false),
		plain("Revoke", false), plain("Cancel", false))
	confirm.Style = slack.StyleDanger
	revoke := slack.NewButtonBlockElement(ActionIDRevokeGrant, g.ID, plain("Revoke", true)).WithStyle(slack.StyleDanger).WithConfirm(confirm)
	return slack.NewSectionBlock(mrkdwn(text), nil, slack.NewAccessory(revoke))
}
