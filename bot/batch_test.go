package bot_test

import (
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/slackapprove/slackbot/agentrunner"
	"github.com/slackapprove/slackbot/approval"
	"github.com/slackapprove/slackbot/bot"
	"github.com/slackapprove/slackbot/store"
)

const batchSecret = "batch-signing-secret"

// batchEnv is the Bot over the real Service and store (embedded Redis),
// its cards in a fake Slack, behind the signature check as routes.go
// mounts it.
type batchEnv struct {
	*openEnv
	bot     *bot.Bot
	handler http.Handler
}

func newBatchEnv(t *testing.T) *batchEnv {
	t.Helper()
	e := newOpenEnv(t)
	b := bot.New(bot.Config{Slack: e.api, Service: e.svc, Cards: e.cards, Usergroups: e.groups, TeamID: "T0DEMO",
		Now: func() time.Time { return e.now }})
	t.Cleanup(b.Close)
	return &batchEnv{openEnv: e, bot: b, handler: bot.VerifySlack(batchSecret, slog.New(slog.DiscardHandler), b.HandleInteraction())}
}

// open opens an API request of the billing client with calls, and returns
// it with its cards posted.
func (e *batchEnv) open(t *testing.T, calls ...agentrunner.ToolCallPart) *approval.Request {
	t.Helper()
	token := agentrunner.NewToken()
	if _, err := e.svc.Open(t.Context(), approval.Opening{Token: token, Origin: approval.Origin{Client: "billing"},
		Requests: agentrunner.DeferredToolRequests{Approvals: calls}}); err != nil {
		t.Fatal(err)
	}
	r, err := e.store.Get(t.Context(), token)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// click sends user's click on the button actionID of the message at ref,
// with value, as Slack sends a block_actions payload: form-encoded and
// signed with secret. It returns the status of the answer.
func (e *batchEnv) click(t *testing.T, secret, user string, ref approval.MessageRef, actionID, value string) int {
	t.Helper()
	return e.send(t, secret, map[string]any{
		"type": "block_actions", "user": map[string]any{"id": user}, "team": map[string]any{"id": "T0DEMO"},
		"trigger_id": "trigger-1", "api_app_id": "A0APP",
		"container": map[string]any{"type": "message", "channel_id": ref.Channel, "message_ts": ref.ID},
		"channel":   map[string]any{"id": ref.Channel}, "message": map[string]any{"ts": ref.ID},
		"actions": []any{map[string]any{"type": "button", "action_id": actionID, "block_id": "approval_actions.x", "value": value}},
	})
}

// homeClick sends user's click on the button actionID of their Home tab.
func (e *batchEnv) homeClick(t *testing.T, user, actionID, value string) int {
	t.Helper()
	return e.send(t, batchSecret, map[string]any{
		"type": "block_actions", "user": map[string]any{"id": user}, "team": map[string]any{"id": "T0DEMO"},
		"trigger_id": "trigger-1", "api_app_id": "A0APP",
		"container": map[string]any{"type": "view", "view_id": "V0HOME"}, "view": map[string]any{"id": "V0HOME", "type": "home"},
		"actions": []any{map[string]any{"type": "button", "action_id": actionID, "block_id": "home_call.0", "value": value}},
	})
}

// send posts a block_actions payload as Slack does: form-encoded, signed
// with secret.
func (e *batchEnv) send(t *testing.T, secret string, cb map[string]any) int {
	t.Helper()
	payload, _ := json.Marshal(cb)
	body := url.Values{"payload": {string(payload)}}.Encode()
	r := httptest.NewRequestWithContext(t.Context(), http.MethodPost, "/slack/interactivity", strings.NewReader(body))
	r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	bot.SignSlackRequest(r.Header, secret, time.Now(), []byte(body))
	w := httptest.NewRecorder()
	e.handler.ServeHTTP(w, r)
	return w.Code
}

// settle waits for what follows the acknowledgements: card updates and
// replies.
func (e *batchEnv) settle() {
	e.bot.Close()
	e.svc.Close()
}

// buttonOf is the button actionID on the card at ref: its label, its value
// and its confirm dialog's text.
func (e *batchEnv) buttonOf(t *testing.T, ref approval.MessageRef, actionID string) (label, value, confirm string, ok bool) {
	t.Helper()
	m, found := e.slack.Message(ref.Channel, ref.ID)
	if !found {
		t.Fatalf("no card at %v", ref)
	}
	var blocks []struct {
		Elements []struct {
			Type     string          `json:"type"`
			ActionID string          `json:"action_id"`
			Value    string          `json:"value"`
			Text     json.RawMessage `json:"text"`
			Confirm  *struct {
				Title struct{ Text string } `json:"title"`
				Text  struct{ Text string } `json:"text"`
			} `json:"confirm"`
		} `json:"elements"`
	}
	if err := json.Unmarshal(m.BlocksJSON, &blocks); err != nil {
		t.Fatal(err)
	}
	for _, b := range blocks {
		for _, el := range b.Elements {
			if el.Type == "button" && el.ActionID == actionID {
				if el.Confirm != nil {
					confirm = el.Confirm.Title.Text + " " + el.Confirm.Text.Text
				}
				var text struct{ Text string }
				_ = json.Unmarshal(el.Text, &text)
				return text.Text, el.Value, confirm, true
			}
		}
	}
	return "", "", "", false
}

// "Approve all 3", clicked on a card as Slack sends it (signed
// block_actions), decides each call as its own card would: Alice's
// approval approves the refund, counts one vote of the two the deletion
// needs, and leaves the deploy, whose route she does not approve; she is
// told so, every card shows where its call stands, and the cards still
// pending count what is left.
func TestApproveAllClickedOnACard(t *testing.T) {
	e := newBatchEnv(t)
	r := e.open(t, call("r1", "issue_refund", `{"amount":500}`), call("d1", "delete_tmp", `{"path":"/tmp/x"}`), call("o1", "deploy_web", `{}`))
	refund := r.Call("r1").Message

	label, value, confirm, ok := e.buttonOf(t, refund, bot.ActionIDApproveAll)
	if !ok || label != "Approve all 3" {
		t.Fatalf("refund card's batch button %q (found %v), want Approve all 3", label, ok)
	}
	for _, want := range []string{"Approve all 3 pending calls?", "The 3 calls: issue_refund, delete_tmp, deploy_web."} {
		if !strings.Contains(confirm, want) {
			t.Errorf("confirm dialog %q does not say %q", confirm, want)
		}
	}
	if code := e.click(t, batchSecret, "U0ALICE", refund, bot.ActionIDApproveAll, value); code != http.StatusOK {
		t.Fatalf("click answered %d, want 200", code)
	}
	e.settle()

	got, _ := e.store.Get(t.Context(), r.Token)
	if s := got.Call("r1").Status; s != approval.CallApproved {
		t.Errorf("refund %s, want approved", s)
	}
	if d := got.Call("d1"); d.Status != approval.CallPending || len(d.Votes) != 1 {
		t.Errorf("deletion %s with %d votes, want pending with Alice's vote", d.Status, len(d.Votes))
	}
	if s := got.Call("o1").Status; s != approval.CallPending {
		t.Errorf("deploy %s, want left pending", s)
	}
	eph := e.slack.Ephemerals("U0ALICE")
	if len(eph) != 1 {
		t.Fatalf("Alice was told %d things, want 1: %+v", len(eph), eph)
	}
	for _, want := range []string{"You approved 1 call: `issue_refund`", "counted toward 1 call that needs more approvers: `delete_tmp` (1 of 2 approvals)",
		"Left pending (1):", "`deploy_web` — You are not an approver for ops requests. Approvers: <@U0BOB>."} {
		if !strings.Contains(eph[0].Text, want) {
			t.Errorf("reply %q does not say %q", eph[0].Text, want)
		}
	}
	if _, _, _, ok := e.buttonOf(t, refund, bot.ActionIDApprove); ok {
		t.Error("the approved refund's card still has buttons")
	}
	for _, id := range []string{"d1", "o1"} {
		if label, _, _, _ := e.buttonOf(t, got.Call(id).Message, bot.ActionIDApproveAll); label != "Approve all 2" {
			t.Errorf("card of %s offers %q, want Approve all 2", id, label)
		}
	}

	// Bob's Deny all on the deploy's card denies what is left: one entry
	// per call in the audit stream, the request resolved.
	_, value, _, _ = e.buttonOf(t, got.Call("o1").Message, bot.ActionIDDenyAll)
	if code := e.click(t, batchSecret, "U0BOB", got.Call("o1").Message, bot.ActionIDDenyAll, value); code != http.StatusOK {
		t.Fatalf("Bob's click answered %d", code)
	}
	e.settle()
	got, _ = e.store.Get(t.Context(), r.Token)
	if got.State != approval.StateResolved || got.Call("d1").Status != approval.CallDenied || got.Call("o1").Status != approval.CallDenied {
		t.Errorf("after Bob's Deny all: %s, d1 %s, o1 %s; want resolved, both denied", got.State, got.Call("d1").Status, got.Call("o1").Status)
	}
	evs, _ := e.store.ReadAudit(t.Context(), "0", 100)
	decided := map[string]int{}
	for _, ev := range evs {
		if ev.Type == store.AuditDecided {
			decided[ev.CallID]++
		}
	}
	if decided["r1"] != 1 || decided["d1"] != 1 || decided["o1"] != 1 {
		t.Errorf("decisions audited %v, want one per call", decided)
	}
}

// A batch button with a forged value, an unknown token or a bad signature
// decides nothing.
func TestApproveAllRefusesForgedClicks(t *testing.T) {
	e := newBatchEnv(t)
	r := e.open(t, call("r1", "issue_refund", `{"amount":500}`), call("r2", "issue_refund", `{"amount":600}`))
	ref := r.Call("r1").Message
	_, value, _, _ := e.buttonOf(t, ref, bot.ActionIDApproveAll)
	if code := e.click(t, "not the secret", "U0ALICE", ref, bot.ActionIDApproveAll, value); code != http.StatusUnauthorized {
		t.Errorf("badly signed click answered %d, want 401", code)
	}
	e.click(t, batchSecret, "U0ALICE", ref, bot.ActionIDApproveAll, "1."+r.Token+".r1.extra")
	e.click(t, batchSecret, "U0ALICE", ref, bot.ActionIDApproveAll, bot.EncodeAction(agentrunner.NewToken(), "r1"))
	// A real button, clicked from a message that is not the call's card.
	e.click(t, batchSecret, "U0ALICE", approval.MessageRef{Channel: ref.Channel, ID: "1.000001"}, bot.ActionIDApproveAll, value)
	e.settle()
	got, _ := e.store.Get(t.Context(), r.Token)
	if n := len(got.PendingApprovals()); n != 2 {
		t.Errorf("%d calls pending after forged clicks, want 2", n)
	}
	var texts []string
	for _, m := range e.slack.Ephemerals("U0ALICE") {
		texts = append(texts, m.Text)
	}
	for _, want := range []string{"slackbot no longer knows this request", "This button does not belong to the message of this request."} {
		if !slices.ContainsFunc(texts, func(s string) bool { return strings.Contains(s, want) }) {
			t.Errorf("replies %q do not say %q", texts, want)
		}
	}
}

// Alice's Home offers Approve all on a request with two calls she may
// decide, not on one of which she may decide only one; her click decides
// both, as from their cards, and her Home says so.
func TestApproveAllFromHome(t *testing.T) {
	e := newBatchEnv(t)
	r := e.open(t, call("r1", "issue_refund", `{"amount":500}`), call("r2", "issue_refund", `{"amount":600}`))
	// Of this one, only the refund waits for Alice (Bob deploys): its row
	// offers no batch.
	other := e.open(t, call("x1", "issue_refund", `{"amount":700}`), call("x2", "deploy_web", `{}`))
	if err := e.bot.PublishHome(t.Context(), "U0ALICE", ""); err != nil {
		t.Fatal(err)
	}
	home := e.homeOf(t, "U0ALICE")
	button := func(actionID, token, id string) string {
		return `"action_id":"` + actionID + `","value":"` + bot.EncodeAction(token, id) + `"`
	}
	if !strings.Contains(home, button(bot.ActionIDApproveAll, r.Token, "r2")) || !strings.Contains(home, "Approve all 2") {
		t.Fatalf("Alice's Home offers no Approve all 2 on r2: %s", home)
	}
	if !strings.Contains(home, button(bot.ActionIDApprove, other.Token, "x1")) || strings.Contains(home, button(bot.ActionIDApproveAll, other.Token, "x1")) {
		t.Errorf("Alice's Home row of x1 should offer Approve but no Approve all (she decides no other call of its request): %s", home)
	}
	if code := e.homeClick(t, "U0ALICE", bot.ActionIDApproveAll, bot.EncodeAction(r.Token, "r2")); code != http.StatusOK {
		t.Fatalf("Home click answered %d", code)
	}
	e.settle()
	got, _ := e.store.Get(t.Context(), r.Token)
	if got.State != approval.StateResolved || got.Call("r1").Status != approval.CallApproved || got.Call("r2").Status != approval.CallApproved {
		t.Errorf("after Approve all from Home: %s, r1 %s, r2 %s; want resolved, both approved", got.State, got.Call("r1").Status, got.Call("r2").Status)
	}
	if home := e.homeOf(t, "U0ALICE"); !strings.Contains(home, "You approved 2 calls: `issue_refund`, `issue_refund`.") {
		t.Errorf("Alice's Home does not say what she approved: %s", home)
	}
	if _, _, _, ok := e.buttonOf(t, got.Call("r1").Message, bot.ActionIDApprove); ok {
		t.Error("r1's card still has buttons")
	}
}

// homeOf is the JSON of the Home tab last published for user.
func (e *batchEnv) homeOf(t *testing.T, user string) string {
	t.Helper()
	v, ok := e.slack.Home(user)
	if !ok {
		t.Fatalf("no Home published for %s", user)
	}
	return string(v.JSON)
}
