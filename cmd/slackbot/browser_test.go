package main

import (
	"flag"
	"fmt"
	"maps"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/slackapprove/slackbot/internal/browsertest"
)

var screenshots = flag.Bool("screenshots", false, "write TestDevBrowserEndToEnd's screenshots to docs/ for the README (else to a temporary directory)")

// docsDir is where -screenshots writes, relative to this package.
const docsDir = "../../docs"

// TestDevBrowserEndToEnd runs the real `slackbot dev` and drives its Slack
// emulator in headless chromium as a person would: Carol asks for a $150
// refund in #general, the approval card appears in #approvals, Alice
// approves, the card says so and the answer arrives in Carol's thread,
// where she goes on ("actually make it 100") and slackbot remembers the
// order. Then Bob asks to delete a customer: his own Approve is refused with a
// message only he sees, and Alice's approval is one of the two the route
// needs.
func TestDevBrowserEndToEnd(t *testing.T) {
	t.Parallel()
	// Carol asks in #general.
	p := devBrowser(t)
	p.Send("@slackbot refund order A-1002 150")
	p.WaitFor("Carol's request in #general, the mention drawn as a chip",
		`[...document.querySelectorAll('#messages .msg[data-user="U0CAROL"] .mention')].some(e => e.textContent === '@slackbot')`)
	p.WaitFor("a toast about the new approval request",
		`[...document.querySelectorAll('.toast')].some(e => e.textContent.includes('New approval request in #approvals'))`)

	// The card in #approvals, as Alice, the refunds route's approver, sees it.
	p.Do("act as Alice", chromedp.Click(chromedp.CSS(`.acting-user[data-user="U0ALICE"]`)))
	p.Do("open #approvals", chromedp.Click(chromedp.CSS(`#channels [data-channel="C0APPROVALS"]`)))
	p.WaitFor("the refund's card with Approve and Deny and its arguments", cardIs("issue_refund", `(() => {
		const a = card.querySelector('button[data-action-id="approve"]'), d = card.querySelector('button[data-action-id="deny"]');
		const args = (card.querySelector('.mk-pre') || {}).textContent || '';
		return a && d && a.classList.contains('btn-primary') && d.classList.contains('btn-danger') &&
			card.querySelector('.bk-header').textContent.includes('Approval needed: issue_refund') &&
			card.textContent.includes('Requested by @Carol in #general') &&
			args.includes('"order_id": "A-1002"') && args.includes('"amount": 150');
	})()`))
	p.WaitFor("Alice selected", `document.querySelector('.acting-user[data-user="U0ALICE"]').getAttribute('aria-pressed') === 'true'`)
	p.Screenshot("dev-approval-card.png")

	// Alice approves: the card updates in place and the tool runs.
	p.Do("click Approve", chromedp.Click(chromedp.CSS(`#messages button[data-action-id="approve"]`)))
	p.WaitFor("the card says Approved by Alice, without buttons", cardIs("issue_refund", `
		card.querySelector('.bk-header').textContent.includes('Approved: issue_refund') &&
		card.textContent.includes('Approved by @Alice') &&
		!card.querySelector('button[data-action-id]') && !!card.querySelector('.edited')`))
	p.WaitFor("a toast about the answer in Carol's thread",
		`[...document.querySelectorAll('.toast')].some(e => e.textContent.includes('replied in a thread in #general'))`)

	// The answer in Carol's thread; the thread pane stays open beside the
	// approved card.
	p.Do("open #general", chromedp.Click(chromedp.CSS(`#channels [data-channel="C0GENERAL"]`)))
	p.Do("open Carol's thread", chromedp.Click(chromedp.CSS(`#messages .msg[data-user="U0CAROL"] .thread-summary`)))
	p.WaitFor("the answer in the thread pane",
		`[...document.querySelectorAll('#thread-messages .msg[data-user="U0BOT"]')].some(e => e.textContent.includes('refunded $150.00 on order A-1002'))`)
	// The outcome is stored with the call and card updates are serialized,
	// so the card ends up saying what the tool did whichever update lands
	// last.
	p.Do("back to #approvals", chromedp.Click(chromedp.CSS(`#channels [data-channel="C0APPROVALS"]`)))
	p.WaitFor("the approved card, with the tool's outcome, beside the thread", cardIs("issue_refund",
		`card.textContent.includes('Approved by @Alice') && card.textContent.includes('The tool ran: refunded $150.00 on order A-1002')`)+
		` && [...document.querySelectorAll('#thread-messages .msg[data-user="U0BOT"]')].some(e => e.textContent.includes('refunded $150.00 on order A-1002'))`)
	p.Screenshot("dev-approved-thread.png")

	// Carol goes on in her thread, and slackbot remembers: "make it 100"
	// refunds the same order (at most $100 needs no approval), and it can
	// say what it did in this conversation.
	p.Do("act as Carol", chromedp.Click(chromedp.CSS(`.acting-user[data-user="U0CAROL"]`)))
	p.Do("open #general", chromedp.Click(chromedp.CSS(`#channels [data-channel="C0GENERAL"]`)))
	p.WaitFor("Carol's thread still open, saying how to go on", `!document.getElementById('thread').hidden &&
		document.getElementById('thread-who').textContent.includes('@slackbot continues this conversation')`)
	p.Reply("@slackbot actually make it 100 and tell the customer")
	p.WaitFor("the follow-up's answer in the thread, for the same order",
		`[...document.querySelectorAll('#thread-messages .msg[data-user="U0BOT"]')].some(e => e.textContent.includes('refunded $100.00 on order A-1002'))`)
	p.Reply("@slackbot what did you just do?")
	p.WaitFor("the recap of the conversation", `[...document.querySelectorAll('#thread-messages .msg[data-user="U0BOT"]')].some(e =>
		e.textContent.includes('So far in this conversation') && e.textContent.includes('refunded $150.00 on order A-1002') &&
		e.textContent.includes('refunded $100.00 on order A-1002'))`)
	p.Screenshot("dev-continued-thread.png")
	p.Do("close the thread", chromedp.Click(chromedp.ID("thread-close")))

	// Bob asks to delete a customer; the deletions route needs both Alice
	// and Bob, and a requester may not approve his own request.
	p.Do("act as Bob", chromedp.Click(chromedp.CSS(`.acting-user[data-user="U0BOB"]`)))
	p.Do("open #general", chromedp.Click(chromedp.CSS(`#channels [data-channel="C0GENERAL"]`)))
	p.Send("@slackbot delete customer C-42")
	p.WaitFor("Bob's request in #general", `!!document.querySelector('#messages .msg[data-user="U0BOB"]')`)
	p.Do("open #approvals", chromedp.Click(chromedp.CSS(`#channels [data-channel="C0APPROVALS"]`)))
	p.WaitFor("the deletion's card", cardIs("delete_customer", `
		card.querySelector('.bk-header').textContent.includes('Approval needed: delete_customer') &&
		card.textContent.includes('0 of 2 approvals') && !!card.querySelector('button[data-action-id="approve"]')`))
	p.Do("click Approve as Bob", chromedp.Click(chromedp.CSS(`#messages button[data-action-id="approve"]`)))
	p.Do("confirm as Bob", chromedp.Click(chromedp.CSS(`.modal-overlay.confirm .btn-primary`)))
	p.WaitFor("the refusal, only visible to Bob", `(() => {
		const e = document.querySelector('#messages .msg.ephemeral');
		return !!e && e.querySelector('.only-you').textContent === 'Only visible to you' &&
			e.textContent.includes('You asked for this call, so someone else must approve it');
	})()`)
	p.Do("act as Alice", chromedp.Click(chromedp.CSS(`.acting-user[data-user="U0ALICE"]`)))
	p.WaitFor("Bob's refusal hidden from Alice", `!document.querySelector('#messages .msg.ephemeral')`)
	p.Do("click Approve as Alice", chromedp.Click(chromedp.CSS(`#messages button[data-action-id="approve"]`)))
	// The deletions route has confirm: true: Approve asks first.
	p.WaitFor("the confirm dialog naming the tool and its arguments", `(() => {
		const d = document.querySelector('.modal-overlay.confirm');
		return !!d && d.querySelector('.modal-title').textContent === 'Approve delete_customer?' &&
			d.querySelector('.modal-body').textContent.includes('C-42') &&
			d.querySelector('.btn-primary').textContent === 'Approve' &&
			[...d.querySelectorAll('button')].some(b => b.textContent === 'Cancel');
	})()`)
	p.Screenshot("dev-confirm.png")
	p.Do("confirm as Alice", chromedp.Click(chromedp.CSS(`.modal-overlay.confirm .btn-primary`)))
	p.WaitFor("one of two approvals, still pending", cardIs("delete_customer", `
		card.textContent.includes('1 of 2 approvals: @Alice') &&
		card.querySelector('.bk-header').textContent.includes('Approval needed: delete_customer') &&
		!!card.querySelector('button[data-action-id="approve"]')`))
}

// cardIs is a JavaScript predicate over the bot's newest card for tool in
// the open channel, bound to the name card.
func cardIs(tool, predicate string) string {
	return fmt.Sprintf(`(() => {
		const cards = [...document.querySelectorAll('#messages .msg[data-user="U0BOT"]')].filter(m => {
			const h = m.querySelector('.bk-header');
			return h && h.textContent.includes(': %s');
		});
		const card = cards[cards.length - 1];
		return !!card && (%s);
	})()`, tool, predicate)
}

// devBrowser starts `slackbot dev` with its defaults (demo model, tools and
// routes, embedded Redis, the emulated workspace), opens the emulator in
// headless chromium and acts as Carol in #general. slackbot's log is shown
// if the test fails; screenshots go to docs/ with -screenshots.
func devBrowser(t *testing.T) *browsertest.Page {
	t.Helper()
	p, _ := devBrowserEnv(t, nil)
	return p
}

// devBrowserEnv is devBrowser with env added to slackbot's environment;
// it returns slackbot's base URL too.
func devBrowserEnv(t *testing.T, env map[string]string) (*browsertest.Page, string) {
	t.Helper()
	if testing.Short() {
		t.Skip("browser test skipped in -short mode")
	}
	chromium := browsertest.ChromiumPath(t)
	cpuTurn(t)
	shots := "" // a temporary directory
	if *screenshots {
		shots = docsDir
	}
	vars := map[string]string{"ADDR": "127.0.0.1:0", "LOG_FORMAT": "text"}
	maps.Copy(vars, env)
	base, logs := startRun(t, vars, "dev")
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("slackbot's log:\n%s", logs)
		}
	})
	p := browsertest.Open(t, chromium, shots)
	p.Do("open the emulator", chromedp.Navigate(base+"/dev/"), chromedp.WaitVisible(chromedp.CSS(`.acting-user[data-user="U0CAROL"]`)))
	p.Do("act as Carol", chromedp.Click(chromedp.CSS(`.acting-user[data-user="U0CAROL"]`)))
	p.Do("open #general", chromedp.Click(chromedp.CSS(`#channels [data-channel="C0GENERAL"]`)))
	return p, base
}
