package bot

import (
	"strings"
	"testing"
)

// Notify sends the person a direct message (chat.postMessage to their
// user id), whose text cannot mention or link: it may quote a passkey's
// name the person typed.
func TestNotifyDirectMessage(t *testing.T) {
	e := newStepUpEnv(t, nil)
	e.bot.cards.Notify(t.Context(), smTeam, smApprover, "A passkey “<!channel> <https://evil.example|x>” was added to your account.")
	msgs := e.fake.Messages("D" + smApprover[1:])
	if len(msgs) != 1 {
		t.Fatalf("%d direct messages, want 1", len(msgs))
	}
	if text := msgs[0].Text; strings.Contains(text, "<!channel>") || strings.Contains(text, "<https://") || !strings.Contains(text, "was added to your account") {
		t.Errorf("direct message %q: want the text, escaped", text)
	}
}

// On App Home, when the step-up modal cannot open (the click's three
// seconds ran out), the link is at the top of the person's Home instead.
func TestStepUpFromHomeWithoutModalPublishesNotice(t *testing.T) {
	e := newStepUpEnv(t, nil)
	e.passkeys.add(smTeam, smApprover, PasskeyInfo{ID: "cred-1", Added: created})
	e.fake.ErrorNext("views.open", "expired_trigger_id", 1)
	e.signedClick(t, homePayload(smApprover, ActionIDApprove, EncodeAction(e.approvals.a.Token, smCallID)))
	e.settle()
	links := e.links.savedLinks()
	if len(links) != 1 {
		t.Fatalf("%d links, want 1", len(links))
	}
	home, ok := e.fake.Home(smApprover)
	if !ok || !strings.Contains(string(home.JSON), testPublicURL+"/step-up/"+links[0].ID+"|Verify with your passkey") {
		t.Errorf("the Home does not hold the link: %s", home.JSON)
	}
	if d := e.decisions(); len(d) != 0 {
		t.Errorf("decisions recorded: %+v, want none", d)
	}
}
