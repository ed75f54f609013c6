package main

import (
	"testing"

	"github.com/chromedp/chromedp"
)

// TestDevBrowserHome drives the emulator's App Home in headless chromium:
// Carol asks for two refunds; Alice opens slackbot's Home tab and sees
// both waiting for her; she approves the first for 8 h from her Home, which
// tells her so, lists the grant with Revoke and keeps the second waiting;
// the card in #approvals says approved by Alice too.
func TestDevBrowserHome(t *testing.T) {
	t.Parallel()
	p := devBrowser(t)
	p.Send("@slackbot refund order A-1003 250")
	p.WaitFor("a toast about the first approval request",
		`[...document.querySelectorAll('.toast')].some(e => e.textContent.includes('New approval request in #approvals'))`)
	p.Send("@slackbot refund order A-1004 300")
	p.Do("open #approvals", chromedp.Click(chromedp.CSS(`#channels [data-channel="C0APPROVALS"]`)))
	p.WaitFor("both refund cards", `[...document.querySelectorAll('#messages .msg[data-user="U0BOT"] button[data-action-id="approve"]')].length === 2`)

	// Alice's Home: both calls wait for her, oldest first, with the card's buttons.
	p.Do("act as Alice", chromedp.Click(chromedp.CSS(`.acting-user[data-user="U0ALICE"]`)))
	p.Do("open slackbot's Home", chromedp.Click(chromedp.CSS(`#apps [data-channel="home"]`)))
	p.WaitFor("Alice's Home with both refunds waiting", `(() => {
		const home = document.querySelector('#messages .home[data-home="U0ALICE"]');
		if (!home) return false;
		const text = home.textContent;
		return text.includes('Waiting for you') && text.includes('Your requests') && text.includes('Your grants') &&
			home.querySelectorAll('button[data-action-id="approve"]').length === 2 &&
			home.querySelectorAll('button[data-action-id="approve_for_480m"]').length === 2 &&
			text.indexOf('A-1003') < text.indexOf('A-1004') && text.includes('Requested by @Carol in #general');
	})()`)
	p.Do("click Approve for 8 h on the first", chromedp.Click(chromedp.CSS(`#messages .home button[data-action-id="approve_for_480m"]`)))
	p.WaitFor("Alice's Home after the grant", `(() => {
		const home = document.querySelector('#messages .home[data-home="U0ALICE"]');
		if (!home) return false;
		const text = home.textContent;
		return text.includes('You approved for 8 h') && home.querySelectorAll('button[data-action-id="approve"]').length === 1 &&
			!!home.querySelector('button[data-action-id="revoke_grant"]') && text.includes('A-1004');
	})()`)
	p.Screenshot("dev-home.png")

	p.Do("open #approvals", chromedp.Click(chromedp.CSS(`#channels [data-channel="C0APPROVALS"]`)))
	p.WaitFor("the first card approved by Alice, the second still pending", `(() => {
		const cards = [...document.querySelectorAll('#messages .msg[data-user="U0BOT"]')].filter(m => (m.querySelector('.bk-header') || {textContent: ''}).textContent.includes('issue_refund'));
		return cards.length === 2 && cards[0].textContent.includes('Approved by @Alice') && cards[0].textContent.includes('A-1003') &&
			!!cards[1].querySelector('button[data-action-id="approve"]');
	})()`)
}
