package main

import (
	"context"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/slackapprove/slackbot/approval"
	"github.com/slackapprove/slackbot/bot"
)

// stepUpRoutes: deletions need Alice or Bob, verified with a passkey.
const stepUpRoutes = `
routes:
  - name: deletions
    when: {tools: ["delete_*"]}
    channel: C0APPROVALS
    approvers: {users: [U0ALICE, U0BOB]}
    timeout: 1h
    step_up: true
`

// wiredPasskeys stands in for package stepup's Handler as newApp wires it:
// built over the app's Service, with the Bot's Notify.
type wiredPasskeys struct {
	svc    *approval.Service
	notify func(ctx context.Context, team, user, text string)
}

func (w *wiredPasskeys) RegistrationLink(_ context.Context, _, user string) (string, time.Time, error) {
	return "https://approvals.example.com/passkeys/register/r-" + user, time.Now().Add(5 * time.Minute), nil
}

func (w *wiredPasskeys) List(context.Context, string, string) ([]bot.PasskeyInfo, error) {
	return []bot.PasskeyInfo{{ID: "cred-1", Name: "laptop", Added: time.Now()}}, nil
}

func (w *wiredPasskeys) Remove(context.Context, string, string, string) error { return nil }

// TestStepUpThroughTheApp: on a route with step_up, Alice's Approve on the
// card records nothing and leaves the card pending; she alone is answered
// with a link to PUBLIC_URL/step-up/<id>, a link the store keeps, bound
// to her. Completing it (what package stepup does once her passkey
// verified) approves the call, and the card says "verified with a
// passkey". The step-up pages get the app's Service and a Notify that
// reaches the person in a direct message.
func TestStepUpThroughTheApp(t *testing.T) {
	t.Parallel()
	w := &wiredPasskeys{}
	e := newEnv(t, envOptions{routes: stepUpRoutes, model: deleteNamedModel(), publicURL: "https://approvals.example.com",
		passkeys: func(svc *approval.Service, notify func(ctx context.Context, team, user, text string)) (bot.Passkeys, error) {
			w.svc, w.notify = svc, notify
			return w, nil
		}})
	if w.svc != e.app.svc || w.notify == nil {
		t.Fatal("the step-up pages were not built over the app's Service with a Notify")
	}
	e.mention(carol, general, "delete customer C-1")
	card := e.waitCards(1)[0]
	e.waitCardRecorded()

	if status := e.click(alice, card, "approve"); status != 200 {
		t.Fatalf("click: status %d", status)
	}
	e.waitFor("Alice's step-up message", func() bool { return len(e.slack.Ephemerals(alice)) > 0 })
	msg := e.slack.Ephemerals(alice)[0]
	m := regexp.MustCompile(`https://approvals\.example\.com/step-up/([A-Za-z0-9_-]+)`).FindStringSubmatch(string(msg.BlocksJSON))
	if m == nil || !strings.Contains(string(msg.BlocksJSON), "Verify with your passkey") {
		t.Fatalf("step-up message without the link: %s", msg.BlocksJSON)
	}
	link, r, err := e.app.svc.StepUpLink(t.Context(), m[1])
	if err != nil || link.User != alice || link.Team != testTeam || len(link.Calls) != 1 || r.Token == "" {
		t.Fatalf("the stored link: %+v, %v", link, err)
	}
	if text := cardText(e.latest(card)); strings.Contains(text, "Approved") {
		t.Errorf("the card changed: %s", text)
	}
	if n := len(e.tools.Runs("delete_customer")); n != 0 {
		t.Errorf("the tool ran %d times before step-up", n)
	}
	if other := e.slack.Ephemerals(bob); len(other) != 0 {
		t.Errorf("Bob was told: %+v", other)
	}

	proof := approval.StepUp{Method: "webauthn", AMR: []string{"hwk"}, CredentialID: "AQID", At: e.clock.Now()}
	if _, err := e.app.svc.CompleteStepUp(t.Context(), m[1], link.Team, alice, proof); err != nil {
		t.Fatalf("CompleteStepUp: %v", err)
	}
	e.waitFor("the card to say how it was verified", func() bool {
		return strings.Contains(cardText(e.latest(card)), "verified with a passkey")
	})
	e.waitFor("the deletion", func() bool { return len(e.tools.Runs("delete_customer")) == 1 })

	w.notify(t.Context(), testTeam, alice, "A passkey “laptop” was added to your slackbot account.")
	e.waitFor("the direct message", func() bool {
		for _, dm := range e.slack.Messages("D" + alice[1:]) {
			if strings.Contains(dm.Text, "was added to your slackbot account") {
				return true
			}
		}
		return false
	})
}
