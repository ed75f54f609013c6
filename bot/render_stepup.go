package bot

import (
	"cmp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/slack-go/slack"

	"github.com/slackapprove/slackbot/routing"
)

// Step-up in Block Kit: the answer to an Approve that needs a passkey
// (an ephemeral message, or a modal on App Home), the registration link,
// and App Home's "Your passkeys". Pure functions of their input, as the
// card's are (docs/ARCHITECTURE.md, "Packages": rendering apart from
// transport).

// The action_id of the step-up buttons. The URL buttons open slackbot's
// own page in the browser; Slack still sends their click, which is
// acknowledged and otherwise ignored.
const (
	ActionIDStepUpVerify    = "step_up_verify"   // URL: PUBLIC_URL/step-up/<link id>
	ActionIDPasskeyRegister = "passkey_register" // URL: a registration link
	// ActionIDPasskeyAdd (App Home) makes a registration link and shows it
	// in a modal; ActionIDPasskeyRemove removes the passkey its value
	// names, after Slack's confirm dialog.
	ActionIDPasskeyAdd    = "passkey_add"
	ActionIDPasskeyRemove = "passkey_remove"
)

// urlButton reports whether actionID is one of the buttons that only
// open a URL: their click decides nothing.
func urlButton(actionID string) bool {
	return actionID == ActionIDStepUpVerify || actionID == ActionIDPasskeyRegister
}

// Bounds of the step-up blocks.
const (
	maxStepUpTools  = 5  // tools named in a step-up message; the rest are counted
	maxHomePasskeys = 10 // passkeys listed on App Home (stepup keeps at most 10)
	maxPasskeyName  = 100
	// maxPasskeyButtonValue is Slack's limit on a button's value, which
	// holds a passkey's id (a WebAuthn credential id is at most 1023
	// bytes, 1364 in base64url).
	maxPasskeyButtonValue = 2000
)

// StepUpPrompt is what the answer to an Approve that needs step-up says.
type StepUpPrompt struct {
	// Tools are the calls awaiting the person's proof, as cards label
	// their tools (one for a click on a card; a batch's for Approve all).
	Tools []string
	// URL is the step-up page of the link made for this click, and
	// Expires when the link does; empty when the person must first
	// register (RegisterURL) or step-up is not set up (neither).
	URL     string
	Expires time.Time
	// Methods are the route's step_up_methods: "webauthn", "totp".
	Methods []string
	// RegisterURL, when the person has no credential the route accepts,
	// is a single-use registration page, expiring RegisterExpires.
	RegisterURL     string
	RegisterExpires time.Time
}

// stepUpHeadline leads every step-up message; its words are the ones
// approval.ESTEPUP's explanation starts with.
const stepUpHeadline = "This approval needs your passkey."

// StepUpText is the notification text of a step-up message (what Slack
// shows where blocks are not rendered).
func StepUpText(p StepUpPrompt) string {
	switch {
	case p.URL != "":
		return stepUpHeadline + " Nothing is approved until you verify: " + p.URL
	case p.RegisterURL != "":
		return stepUpHeadline + " You have none registered yet: add one, then click Approve again."
	}
	return stepUpHeadline + " Nothing was approved."
}

// StepUpBlocks render a step-up message: what needs the proof and why,
// then "Verify with your passkey" (the link, single use, with its expiry),
// or, for a person without a credential the route accepts, "Add a
// passkey", or, where step-up is not set up, who can fix that. Nothing
// is approved by the click that led here, and the message says so.
func StepUpBlocks(p StepUpPrompt) []slack.Block {
	m := cardMarks{}
	what := stepUpWhat(p.Tools) + " is on a route that asks its approvers to prove, on a device they hold, that they approve it themselves."
	if len(p.Tools) > 1 {
		what = stepUpWhat(p.Tools) + " are on routes that ask their approvers to prove, on a device they hold, that they approve them themselves."
	}
	lead := ":closed_lock_with_key: *" + stepUpHeadline + "* " + what + " Nothing has been approved yet."
	blocks := []slack.Block{slack.NewSectionBlock(mrkdwn(lead), nil, nil)}
	switch {
	case p.URL != "":
		how := "Your device asks for your fingerprint, face, PIN or security key"
		if slices.Contains(p.Methods, routing.StepUpTOTP) {
			how += " (or a code from your authenticator app)"
		}
		verify := slack.NewButtonBlockElement(ActionIDStepUpVerify, "", plain("Verify with your passkey", false)).WithStyle(slack.StylePrimary)
		verify.URL = p.URL
		blocks = append(blocks,
			slack.NewActionBlock("step_up_actions", verify),
			homeNote(how+". The link is for you alone, works once, and expires "+m.Time(p.Expires)+"."))
	case p.RegisterURL != "":
		add := slack.NewButtonBlockElement(ActionIDPasskeyRegister, "", plain("Add a passkey", false)).WithStyle(slack.StylePrimary)
		add.URL = p.RegisterURL
		blocks = append(blocks,
			slack.NewSectionBlock(mrkdwn("You have no passkey registered with slackbot yet. Add one (it takes a minute), then click Approve again."), nil, nil),
			slack.NewActionBlock("step_up_actions", add),
			homeNote("The link is for you alone, works once, and expires "+m.Time(p.RegisterExpires)+"."))
	default:
		blocks = append(blocks, homeNote("This slackbot has no page to verify passkeys on (its PUBLIC_URL is not set). Ask whoever runs it, or deny the call."))
	}
	return blocks
}

// stepUpWhat names the calls awaiting proof: "`issue_refund`", "3 calls
// (`a`, `b`, `c`)".
func stepUpWhat(tools []string) string {
	m := cardMarks{}
	switch len(tools) {
	case 0:
		return "This call"
	case 1:
		return m.Name(tools[0])
	}
	names := make([]string, 0, maxStepUpTools)
	for _, t := range tools[:min(len(tools), maxStepUpTools)] {
		names = append(names, m.Name(t))
	}
	if more := len(tools) - maxStepUpTools; more > 0 {
		names = append(names, strconv.Itoa(more)+" more")
	}
	return strconv.Itoa(len(tools)) + " calls (" + strings.Join(names, ", ") + ")"
}

// StepUpModal holds a step-up message where no ephemeral message can be
// sent: App Home.
func StepUpModal(p StepUpPrompt) slack.ModalViewRequest {
	return infoModal("step_up", "Verify it's you", StepUpBlocks(p))
}

// RegisterModal holds a single-use registration link, for "Add a
// passkey" on App Home (which has no ephemeral messages).
func RegisterModal(link string, expires time.Time) slack.ModalViewRequest {
	return infoModal("passkey_register", "Add a passkey", RegisterBlocks(link, expires))
}

// RegisterBlocks say what a passkey is for and hold the registration
// link (in RegisterModal, or a direct message when the modal could not
// open).
func RegisterBlocks(link string, expires time.Time) []slack.Block {
	add := slack.NewButtonBlockElement(ActionIDPasskeyRegister, "", plain("Add a passkey", false)).WithStyle(slack.StylePrimary)
	add.URL = link
	return []slack.Block{
		slack.NewSectionBlock(mrkdwn(":key: A passkey lets you approve calls on routes that ask for step-up: your phone, laptop or security key keeps it, and unlocks it with your fingerprint, face or PIN. Nobody holding only your Slack session can use it."), nil, nil),
		slack.NewActionBlock("passkey_register_actions", add),
		homeNote("The link is for you alone, works once, and expires " + cardMarks{}.Time(expires) + "."),
	}
}

// infoModal is a modal with nothing to submit.
func infoModal(callbackID, title string, blocks []slack.Block) slack.ModalViewRequest {
	return slack.ModalViewRequest{
		Type: slack.VTModal, CallbackID: callbackID,
		Title:  plain(fitPlain(title, maxModalTitle), false),
		Close:  plain("Close", false),
		Blocks: slack.Blocks{BlockSet: blocks},
	}
}

// HomePasskeys is App Home's "Your passkeys": shown when step-up is set
// up (Passkeys configured).
type HomePasskeys struct {
	List []PasskeyInfo
	// Failed: the list could not be read; Add a passkey still works.
	Failed bool
}

// passkeyBlocks render "Your passkeys": each credential (name, added,
// last used) with Remove behind Slack's confirm dialog, then "Add a
// passkey".
func passkeyBlocks(h *HomePasskeys) []slack.Block {
	blocks := []slack.Block{slack.NewDividerBlock(), slack.NewHeaderBlock(plain("Your passkeys", true))}
	switch {
	case h.Failed:
		blocks = append(blocks, homeNote("slackbot could not read your passkeys just now. Open this tab again in a moment."))
	case len(h.List) == 0:
		blocks = append(blocks, homeNote("You have no passkey yet. Routes that ask for step-up need one before you can approve their calls."))
	}
	for i, p := range h.List {
		if i == maxHomePasskeys {
			blocks = append(blocks, homeNote(strconv.Itoa(len(h.List)-maxHomePasskeys)+" more not shown."))
			break
		}
		blocks = append(blocks, passkeyBlock(p))
	}
	add := slack.NewButtonBlockElement(ActionIDPasskeyAdd, "add", plain("Add a passkey", false))
	return append(blocks, slack.NewActionBlock("passkey_add_actions", add))
}

// passkeyBlock is one credential with its Remove button.
func passkeyBlock(p PasskeyInfo) slack.Block {
	m := cardMarks{}
	name := strings.TrimSpace(p.Name)
	emoji := ":key:"
	if p.method() == routing.StepUpTOTP {
		emoji = ":1234:"
		name = cmp.Or(name, "Authenticator app (one-time codes)")
	}
	name = cmp.Or(name, "Passkey")
	text := emoji + " *" + fit(oneLine(name), maxPasskeyName, "…", escapeRune) + "* · added " + m.Time(p.Added)
	if p.LastUsed.IsZero() {
		text += " · never used"
	} else {
		text += " · last used " + m.Time(p.LastUsed)
	}
	confirm := slack.NewConfirmationBlockObject(plain("Remove this passkey?", false),
		plain(fitPlain("“"+name+"” will no longer verify your approvals. Calls on routes that ask for step-up need another passkey of yours.", maxConfirmText), false),
		plain("Remove", false), plain("Cancel", false))
	confirm.Style = slack.StyleDanger
	if len(p.ID) > maxPasskeyButtonValue {
		// Slack would refuse the whole Home for one such button.
		return slack.NewSectionBlock(mrkdwn(text), nil, nil)
	}
	remove := slack.NewButtonBlockElement(ActionIDPasskeyRemove, p.ID, plain("Remove", false)).WithStyle(slack.StyleDanger).WithConfirm(confirm)
	return slack.NewSectionBlock(mrkdwn(text), nil, slack.NewAccessory(remove))
}
