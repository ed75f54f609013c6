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
	// Passkeys is "Your passkeys"; nil where step-up is not set up.
	Passkeys *HomePasskeys
}

// HomeBlocks renders a Home tab: Waiting for you (each call with the
// card's Approve and Deny, the same action ids and values, and the card's
// grant buttons and confirm dialog), Your requests (where each stands and
// where its card is), Your grants (each with Revoke), each with an empty
// state, and Your passkeys where step-up is set up. It stays within
// Slack's 100 blocks and 3000 characters a section.
func HomeBlocks(h HomeContent) []slack.Block {
	var blocks []slack.Block
	if h.Notice != "" {
		blocks = append(blocks, slack.NewSectionBlock(mrkdwn(fit(h.Notice, maxSectionText, "…", func(r rune) string { return string(r) })), nil, nil), slack.NewDividerBlock())
	}
	blocks = append(blocks, slack.NewHeaderBlock(plain(approval.HomeWaitingTitle, true)))
	if len(h.Waiting) == 0 {
		blocks = append(blocks, homeNote(approval.HomeWaitingEmpty))
	}
	for i, it := range h.Waiting {
		c := normalize(it.Card)
		blocks = append(blocks, slack.NewSectionBlock(mrkdwn(waitingText(c, it)), nil, nil))
		if actions := homeActions(c, i); actions != nil {
			blocks = append(blocks, actions)
		}
	}
	if h.MoreWaiting > 0 {
		blocks = append(blocks, homeNote(approval.HomeMoreWaiting(h.MoreWaiting)))
	}
	blocks = append(blocks, slack.NewDividerBlock(), slack.NewHeaderBlock(plain(approval.HomeRequestsTitle, true)))
	if len(h.Requests) == 0 {
		blocks = append(blocks, homeNote(approval.HomeRequestsEmpty))
	}
	for _, it := range h.Requests {
		blocks = append(blocks, slack.NewSectionBlock(mrkdwn(requestText(normalize(it.Card), it)), nil, nil))
	}
	if h.MoreRequests > 0 {
		blocks = append(blocks, homeNote(approval.HomeMoreRequests(h.MoreRequests)))
	}
	blocks = append(blocks, slack.NewDividerBlock(), slack.NewHeaderBlock(plain(approval.HomeGrantsTitle, true)))
	if len(h.Grants) == 0 {
		blocks = append(blocks, homeNote(approval.HomeGrantsEmpty))
	}
	for i, g := range h.Grants {
		if i == maxHomeGrants {
			blocks = append(blocks, homeNote(approval.HomeMoreGrants(len(h.Grants)-maxHomeGrants)))
			break
		}
		blocks = append(blocks, grantBlock(g))
	}
	if h.Partial {
		blocks = append(blocks, homeNote(approval.HomePartial))
	}
	if h.Passkeys == nil {
		return blocks[:min(len(blocks), maxViewBlocks)]
	}
	// "Your passkeys" always fits: the lists above give way to it.
	passkeys := passkeyBlocks(h.Passkeys)
	return append(blocks[:min(len(blocks), maxViewBlocks-len(passkeys))], passkeys...)
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
	m := cardMarks{}
	lines := []string{
		approval.HomeTitle(c, m),
		inlineCodeEnds(summary(c), maxHomeConfirmation),
		requesterLine(c),
	}
	status := []string{approval.ExpiresWords(c, m)}
	if n := approval.ApprovalCount(c); n != "" {
		status = append(status, n)
	}
	if it.Escalated {
		status = append(status, approval.HomeEscalated)
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
	m := cardMarks{}
	line := approval.HomeTitle(c, m) + " · route " + m.Name(c.Route)
	status := approval.ExpiresWords(c, m) + " · " + cardWhere(it.Message)
	if n := approval.ApprovalCount(c); n != "" {
		status = n + " · " + status
	}
	return line + "\n" + inlineCodeEnds(summary(c), maxHomeConfirmation) + "\n" + status
}

// cardWhere says where a call's card is; a reference that is no Slack
// channel's is no card.
func cardWhere(ref approval.MessageRef) string {
	if !isChannelID(ref.Channel) {
		ref = approval.MessageRef{}
	}
	return approval.CardWhere(ref, cardMarks{})
}

// homeActions are a waiting call's buttons: the card's choices that need
// no form (Approve with its confirm dialog, Deny, the grant buttons), with
// the card's action ids and values, so a click decides as a click on the
// card does; nil when the call has none (a question, an external result).
// An agent's always-allow rule is offered on the card alone, which shows
// the rule whole.
func homeActions(c Card, i int) *slack.ActionBlock {
	var oneClick []approval.Choice
	for _, ch := range c.Choices() {
		if !ch.Form() && ch.Kind != approval.ChooseApproveAlways {
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
	args, _ := compactStart(g.Args, maxHomeConfirmation)
	text := approval.GrantLine(g, label, cardMarks{}) + "\n" + inlineCode(args, maxHomeConfirmation)
	title, question := approval.RevokeWords(oneLine(label))
	confirm := slack.NewConfirmationBlockObject(plain(title, false),
		plain(fitPlain(question, maxConfirmText), false),
		plain("Revoke", false), plain("Cancel", false))
	confirm.Style = slack.StyleDanger
	revoke := slack.NewButtonBlockElement(ActionIDRevokeGrant, g.ID, plain("Revoke", true)).WithStyle(slack.StyleDanger).WithConfirm(confirm)
	return slack.NewSectionBlock(mrkdwn(text), nil, slack.NewAccessory(revoke))
}
