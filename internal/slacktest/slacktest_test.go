package slacktest_test

import (
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/slack-go/slack"
	"github.com/slack-go/slack/slackevents"

	"github.com/slackapprove/slackbot/bot"
	"github.com/slackapprove/slackbot/internal/slackfake"
	"github.com/slackapprove/slackbot/internal/slacktest"
)

const secret = "test-signing-secret-0123456789"

// card is a message with an Approve and a Deny button, as slackfake keeps it.
func card(t *testing.T) slackfake.Message {
	t.Helper()
	blocks := []slack.Block{slack.NewActionBlock(bot.BlockIDActions,
		slack.NewButtonBlockElement(bot.ActionIDApprove, "approve-value", slack.NewTextBlockObject(slack.PlainTextType, "Approve", false, false)),
		slack.NewButtonBlockElement(bot.ActionIDDeny, "deny-value", slack.NewTextBlockObject(slack.PlainTextType, "Deny", false, false)),
	)}
	raw, err := json.Marshal(blocks)
	if err != nil {
		t.Fatal(err)
	}
	return slackfake.Message{Channel: "C0APPROVALS", TS: "1700000000.000100", Text: "Approval needed", Blocks: blocks, BlocksJSON: raw}
}

func TestButton(t *testing.T) {
	m := card(t)
	for _, tc := range []struct {
		actionID  string
		wantOK    bool
		wantValue string
	}{
		{bot.ActionIDApprove, true, "approve-value"},
		{bot.ActionIDDeny, true, "deny-value"},
		{bot.ActionIDDenyReason, false, ""},
	} {
		btn, ok := slacktest.Button(m, tc.actionID)
		if ok != tc.wantOK {
			t.Errorf("Button(%q): got ok %v, want %v", tc.actionID, ok, tc.wantOK)
			continue
		}
		if ok && btn.Value != tc.wantValue {
			t.Errorf("Button(%q): got value %q, want %q", tc.actionID, btn.Value, tc.wantValue)
		}
	}
}

// TestPayloadsParse: what slacktest builds is what bot reads from Slack.
func TestPayloadsParse(t *testing.T) {
	m := card(t)
	btn, _ := slacktest.Button(m, bot.ActionIDApprove)
	click, err := bot.ParseInteraction(string(slacktest.Click{Team: "T0FAKE", User: "U0ALICE", Message: m, Button: btn, TriggerID: "1.trigger"}.Payload()))
	if err != nil {
		t.Fatalf("parse click: %v", err)
	}
	if click.Type != slack.InteractionTypeBlockActions || click.User.ID != "U0ALICE" || click.Team.ID != "T0FAKE" ||
		click.TriggerID != "1.trigger" || click.Container.ChannelID != m.Channel || click.Container.MessageTs != m.TS {
		t.Errorf("click: got type %q, user %q, team %q, trigger %q, container %+v", click.Type, click.User.ID, click.Team.ID, click.TriggerID, click.Container)
	}
	if acts := click.ActionCallback.BlockActions; len(acts) != 1 || acts[0].ActionID != bot.ActionIDApprove || acts[0].Value != "approve-value" || acts[0].BlockID != bot.BlockIDActions {
		t.Errorf("click: got actions %+v, want the Approve button", acts)
	}

	view := slackfake.View{ID: "V1", Hash: "h1", CallbackID: "deny_reason", PrivateMetadata: "meta"}
	sub, err := bot.ParseInteraction(string(slacktest.Submission{Team: "T0FAKE", User: "U0BOB", View: view,
		Values: map[string]map[string]string{"block": {"action": "no, thanks"}}}.Payload()))
	if err != nil {
		t.Fatalf("parse submission: %v", err)
	}
	if sub.Type != slack.InteractionTypeViewSubmission || sub.User.ID != "U0BOB" || sub.View.ID != "V1" ||
		sub.View.CallbackID != "deny_reason" || sub.View.PrivateMetadata != "meta" || sub.View.Hash != "h1" {
		t.Errorf("submission: got type %q, user %q, view %+v", sub.Type, sub.User.ID, sub.View)
	}
	if got := sub.View.State.Values["block"]["action"].Value; got != "no, thanks" {
		t.Errorf("submission: got input %q, want %q", got, "no, thanks")
	}

	ev, err := slackevents.ParseEvent(slacktest.Mention{Team: "T0FAKE", User: "U0CAROL", Channel: "C0GENERAL", Text: "<@U0BOT> hi", TS: "1.000001"}.Body(),
		slackevents.OptionNoVerifyToken())
	if err != nil {
		t.Fatalf("parse mention: %v", err)
	}
	mention, ok := ev.InnerEvent.Data.(*slackevents.AppMentionEvent)
	if !ok {
		t.Fatalf("mention: got inner event %T, want an app_mention", ev.InnerEvent.Data)
	}
	if mention.User != "U0CAROL" || mention.Channel != "C0GENERAL" || mention.Text != "<@U0BOT> hi" || mention.TimeStamp != "1.000001" {
		t.Errorf("mention: got %+v", mention)
	}
	if cb, ok := ev.Data.(*slackevents.EventsAPICallbackEvent); !ok || cb.EventID != "Ev1.000001" || cb.TeamID != "T0FAKE" {
		t.Errorf("mention: got callback %+v, want event_id Ev1.000001 in T0FAKE", ev.Data)
	}
}

// TestPost: a signed post passes bot.VerifySlack with the same secret, and
// is refused with another; the answer's body can be read after Post.
func TestPost(t *testing.T) {
	srv := httptest.NewServer(bot.VerifySlack(secret, slog.New(slog.DiscardHandler), http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, r.PostFormValue("payload"))
	})))
	t.Cleanup(srv.Close)
	for _, tc := range []struct {
		name       string
		secret     string
		wantStatus int
	}{
		{"same secret", secret, http.StatusOK},
		{"other secret", "another-signing-secret-0123456789", http.StatusUnauthorized},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, err := slacktest.Post(t.Context(), srv.URL, slacktest.FormContentType, slacktest.Form([]byte(`{"a":"b&c"}`)), tc.secret, time.Now())
			if err != nil {
				t.Fatal(err)
			}
			if resp.StatusCode != tc.wantStatus {
				t.Fatalf("got status %d, want %d", resp.StatusCode, tc.wantStatus)
			}
			body, err := io.ReadAll(resp.Body)
			if err != nil {
				t.Fatal(err)
			}
			if tc.wantStatus == http.StatusOK && string(body) != `{"a":"b&c"}` {
				t.Errorf("got body %q, want the payload back", body)
			}
		})
	}
}
