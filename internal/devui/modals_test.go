package devui_test

import (
	"io"
	"net/http"
	"net/url"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/slack-go/slack"
	"github.com/slackapprove/slackbot/approval"
	"github.com/slackapprove/slackbot/bot"
)

// openModal opens bot's deny-reason modal for U0ALICE as slackbot would.
func openModal(t *testing.T, e *env, v slack.ModalViewRequest) string {
	t.Helper()
	trigger := e.fake.IssueTrigger("U0ALICE", "")
	resp, err := e.api.OpenViewContext(t.Context(), trigger, v)
	if err != nil {
		t.Fatalf("views.open: %v", err)
	}
	return resp.ID
}

func TestSubmitDeliversViewSubmission(t *testing.T) {
	e := newEnv(t)
	card := demoCard()
	ref := approval.MessageRef{Channel: "C0APPROVALS", ID: e.postCard(t, card)}
	id := openModal(t, e, bot.DenyReasonModal(card, ref))

	status, res := e.call(t, "submit", map[string]any{
		"user": "U0ALICE", "view_id": id,
		"values": map[string]map[string]string{bot.BlockIDDenyReason: {bot.ActionIDDenyReasonInput: "customer a is a test account"}},
	})
	if status != http.StatusOK || res["ok"] != true {
		t.Fatalf("POST /submit = %d %v, want 200 ok", status, res)
	}
	d := e.hook.only(t)
	form, _ := url.ParseQuery(string(d.Body))
	cb, err := bot.ParseInteraction(form.Get("payload"))
	if err != nil {
		t.Fatalf("ParseInteraction: %v\n%s", err, form.Get("payload"))
	}
	meta, err := bot.DecodeModalMetadata(cb.View.PrivateMetadata)
	if err != nil {
		t.Fatalf("private_metadata: %v", err)
	}
	got := map[string]string{
		"type":        string(cb.Type),
		"user":        cb.User.ID,
		"team":        cb.Team.ID,
		"view.id":     cb.View.ID,
		"view.type":   string(cb.View.Type),
		"callback_id": cb.View.CallbackID,
		"value":       cb.View.State.Values[bot.BlockIDDenyReason][bot.ActionIDDenyReasonInput].Value,
		"input.type":  string(cb.View.State.Values[bot.BlockIDDenyReason][bot.ActionIDDenyReasonInput].Type),
		"token":       meta.Token,
		"message":     meta.Message.ID,
	}
	want := map[string]string{
		"type":        "view_submission",
		"user":        "U0ALICE",
		"team":        "T0FAKE",
		"view.id":     id,
		"view.type":   "modal",
		"callback_id": bot.CallbackDenyReason,
		"value":       "customer a is a test account",
		"input.type":  "plain_text_input",
		"token":       card.Token,
		"message":     ref.ID,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("view_submission payload (-want +got):\n%s", diff)
	}
	if cb.View.Hash == "" || cb.View.TeamID != "T0FAKE" || cb.TriggerID == "" {
		t.Errorf("view hash %q team %q trigger %q, want all set", cb.View.Hash, cb.View.TeamID, cb.TriggerID)
	}
	if v, _ := e.fake.View(id); !v.Closed {
		t.Error("modal still open after slackbot accepted the submission")
	}
}

func TestSubmitShowsErrors(t *testing.T) {
	e := newEnv(t)
	card := demoCard()
	id := openModal(t, e, bot.DenyReasonModal(card, approval.MessageRef{Channel: "C0APPROVALS", ID: e.postCard(t, card)}))
	e.hook.setReply(func(w http.ResponseWriter, d delivery) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"response_action":"errors","errors":{"deny_reason":"Say more than that."}}`)
	})

	// Slack's client refuses an empty required input without sending.
	status, res := e.call(t, "submit", map[string]any{"user": "U0ALICE", "view_id": id, "values": map[string]any{}})
	wantErrs := map[string]any{bot.BlockIDDenyReason: "Please complete this required field."}
	if status != http.StatusOK || res["ok"] != false || !cmp.Equal(res["errors"], wantErrs) {
		t.Errorf("empty submit = %d %v, want 200 with errors %v", status, res, wantErrs)
	}
	if n := len(e.hook.all()); n != 0 {
		t.Fatalf("slackbot received %d requests for an incomplete modal, want none", n)
	}

	status, res = e.call(t, "submit", map[string]any{
		"user": "U0ALICE", "view_id": id,
		"values": map[string]map[string]string{bot.BlockIDDenyReason: {bot.ActionIDDenyReasonInput: "no"}},
	})
	wantErrs = map[string]any{bot.BlockIDDenyReason: "Say more than that."}
	if status != http.StatusOK || res["ok"] != false || !cmp.Equal(res["errors"], wantErrs) {
		t.Errorf("submit slackbot refuses = %d %v, want 200 with errors %v", status, res, wantErrs)
	}
	if v, _ := e.fake.View(id); v.Closed {
		t.Error("modal closed although slackbot answered with errors")
	}

	for name, req := range map[string]map[string]any{
		"unknown input":  {"user": "U0ALICE", "view_id": id, "values": map[string]map[string]string{"nope": {"x": "y"}}},
		"someone else's": {"user": "U0BOB", "view_id": id, "values": map[string]any{}},
		"unknown view":   {"user": "U0ALICE", "view_id": "V0NOPE", "values": map[string]any{}},
	} {
		if status, res := e.call(t, "submit", req); status < 400 || res["ok"] != false {
			t.Errorf("%s: POST /submit = %d %v, want a refusal", name, status, res)
		}
	}
}

func TestClose(t *testing.T) {
	e := newEnv(t)
	v := bot.ArgsModal(demoCard())
	v.NotifyOnClose = true
	id := openModal(t, e, v)
	status, res := e.call(t, "close", map[string]string{"user": "U0ALICE", "view_id": id})
	if status != http.StatusOK || res["ok"] != true {
		t.Fatalf("POST /close = %d %v, want 200 ok", status, res)
	}
	if got, _ := e.fake.View(id); !got.Closed {
		t.Error("modal still open after /close")
	}
	form, _ := url.ParseQuery(string(e.hook.only(t).Body))
	cb, err := bot.ParseInteraction(form.Get("payload"))
	if err != nil || cb.Type != slack.InteractionTypeViewClosed || cb.View.ID != id {
		t.Errorf("notify_on_close payload = %+v (%v), want view_closed for %s", cb, err, id)
	}
	if status, _ := e.call(t, "close", map[string]string{"user": "U0ALICE", "view_id": id}); status != http.StatusNotFound {
		t.Errorf("closing a closed modal = %d, want 404", status)
	}
}
