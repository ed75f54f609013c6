package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/input"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
)

var screenshots = flag.Bool("screenshots", false, "write TestDevBrowserEndToEnd's screenshots to docs/ for the README (else to a temporary directory)")

// docsDir is where -screenshots writes, relative to this package.
const docsDir = "../../docs"

// browserStep bounds every wait of the browser test.
const browserStep = 20 * time.Second

// TestDevBrowserEndToEnd runs the real `slackbot dev` and drives its Slack
// emulator in headless chromium as a person would: Carol asks for a $150
// refund in #general, the approval card appears in #approvals, Alice
// approves, the card says so and the answer arrives in Carol's thread.
// Then Bob asks to delete a customer: his own Approve is refused with a
// message only he sees, and Alice's approval is one of the two the route
// needs.
func TestDevBrowserEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("browser test skipped in -short mode")
	}
	chromium := chromiumPath(t)
	shots := t.TempDir()
	if *screenshots {
		shots = docsDir
		if err := os.MkdirAll(shots, 0o755); err != nil {
			t.Fatal(err)
		}
	}

	// The defaults of `slackbot dev`: demo model, demo tools, demo routes,
	// embedded Redis, the emulated workspace.
	unsetConfigEnv(t)
	t.Setenv("ADDR", "127.0.0.1:0")
	t.Setenv("LOG_FORMAT", "text")
	base, logs := startRun(t, "dev")
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("slackbot's log:\n%s", logs)
		}
	})

	p := openBrowser(t, chromium, shots)

	// Carol asks in #general.
	p.do("open the emulator", chromedp.Navigate(base+"/dev/"), chromedp.WaitVisible(chromedp.CSS(`.acting-user[data-user="U0CAROL"]`)))
	p.do("act as Carol", chromedp.Click(chromedp.CSS(`.acting-user[data-user="U0CAROL"]`)))
	p.do("open #general", chromedp.Click(chromedp.CSS(`#channels [data-channel="C0GENERAL"]`)))
	p.send("@slackbot refund order A-1002 150")
	p.waitFor("Carol's request in #general, the mention drawn as a chip",
		`[...document.querySelectorAll('#messages .msg[data-user="U0CAROL"] .mention')].some(e => e.textContent === '@slackbot')`)
	p.waitFor("a toast about the new approval request",
		`[...document.querySelectorAll('.toast')].some(e => e.textContent.includes('New approval request in #approvals'))`)

	// The card in #approvals, as Alice, the refunds route's approver, sees it.
	p.do("act as Alice", chromedp.Click(chromedp.CSS(`.acting-user[data-user="U0ALICE"]`)))
	p.do("open #approvals", chromedp.Click(chromedp.CSS(`#channels [data-channel="C0APPROVALS"]`)))
	p.waitFor("the refund's card with Approve and Deny and its arguments", cardIs("issue_refund", `(() => {
		const a = card.querySelector('button[data-action-id="approve"]'), d = card.querySelector('button[data-action-id="deny"]');
		const args = (card.querySelector('.mk-pre') || {}).textContent || '';
		return a && d && a.classList.contains('btn-primary') && d.classList.contains('btn-danger') &&
			card.querySelector('.bk-header').textContent.includes('Approval needed: issue_refund') &&
			card.textContent.includes('Requested by @Carol in #general') &&
			args.includes('"order_id": "A-1002"') && args.includes('"amount": 150');
	})()`))
	p.waitFor("Alice selected", `document.querySelector('.acting-user[data-user="U0ALICE"]').getAttribute('aria-pressed') === 'true'`)
	p.screenshot("dev-approval-card.png")

	// Alice approves: the card updates in place and the tool runs.
	p.do("click Approve", chromedp.Click(chromedp.CSS(`#messages button[data-action-id="approve"]`)))
	p.waitFor("the card says Approved by Alice, without buttons", cardIs("issue_refund", `
		card.querySelector('.bk-header').textContent.includes('Approved: issue_refund') &&
		card.textContent.includes('Approved by @Alice') &&
		!card.querySelector('button[data-action-id]') && !!card.querySelector('.edited')`))
	p.waitFor("a toast about the answer in Carol's thread",
		`[...document.querySelectorAll('.toast')].some(e => e.textContent.includes('replied in a thread in #general'))`)

	// The answer in Carol's thread; the thread pane stays open beside the
	// approved card.
	p.do("open #general", chromedp.Click(chromedp.CSS(`#channels [data-channel="C0GENERAL"]`)))
	p.do("open Carol's thread", chromedp.Click(chromedp.CSS(`#messages .msg[data-user="U0CAROL"] .thread-summary`)))
	p.waitFor("the answer in the thread pane",
		`[...document.querySelectorAll('#thread-messages .msg[data-user="U0BOT"]')].some(e => e.textContent.includes('refunded $150.00 on order A-1002'))`)
	// The outcome is stored with the call and card updates are serialized,
	// so the card ends up saying what the tool did whichever update lands
	// last.
	p.do("back to #approvals", chromedp.Click(chromedp.CSS(`#channels [data-channel="C0APPROVALS"]`)))
	p.waitFor("the approved card, with the tool's outcome, beside the thread", cardIs("issue_refund",
		`card.textContent.includes('Approved by @Alice') && card.textContent.includes('The tool ran: refunded $150.00 on order A-1002')`)+
		` && [...document.querySelectorAll('#thread-messages .msg[data-user="U0BOT"]')].some(e => e.textContent.includes('refunded $150.00 on order A-1002'))`)
	p.screenshot("dev-approved-thread.png")
	p.do("close the thread", chromedp.Click(chromedp.ID("thread-close")))

	// Bob asks to delete a customer; the deletions route needs both Alice
	// and Bob, and a requester may not approve his own request.
	p.do("act as Bob", chromedp.Click(chromedp.CSS(`.acting-user[data-user="U0BOB"]`)))
	p.do("open #general", chromedp.Click(chromedp.CSS(`#channels [data-channel="C0GENERAL"]`)))
	p.send("@slackbot delete customer C-42")
	p.waitFor("Bob's request in #general", `!!document.querySelector('#messages .msg[data-user="U0BOB"]')`)
	p.do("open #approvals", chromedp.Click(chromedp.CSS(`#channels [data-channel="C0APPROVALS"]`)))
	p.waitFor("the deletion's card", cardIs("delete_customer", `
		card.querySelector('.bk-header').textContent.includes('Approval needed: delete_customer') &&
		card.textContent.includes('0 of 2 approvals') && !!card.querySelector('button[data-action-id="approve"]')`))
	p.do("click Approve as Bob", chromedp.Click(chromedp.CSS(`#messages button[data-action-id="approve"]`)))
	p.waitFor("the refusal, only visible to Bob", `(() => {
		const e = document.querySelector('#messages .msg.ephemeral');
		return !!e && e.querySelector('.only-you').textContent === 'Only visible to you' &&
			e.textContent.includes('You asked for this call, so someone else must approve it');
	})()`)
	p.do("act as Alice", chromedp.Click(chromedp.CSS(`.acting-user[data-user="U0ALICE"]`)))
	p.waitFor("Bob's refusal hidden from Alice", `!document.querySelector('#messages .msg.ephemeral')`)
	p.do("click Approve as Alice", chromedp.Click(chromedp.CSS(`#messages button[data-action-id="approve"]`)))
	p.waitFor("one of two approvals, still pending", cardIs("delete_customer", `
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

// chromiumPath finds Debian's chromium, or skips the test (fails it in CI).
func chromiumPath(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("CI") == "true" {
		t.Fatal("chromium is not installed: the browser test needs Debian's chromium (.ci/run installs it when .ci/needs-chromium exists)")
	}
	t.Skip("chromium is not installed (apt-get install chromium); skipping the browser test")
	return ""
}

// browserPage drives one chromium tab; every step is bounded by
// browserStep and a failed step leaves a screenshot behind.
type browserPage struct {
	t     *testing.T
	ctx   context.Context
	shots string
}

// openBrowser starts headless chromium for the test. Chromium stops, and
// any uncaught exception the page threw fails the test, when it ends.
func openBrowser(t *testing.T, chromium, shots string) *browserPage {
	t.Helper()
	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(),
		chromedp.ExecPath(chromium),
		chromedp.Flag("headless", "new"),
		chromedp.Flag("no-sandbox", true),
		chromedp.Flag("disable-gpu", true),
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("no-first-run", true),
		chromedp.Flag("no-default-browser-check", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.Flag("disable-extensions", true),
		chromedp.Flag("hide-scrollbars", true),
		chromedp.Flag("force-device-scale-factor", "1"),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1440, 900),
	)
	ctx, cancel := chromedp.NewContext(alloc)

	var mu sync.Mutex
	var pageErrors []string
	// Registered first, so it runs last: after chromium has stopped and the
	// listener below has seen every exception.
	t.Cleanup(func() {
		mu.Lock()
		defer mu.Unlock()
		for _, e := range pageErrors {
			t.Errorf("uncaught exception in the page: %s", e)
		}
	})
	t.Cleanup(func() {
		cancel() // closes the tab and ends chromium
		cancelAlloc()
	})

	// The first Run's context is chromium's lifetime, so it cannot carry
	// a timeout; a timer bounds the start instead.
	stuck := time.AfterFunc(browserStep, cancel)
	err := chromedp.Do(ctx)
	if !stuck.Stop() {
		t.Fatalf("start chromium: no answer within %v", browserStep)
	}
	if err != nil {
		t.Fatalf("start chromium: %v", err)
	}
	exceptions := chromedp.Events(ctx, runtime.ExceptionThrown)
	go func() {
		for ev, err := range exceptions {
			if err != nil {
				return
			}
			d := ev.ExceptionDetails
			msg := d.Text
			if d.Exception != nil {
				msg += " " + d.Exception.Description
			}
			mu.Lock()
			pageErrors = append(pageErrors, fmt.Sprintf("%s (%s:%d:%d)", msg, d.URL, d.LineNumber+1, d.ColumnNumber+1))
			mu.Unlock()
		}
	}()
	return &browserPage{t: t, ctx: ctx, shots: shots}
}

func (p *browserPage) do(what string, actions ...chromedp.Action[chromedp.Void]) {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(p.ctx, browserStep)
	defer cancel()
	if err := chromedp.Do(ctx, actions...); err != nil {
		p.fail(what, err)
	}
}

// send writes text in the channel's composer and sends it.
func (p *browserPage) send(text string) {
	p.t.Helper()
	p.do("send "+text,
		chromedp.Evaluate[chromedp.Void](`document.getElementById('composer').value = ''`),
		chromedp.SendKeys(chromedp.ID("composer"), text),
		chromedp.Click(chromedp.ID("send")))
}

// waitFor polls a JavaScript predicate until it holds.
func (p *browserPage) waitFor(what, predicate string) {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(p.ctx, browserStep)
	defer cancel()
	if _, err := chromedp.Run(ctx, chromedp.Poll[chromedp.Void](predicate,
		chromedp.WithPollingInterval(50*time.Millisecond), chromedp.WithPollingTimeout(browserStep))); err != nil {
		p.fail("wait for "+what, err)
	}
}

// screenshot saves the full page once highlights have faded, with the
// pointer parked where it hovers over nothing.
func (p *browserPage) screenshot(name string) {
	p.t.Helper()
	p.do("park the pointer", chromedp.MouseEvent(input.DispatchMouseEventTypeMouseMoved, 5, 300))
	p.waitFor("highlights to fade", `!document.querySelector('.msg.flash')`)
	ctx, cancel := context.WithTimeout(p.ctx, browserStep)
	defer cancel()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		p.t.Fatalf("screenshot %s: %v", name, err)
	}
	if err := os.WriteFile(filepath.Join(p.shots, name), png, 0o644); err != nil {
		p.t.Fatal(err)
	}
}

func (p *browserPage) fail(what string, err error) {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(context.WithoutCancel(p.ctx), 5*time.Second)
	defer cancel()
	if png, shotErr := chromedp.Run(ctx, chromedp.FullScreenshot(100)); shotErr == nil {
		// Outside t.TempDir(), which goes when the test ends.
		if f, err := os.CreateTemp("", "slackbot-dev-browser-failure-*.png"); err == nil {
			if _, err := f.Write(png); err == nil && f.Close() == nil {
				p.t.Logf("the page at the failure: %s", f.Name())
			}
		}
	}
	p.t.Fatalf("%s: %v", what, err)
}
