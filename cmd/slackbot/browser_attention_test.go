package main

import (
	"testing"

	"github.com/chromedp/chromedp"
)

// TestDevBrowserRemindEscalateGrant is what waits for people, seen in the
// emulator of `slackbot dev` without waiting: Carol asks for a $120 refund;
// the page's "Clock +10 min" brings the card's thread a reminder that
// mentions Alice; ten more minutes escalate it, #general links the card
// for Bob, and Bob, who may decide it from then on, denies it. Carol asks
// again; Alice approves for 1 h; when Carol asks a third time, Alice's
// grant approves it without a card, and Carol's thread says so.
func TestDevBrowserRemindEscalateGrant(t *testing.T) {
	t.Parallel()
	p := devBrowser(t)
	p.Send("@slackbot refund order A-1002 120")

	p.Do("act as Alice", chromedp.Click(chromedp.CSS(`.acting-user[data-user="U0ALICE"]`)))
	p.Do("open #approvals", chromedp.Click(chromedp.CSS(`#channels [data-channel="C0APPROVALS"]`)))
	p.WaitFor("the refund's card with its grant buttons", cardIs("issue_refund", `
		[...card.querySelectorAll('button')].some(b => b.textContent === 'Approve for 1 h') &&
		[...card.querySelectorAll('button')].some(b => b.textContent === 'Approve for 8 h') &&
		card.textContent.includes('Why:')`))

	// Ten minutes later the card's thread reminds Alice.
	p.Do("move the clock 10 minutes", chromedp.Click(chromedp.ID("clock-forward")))
	p.WaitFor("the clock's badge", `document.getElementById('clock-offset').textContent === "slackbot's clock: +10 min"`)
	p.WaitFor("a reply under the card", cardIs("issue_refund", `!!card.querySelector('.thread-summary')`))
	p.Do("open the card's thread", chromedp.Click(chromedp.CSS(`#messages .msg[data-user="U0BOT"] .thread-summary`)))
	p.WaitFor("the reminder mentioning Alice", `[...document.querySelectorAll('#thread-messages .msg[data-user="U0BOT"]')].some(e =>
		e.textContent.includes('Reminder 1 of 2') && e.textContent.includes('@Alice') && e.textContent.includes('is still waiting for a decision'))`)
	p.Screenshot("dev-reminder-thread.png")
	p.Do("close the thread", chromedp.Click(chromedp.ID("thread-close")))

	// Twenty minutes in, nobody decided: it escalates to Bob.
	p.Do("move the clock 10 more minutes", chromedp.Click(chromedp.ID("clock-forward")))
	p.WaitFor("the card names who may decide now", cardIs("issue_refund", `card.textContent.includes('Escalated: @Bob may decide too')`))
	p.Do("act as Bob", chromedp.Click(chromedp.CSS(`.acting-user[data-user="U0BOB"]`)))
	p.Do("open #general", chromedp.Click(chromedp.CSS(`#channels [data-channel="C0GENERAL"]`)))
	p.WaitFor("the escalation in #general, mentioning Bob, linking the card", `[...document.querySelectorAll('#messages .msg[data-user="U0BOT"]')].some(e =>
		e.textContent.includes('Escalated:') && e.textContent.includes('@Bob') && e.textContent.includes('open the request'))`)
	p.Screenshot("dev-escalation.png")

	// Bob, an approver only since the escalation, decides it: he denies it.
	// (He could approve it, once, but not grant: later calls never
	// escalated.)
	p.Do("open #approvals", chromedp.Click(chromedp.CSS(`#channels [data-channel="C0APPROVALS"]`)))
	p.Do("click Deny as Bob", chromedp.Click(chromedp.CSS(`#messages button[data-action-id="deny"]`)))
	p.WaitFor("the card says Denied by Bob", cardIs("issue_refund", `card.textContent.includes('Denied by @Bob') && !card.querySelector('button[data-action-id="approve"]')`))

	// Carol asks for the same refund again: a card, which Alice approves
	// for an hour; the third time, Alice's grant approves it.
	p.Do("act as Carol", chromedp.Click(chromedp.CSS(`.acting-user[data-user="U0CAROL"]`)))
	p.Do("open #general", chromedp.Click(chromedp.CSS(`#channels [data-channel="C0GENERAL"]`)))
	p.Send("@slackbot refund order A-1002 120")
	p.Do("act as Alice", chromedp.Click(chromedp.CSS(`.acting-user[data-user="U0ALICE"]`)))
	p.Do("open #approvals", chromedp.Click(chromedp.CSS(`#channels [data-channel="C0APPROVALS"]`)))
	p.WaitFor("the repeat's card", `[...document.querySelectorAll('#messages .msg[data-user="U0BOT"] .bk-header')].filter(h => h.textContent.includes('issue_refund')).length === 2`)
	p.Do("click Approve for 1 h as Alice", chromedp.Click(chromedp.CSS(`#messages button[data-action-id="approve_for_60m"]`)))
	p.WaitFor("the card says Approved by Alice", cardIs("issue_refund", `card.textContent.includes('Approved by @Alice') && !card.querySelector('button[data-action-id="approve"]')`))
	p.Do("act as Carol", chromedp.Click(chromedp.CSS(`.acting-user[data-user="U0CAROL"]`)))
	p.Do("open #general", chromedp.Click(chromedp.CSS(`#channels [data-channel="C0GENERAL"]`)))
	p.Send("@slackbot refund order A-1002 120")
	p.WaitFor("a grant note in the new request's thread", `[...document.querySelectorAll('#messages .msg[data-user="U0CAROL"]')].length === 3`)
	p.Do("open the new request's thread", chromedp.Click(chromedp.CSS(`#messages .msg[data-user="U0CAROL"]:last-of-type .thread-summary`)))
	p.WaitFor("the thread says the grant approved it, and the refund ran", `(() => {
		const bot = [...document.querySelectorAll('#thread-messages .msg[data-user="U0BOT"]')].map(e => e.textContent);
		return bot.some(t => t.includes('was approved without a card') && t.includes('@Alice granted this call')) &&
			bot.some(t => t.includes('refunded $120.00 on order A-1002'));
	})()`)
	p.Screenshot("dev-grant-thread.png")
	p.Do("open #approvals", chromedp.Click(chromedp.CSS(`#channels [data-channel="C0APPROVALS"]`)))
	p.WaitFor("still two refund cards: none for the granted repeat", `[...document.querySelectorAll('#messages .msg[data-user="U0BOT"] .bk-header')].filter(h => h.textContent.includes('issue_refund')).length === 2`)
}
