package devui_test

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/slack-go/slack"
	"github.com/slack-go/slack/slackevents"

	"github.com/slackapprove/slackbot/agentrunner"
	"github.com/slackapprove/slackbot/approval"
	"github.com/slackapprove/slackbot/bot"
	"github.com/slackapprove/slackbot/internal/browsertest"
	"github.com/slackapprove/slackbot/internal/devui"
	"github.com/slackapprove/slackbot/internal/slackfake"
)

var screenshots = flag.String("screenshots", "", "directory for the browser test's screenshots (testdata/screenshots updates the README's); empty: a temporary directory")

// standIn behaves like slackbot, minimally: a mention posts an approval
// card to #approvals; Approve updates the card and answers in the thread
// the request came from; "Deny with reason…" opens slackbot's modal, whose
// submission denies the call; the requester's own clicks are refused with
// an ephemeral message.
type standIn struct {
	api *slack.Client
	log *slog.Logger

	mu   sync.Mutex
	runs map[string]*standInRun // by token
}

type standInRun struct {
	card    bot.Card
	origin  approval.MessageRef // the request, whose thread gets the answer
	message approval.MessageRef // the card
}

func (s *standIn) handleEvents(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	ev, err := slackevents.ParseEvent(json.RawMessage(body), slackevents.OptionNoVerifyToken())
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	mention, ok := ev.InnerEvent.Data.(*slackevents.AppMentionEvent)
	if !ok {
		return
	}
	s.mu.Lock()
	n := len(s.runs) + 1
	s.mu.Unlock()
	now := time.Now()
	card := bot.Card{
		Token:           fmt.Sprintf("tok_standin_%04d_0123456789", n),
		ToolCallID:      fmt.Sprintf("call_%d", n),
		Kind:            agentrunner.KindApproval,
		ToolName:        "delete_customer",
		Args:            json.RawMessage(`{"customer_id":"a","reason":"customer asked to close the account"}`),
		Confirmation:    `Delete customer "a" and all their orders?`,
		Requester:       mention.User,
		RequesterIsUser: true,
		SourceChannel:   mention.Channel,
		Route:           "deletions",
		Mentions:        []string{"S0APPROVERS"},
		CreatedAt:       now,
		ExpiresAt:       now.Add(time.Hour),
		AllowDenyReason: true,
	}
	ch, ts, err := s.api.PostMessageContext(r.Context(), "C0APPROVALS",
		slack.MsgOptionText(bot.ApprovalText(card), false), slack.MsgOptionBlocks(bot.ApprovalBlocks(card)...))
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	s.mu.Lock()
	s.runs[card.Token] = &standInRun{card: card, origin: approval.MessageRef{Channel: mention.Channel, ID: mention.TimeStamp}, message: approval.MessageRef{Channel: ch, ID: ts}}
	s.mu.Unlock()
}

func (s *standIn) handleInteractivity(w http.ResponseWriter, r *http.Request) {
	cb, err := bot.ParseInteraction(r.PostFormValue("payload"))
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	ctx := r.Context()
	switch cb.Type {
	case slack.InteractionTypeBlockActions:
		act := cb.ActionCallback.BlockActions[0]
		token, _, err := bot.DecodeAction(act.Value)
		run := s.run(token)
		if err != nil || run == nil {
			http.Error(w, "unknown button", http.StatusBadRequest)
			return
		}
		if cb.User.ID == run.card.Requester {
			// As slackbot refuses self-approval: an ephemeral explanation.
			if _, err := s.api.PostEphemeralContext(ctx, cb.Container.ChannelID, cb.User.ID,
				slack.MsgOptionText(":no_entry: You asked for this call, so someone else must decide it. Nothing changed.", false)); err != nil {
				s.log.Error("chat.postEphemeral", "err", err)
			}
			return
		}
		switch act.ActionID {
		case bot.ActionIDApprove:
			s.finish(ctx, run, cb.User.ID, approval.CallApproved, "", "Done: customer a and their 3 orders were deleted.")
		case bot.ActionIDDeny:
			s.finish(ctx, run, cb.User.ID, approval.CallDenied, "", "I did not delete customer a: the request was denied.")
		case bot.ActionIDDenyReason:
			if _, err := s.api.OpenViewContext(ctx, cb.TriggerID, bot.DenyReasonModal(run.card, run.message)); err != nil {
				s.log.Error("views.open", "err", err)
			}
		}
	case slack.InteractionTypeViewSubmission:
		meta, err := bot.DecodeModalMetadata(cb.View.PrivateMetadata)
		run := s.run(meta.Token)
		if err != nil || run == nil {
			return
		}
		reason := strings.TrimSpace(cb.View.State.Values[bot.BlockIDDenyReason][bot.ActionIDDenyReasonInput].Value)
		if len(reason) < 10 {
			w.Header().Set("Content-Type", "application/json")
			_ = json.NewEncoder(w).Encode(map[string]any{"response_action": "errors", "errors": map[string]string{bot.BlockIDDenyReason: "Say a little more: the agent passes this on."}})
			return
		}
		s.finish(ctx, run, cb.User.ID, approval.CallDenied, reason, "I did not delete customer a: "+reason)
	}
}

func (s *standIn) run(token string) *standInRun {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.runs[token]
}

// finish updates the card in place and answers in the request's thread.
func (s *standIn) finish(ctx context.Context, run *standInRun, by string, state approval.CallStatus, reason, answer string) {
	c := run.card
	c.State, c.DecidedBy, c.DecidedAt, c.Reason = state, by, time.Now(), reason
	if state == approval.CallApproved {
		c.Outcome = &approval.Outcome{Status: bot.OutcomeRan, Summary: "deleted customer a and 3 orders"}
	}
	if _, _, _, err := s.api.UpdateMessageContext(ctx, run.message.Channel, run.message.ID,
		slack.MsgOptionText(bot.ApprovalText(c), false), slack.MsgOptionBlocks(bot.ApprovalBlocks(c)...)); err != nil {
		s.log.Error("chat.update", "err", err)
	}
	if _, _, err := s.api.PostMessageContext(ctx, run.origin.Channel,
		slack.MsgOptionText(answer, false), slack.MsgOptionTS(run.origin.ID)); err != nil {
		s.log.Error("chat.postMessage", "err", err)
	}
}

// TestBrowser drives the page in chromium through the demo: Carol asks,
// the card appears in #approvals, Carol's own click is refused with an
// ephemeral message, Alice approves, the card says so and the answer
// arrives in Carol's thread; then Bob denies a second request with a
// reason through the modal, which shows validation errors inline.
func TestBrowser(t *testing.T) {
	if testing.Short() {
		t.Skip("browser test skipped in -short mode")
	}
	chromium := browsertest.ChromiumPath(t)

	// One server, as `slackbot dev` has: the fake Web API, the emulator and
	// the stand-in slackbot's signed webhooks.
	log := slog.New(slog.DiscardHandler)
	fake := slackfake.New(slackfake.WithDemoWorkspace())
	mux := http.NewServeMux()
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	bot0 := &standIn{api: slack.New(fake.Token(), slack.OptionAPIURL(srv.URL+"/api/")), log: log, runs: map[string]*standInRun{}}
	dev := devui.New(devui.Config{Slack: fake, SigningSecret: secret, Webhook: srv.URL, Log: log})
	t.Cleanup(dev.Close)
	mux.Handle("/api/", fake)
	mux.Handle("/dev/", http.StripPrefix("/dev", dev))
	mux.Handle("POST /slack/events", bot.VerifySlack(secret, log, http.HandlerFunc(bot0.handleEvents)))
	mux.Handle("POST /slack/interactivity", bot.VerifySlack(secret, log, http.HandlerFunc(bot0.handleInteractivity)))

	p := browsertest.Open(t, chromium, *screenshots)

	// Carol asks in #general.
	p.Do("open the page", chromedp.Navigate(srv.URL+"/dev/"), chromedp.WaitVisible(chromedp.CSS(`.acting-user[data-user="U0CAROL"]`)))
	p.Do("act as Carol", chromedp.Click(chromedp.CSS(`.acting-user[data-user="U0CAROL"]`)))
	p.Do("open #general", chromedp.Click(chromedp.CSS(`#channels [data-channel="C0GENERAL"]`)))
	p.Send("@slackbot delete customer a")
	p.WaitFor("Carol's message in #general, with the mention drawn as a chip",
		`[...document.querySelectorAll('#messages .msg[data-user="U0CAROL"] .mention')].some(e => e.textContent === '@slackbot')`)
	p.WaitFor("a toast about the new approval request",
		`[...document.querySelectorAll('.toast')].some(e => e.textContent.includes('New approval request in #approvals'))`)
	p.WaitFor("#approvals marked unread", `document.querySelector('#channels [data-channel="C0APPROVALS"]').classList.contains('unread')`)
	p.Screenshot("1-request.png")

	// The card in #approvals.
	p.Do("open #approvals", chromedp.Click(chromedp.CSS(`#channels [data-channel="C0APPROVALS"]`)))
	p.WaitFor("the approval card with Approve and Deny", `(() => {
		const card = document.querySelector('#messages .msg[data-user="U0BOT"]');
		if (!card) return false;
		const a = card.querySelector('button[data-action-id="approve"]'), d = card.querySelector('button[data-action-id="deny"]');
		return a && d && a.classList.contains('btn-primary') && d.classList.contains('btn-danger') &&
			card.querySelector('.bk-header').textContent.includes('Approval needed: delete_customer') &&
			card.querySelector('.mk-pre').textContent.includes('"customer_id": "a"');
	})()`)
	// Carol may not approve her own request: only she sees why.
	p.Do("click Approve as Carol", chromedp.Click(chromedp.CSS(`#messages button[data-action-id="approve"]`)))
	p.WaitFor("the refusal, only visible to Carol", `(() => {
		const e = document.querySelector('#messages .msg.ephemeral');
		return e && e.querySelector('.only-you').textContent === 'Only visible to you' && e.textContent.includes('someone else must decide it');
	})()`)
	p.Screenshot("2-refused.png")
	p.Do("act as Alice", chromedp.Click(chromedp.CSS(`.acting-user[data-user="U0ALICE"]`)))
	p.WaitFor("Carol's ephemeral message hidden from Alice", `!document.querySelector('#messages .msg.ephemeral')`)
	p.WaitFor("Alice selected", `document.querySelector('.acting-user[data-user="U0ALICE"]').getAttribute('aria-pressed') === 'true'`)
	p.Screenshot("3-approval-card.png")

	// Alice approves: the card updates in place.
	p.Do("click Approve", chromedp.Click(chromedp.CSS(`#messages button[data-action-id="approve"]`)))
	p.WaitFor("the card says Approved, without buttons", `(() => {
		const card = document.querySelector('#messages .msg[data-user="U0BOT"]');
		return card && card.querySelector('.bk-header').textContent.includes('Approved: delete_customer') &&
			!card.querySelector('button[data-action-id="approve"]') && card.querySelector('.edited');
	})()`)
	p.WaitFor("a toast about the answer in the thread",
		`[...document.querySelectorAll('.toast')].some(e => e.textContent.includes('replied in a thread in #general'))`)
	p.Screenshot("4-approved.png")

	// The answer in Carol's thread.
	p.Do("open #general", chromedp.Click(chromedp.CSS(`#channels [data-channel="C0GENERAL"]`)))
	p.Do("open the thread", chromedp.Click(chromedp.CSS(`#messages .thread-summary`)))
	p.WaitFor("the answer in the thread pane",
		`[...document.querySelectorAll('#thread-messages .msg[data-user="U0BOT"]')].some(e => e.textContent.includes('customer a and their 3 orders were deleted'))`)
	p.Screenshot("5-answer-in-thread.png")

	// A second request, denied with a reason through the modal.
	p.Do("close the thread", chromedp.Click(chromedp.ID("thread-close")))
	p.Do("act as Carol again", chromedp.Click(chromedp.CSS(`.acting-user[data-user="U0CAROL"]`)))
	p.Send("@slackbot delete customer a, please")
	p.WaitFor("Carol's second request", `document.querySelectorAll('#messages .msg[data-user="U0CAROL"]').length === 2`)
	p.WaitFor("its card", `[...document.querySelectorAll('.toast')].some(e => e.textContent.includes('New approval request in #approvals'))`)
	p.Do("act as Bob", chromedp.Click(chromedp.CSS(`.acting-user[data-user="U0BOB"]`)))
	p.Do("open #approvals", chromedp.Click(chromedp.CSS(`#channels [data-channel="C0APPROVALS"]`)))
	p.WaitFor("the second card", `document.querySelectorAll('#messages button[data-action-id="deny_reason"]').length === 1`)
	p.Do("click Deny with reason", chromedp.Click(chromedp.CSS(`#messages button[data-action-id="deny_reason"]`)))
	p.WaitFor("the modal", `(() => { const m = document.querySelector('.modal[data-callback-id="deny_reason"]');
		return m && m.querySelector('.modal-title').textContent === 'Deny with reason' && m.querySelector('textarea'); })()`)
	p.Do("submit it empty", chromedp.Click(chromedp.CSS(`.modal [data-role="submit"]`)))
	p.WaitFor("Slack's required-field error", `(document.querySelector('.modal .input-error') || {}).textContent === 'Please complete this required field.'`)
	p.Do("give a short reason", chromedp.SendKeys(chromedp.CSS(`.modal textarea`), "no"), chromedp.Click(chromedp.CSS(`.modal [data-role="submit"]`)))
	p.WaitFor("slackbot's error under the input", `(document.querySelector('.modal .input-error') || {}).textContent === 'Say a little more: the agent passes this on.'`)
	p.Screenshot("6-modal-error.png")
	p.Do("give a reason", chromedp.SendKeys(chromedp.CSS(`.modal textarea`), "t: customer a still has open invoices"), chromedp.Click(chromedp.CSS(`.modal [data-role="submit"]`)))
	p.WaitFor("the modal closed and the card denied with the reason", `!document.querySelector('.modal') &&
		[...document.querySelectorAll('#messages .bk-header')].some(e => e.textContent.includes('Denied: delete_customer')) &&
		document.querySelector('#messages').textContent.includes('customer a still has open invoices')`)
	p.Screenshot("7-denied.png")
}
