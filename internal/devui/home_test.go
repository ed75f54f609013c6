package devui_test

import (
	"encoding/json"
	"net/http"
	"net/url"
	"testing"

	"github.com/slack-go/slack"
	"github.com/slack-go/slack/slackevents"

	"github.com/slackapprove/slackbot/bot"
)

// Opening the Home tab sends a signed app_home_opened for the acting
// person; a click on the Home the app published sends a signed
// block_actions from that Home view, which slackbot reads as a Home click
// (bot.HomeBlocks' buttons, as the app publishes them).
func TestHomeOpenAndClick(t *testing.T) {
	e := newEnv(t)
	status, res := e.call(t, "home/open", map[string]string{"user": "U0ALICE"})
	if status != http.StatusOK || res["ok"] != true {
		t.Fatalf("POST /home/open = %d %v", status, res)
	}
	d := e.hook.only(t)
	ev, err := slackevents.ParseEvent(json.RawMessage(d.Body), slackevents.OptionNoVerifyToken())
	if err != nil || d.Path != "/slack/events" {
		t.Fatalf("%s: %v", d.Path, err)
	}
	opened, ok := ev.InnerEvent.Data.(*slackevents.AppHomeOpenedEvent)
	if !ok || opened.User != "U0ALICE" || opened.Tab != "home" {
		t.Fatalf("event %+v, want app_home_opened by U0ALICE on the home tab", ev.InnerEvent.Data)
	}

	if status, _ := e.call(t, "home/click", map[string]string{"user": "U0ALICE", "action_id": "approve"}); status != http.StatusNotFound {
		t.Errorf("a click before any Home was published: %d, want 404", status)
	}
	card := demoCard()
	view := bot.HomeView(bot.HomeContent{Waiting: []bot.HomeItem{{Card: card}}})
	if _, err := e.api.PublishViewContext(t.Context(), slack.PublishViewContextRequest{UserID: "U0ALICE", View: view}); err != nil {
		t.Fatal(err)
	}
	value := bot.EncodeAction(card.Token, card.ToolCallID)
	if status, _ := e.call(t, "home/click", map[string]string{"user": "U0ALICE", "action_id": "approve", "value": "stale"}); status != http.StatusConflict {
		t.Errorf("a click on a button that changed: %d, want 409", status)
	}
	status, res = e.call(t, "home/click", map[string]string{"user": "U0ALICE", "action_id": "approve", "block_id": "home_call.0", "value": value})
	if status != http.StatusOK || res["ok"] != true {
		t.Fatalf("POST /home/click = %d %v", status, res)
	}
	all := e.hook.all()
	form, err := url.ParseQuery(string(all[len(all)-1].Body))
	if err != nil {
		t.Fatal(err)
	}
	cb, err := bot.ParseInteraction(form.Get("payload"))
	if err != nil {
		t.Fatal(err)
	}
	home, _ := e.fake.Home("U0ALICE")
	act := cb.ActionCallback.BlockActions[0]
	if cb.Container.Type != "view" || cb.View.Type != slack.VTHomeTab || cb.View.ID != home.ID || cb.User.ID != "U0ALICE" ||
		act.ActionID != "approve" || act.Value != value {
		t.Errorf("payload: container %+v, view %s %s, user %s, action %+v; want a click on Alice's Home", cb.Container, cb.View.Type, cb.View.ID, cb.User.ID, act)
	}
}
