package bot

import (
	"strings"
	"testing"
	"time"

	"github.com/slack-go/slack"

	"github.com/slackapprove/slackbot/routing"
)

var stepUpExpires = created.Add(5 * time.Minute)

func goldenStepUp() map[string]StepUpPrompt {
	return map[string]StepUpPrompt{
		"stepup_verify": {Tools: []string{"issue_refund"}, URL: "https://slackbot.example.com/step-up/3q2-7wAbCdEfGhIjKlMnOpQrStUvWxYz0123456789abc", Expires: stepUpExpires, Methods: []string{routing.StepUpWebAuthn}},
		"stepup_verify_batch": {Tools: []string{"issue_refund", "delete_customer", "terraform_apply", "a", "b", "c", "d"},
			URL: "https://slackbot.example.com/step-up/x", Expires: stepUpExpires, Methods: []string{routing.StepUpWebAuthn, routing.StepUpTOTP}},
		"stepup_register":    {Tools: []string{"issue_refund"}, RegisterURL: "https://slackbot.example.com/passkeys/register/r1", RegisterExpires: stepUpExpires},
		"stepup_unavailable": {Tools: []string{"issue_refund"}},
	}
}

// The ephemeral step-up message: what needs the proof, the URL button (or
// Add a passkey), the expiry; within Slack's limits.
func TestStepUpBlocksGolden(t *testing.T) {
	for name, p := range goldenStepUp() {
		t.Run(name, func(t *testing.T) {
			blocks := StepUpBlocks(p)
			checkLimits(t, toJSON(t, slack.Blocks{BlockSet: blocks}))
			roundTrip(t, slack.Blocks{BlockSet: blocks}, &slack.Blocks{})
			checkGolden(t, name, marshalGolden(t, blocks))
			if m := StepUpModal(p); textLen(m.Title.Text) > maxModalTitle {
				t.Errorf("modal title %q too long", m.Title.Text)
			}
		})
	}
}

// The link is a URL button "Verify with your passkey" to exactly the link's
// page; with no passkey, "Add a passkey" to the registration page; never
// both; a tool name cannot mention anyone.
func TestStepUpBlocksButtons(t *testing.T) {
	for name, p := range goldenStepUp() {
		var urls []string
		for _, b := range StepUpBlocks(p) {
			if a, ok := b.(*slack.ActionBlock); ok {
				for _, e := range a.Elements.ElementSet {
					btn := e.(*slack.ButtonBlockElement)
					urls = append(urls, btn.Text.Text+" "+btn.URL)
				}
			}
		}
		var want []string
		switch {
		case p.URL != "":
			want = []string{"Verify with your passkey " + p.URL}
		case p.RegisterURL != "":
			want = []string{"Add a passkey " + p.RegisterURL}
		}
		if strings.Join(urls, "|") != strings.Join(want, "|") {
			t.Errorf("%s: buttons %q, want %q", name, urls, want)
		}
	}
	hostile := StepUpPrompt{Tools: []string{"<!channel> <@U0EVIL>"}, URL: "https://x/step-up/1", Expires: stepUpExpires}
	text := string(toJSONBytes(t, StepUpBlocks(hostile)))
	if strings.Contains(text, "<!channel>") || strings.Contains(text, "<@U0EVIL>") {
		t.Errorf("a tool name mentions: %s", text)
	}
}

// The registration modal and the Home's passkeys within Slack's limits, a
// name a person typed shown, never a mention.
func TestRegisterModalGolden(t *testing.T) {
	view := RegisterModal("https://slackbot.example.com/passkeys/register/r1", stepUpExpires)
	checkLimits(t, toJSON(t, view.Blocks))
	checkGolden(t, "modal_register_passkey", marshalGolden(t, view))
}
