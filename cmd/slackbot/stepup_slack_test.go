package main

import (
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/slackapprove/slackbot/internal/webauthntest"
)

// TestStepUpThroughTheApp: on a route with step_up, Alice (who added a
// passkey on the registration page, and was told so in a direct message)
// clicks Approve on the card: nothing is recorded, the card stays pending,
// and she alone is answered with a link to PUBLIC_URL/step-up/<id>, bound
// to her. Her passkey's assertion on that page approves the call: the
// tool runs once and the card says "verified with a passkey".
func TestStepUpThroughTheApp(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{routes: stepUpRoutes, model: deleteNamedModel(), publicURL: "https://" + stepUpHost})
	p := pages{t, e}
	key := p.register(alice)
	e.waitFor("the direct message saying a passkey was added", func() bool {
		for _, dm := range e.slack.Messages("D" + alice[1:]) {
			if strings.Contains(dm.Text, "laptop") {
				return true
			}
		}
		return false
	})

	e.mention(carol, general, "delete customer C-1")
	card := e.waitCards(1)[0]
	e.waitCardRecorded()
	if status := e.click(alice, card, "approve"); status != 200 {
		t.Fatalf("click: status %d", status)
	}
	e.waitFor("Alice's step-up message", func() bool { return len(e.slack.Ephemerals(alice)) > 0 })
	msg := e.slack.Ephemerals(alice)[0]
	m := regexp.MustCompile(`https://slackbot\.example\.com/step-up/([A-Za-z0-9_-]+)`).FindStringSubmatch(string(msg.BlocksJSON))
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

	code, body := p.do(http.MethodGet, "/step-up/"+m[1], nil, stepUpHost)
	if code != http.StatusOK {
		t.Fatalf("step-up page: %d %s", code, body)
	}
	assertion := key.Get(t, p.challenge(body), "https://"+stepUpHost, webauthntest.FlagUP|webauthntest.FlagUV)
	if code, body := p.post("/step-up/"+m[1], map[string]any{"credential": assertion}); code != http.StatusOK {
		t.Fatalf("step-up: %d %s", code, body)
	}
	e.waitFor("the card to say how it was verified", func() bool {
		return strings.Contains(cardText(e.latest(card)), "verified with a passkey")
	})
	e.waitFor("the deletion", func() bool { return len(e.tools.Runs("delete_customer")) == 1 })
}
