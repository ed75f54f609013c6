// Package browsertest drives the dev Slack emulator (internal/devui) in headless
// chromium for browser tests: it finds chromium, starts it with flags that
// make runs repeatable in CI containers, bounds every step, and leaves a
// screenshot behind when a step fails.
//
// It is for tests only; nothing outside _test.go files imports it.
package browsertest

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/input"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"github.com/slackapprove/slackbot/internal/testbin"
)

// StepTimeout bounds every step of a Page: starting chromium, each Do,
// each WaitFor and each Screenshot. It bounds a wait; it asserts nothing
// about speed. 20 s was reached on a clean-clone run beside other builds
// and tests (load average 13 on 2 cores), waiting for the demo's cards.
const StepTimeout = 45 * time.Second

// StartTimeout bounds chromium's start. A cold start reads and maps
// hundreds of megabytes; on a 2-core host whose cores go test -race keeps
// busy with other packages it took past StepTimeout once in a clean-clone
// CI (no answer within 20 s, and nothing wrong with chromium). Like
// StepTimeout it only keeps a hung browser from hanging the test.
const StartTimeout = 90 * time.Second

// ChromiumPath returns the path of chromium: $CHROMIUM when set, otherwise
// chromium, chromium-browser or google-chrome on PATH. When there is none
// it fails the test if chromium is required (scripts/test and CI=true
// require it, see internal/testbin), so a browser test cannot silently stop
// running, and skips it otherwise.
func ChromiumPath(t testing.TB) string {
	t.Helper()
	return testbin.Find(t, "chromium")
}

// Page is one chromium tab. Every step is bounded by StepTimeout, and a
// failed step fails the test with a screenshot of the page left in the
// system's temporary directory.
type Page struct {
	t     testing.TB
	ctx   context.Context
	shots string
}

// Open starts headless chromium (the executable at chromium, as
// ChromiumPath returns it) with a 1440×900 window and a fresh profile.
// Screenshot writes to shots; an empty shots means a temporary directory.
// When the test ends, chromium stops and every uncaught exception the page
// threw fails the test.
func Open(t testing.TB, chromium, shots string) *Page {
	t.Helper()
	if shots == "" {
		shots = t.TempDir()
	} else if err := os.MkdirAll(shots, 0o755); err != nil {
		t.Fatal(err)
	}
	// Not t.Context(): the cleanups below must stop chromium, and wait for
	// it, before the exceptions are reported.
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
	stuck := time.AfterFunc(StartTimeout, cancel)
	err := chromedp.Do(ctx)
	if !stuck.Stop() {
		t.Fatalf("start chromium: no answer within %v", StartTimeout)
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
	return &Page{t: t, ctx: ctx, shots: shots}
}

// Do runs actions in the tab; what names the step in the failure.
//
// The emulator re-renders lists when events arrive, so a node found by a
// selector can be replaced before it is clicked; such a step (which did
// nothing yet) is tried again, a few times.
func (p *Page) Do(what string, actions ...chromedp.Action[chromedp.Void]) {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(p.ctx, StepTimeout)
	defer cancel()
	var err error
	for range 5 {
		if err = chromedp.Do(ctx, actions...); err == nil || !staleNode(err) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err != nil {
		p.fail(what, err)
	}
}

// staleNode reports whether err says the node an action resolved was
// replaced in the page before the action reached it.
func staleNode(err error) bool {
	msg := err.Error()
	return strings.Contains(msg, "Could not find node with given id") ||
		strings.Contains(msg, "No node with given id") || strings.Contains(msg, "Node is detached")
}

// WaitFor polls a JavaScript predicate until it holds; what says what the
// test waits for.
func (p *Page) WaitFor(what, predicate string) {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(p.ctx, StepTimeout)
	defer cancel()
	if _, err := chromedp.Run(ctx, chromedp.Poll[chromedp.Void](predicate,
		chromedp.WithPollingInterval(50*time.Millisecond), chromedp.WithPollingTimeout(StepTimeout))); err != nil {
		p.fail("wait for "+what, err)
	}
}

// Send writes text in the emulator's composer, replacing what was there,
// and sends it to the open channel.
func (p *Page) Send(text string) {
	p.t.Helper()
	p.write("send "+text, "composer", "#send", text)
}

// Reply writes text in the open thread's composer, replacing what was
// there, and sends it to the thread.
func (p *Page) Reply(text string) {
	p.t.Helper()
	p.write("reply "+text, "thread-composer", "#thread-form button.send", text)
}

// write replaces the text of the textarea with id composer and clicks the
// button send (a CSS selector).
func (p *Page) write(what, composer, send, text string) {
	p.t.Helper()
	p.Do(what,
		chromedp.Evaluate[chromedp.Void](`document.getElementById('`+composer+`').value = ''`),
		chromedp.SendKeys(chromedp.ID(composer), text),
		chromedp.Click(chromedp.CSS(send)))
}

// Screenshot saves the full page as name in the screenshot directory,
// once the emulator's highlights have faded, with the pointer parked where
// it hovers over nothing: the same page gives the same picture.
func (p *Page) Screenshot(name string) {
	p.t.Helper()
	p.Do("park the pointer", chromedp.MouseEvent(input.DispatchMouseEventTypeMouseMoved, 5, 300))
	p.WaitFor("highlights to fade", `!document.querySelector('.msg.flash')`)
	ctx, cancel := context.WithTimeout(p.ctx, StepTimeout)
	defer cancel()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		p.t.Fatalf("screenshot %s: %v", name, err)
	}
	if err := os.WriteFile(filepath.Join(p.shots, name), png, 0o644); err != nil {
		p.t.Fatal(err)
	}
}

// fail fails the test, logging where a screenshot of the page is.
func (p *Page) fail(what string, err error) {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(context.WithoutCancel(p.ctx), 5*time.Second)
	defer cancel()
	if png, shotErr := chromedp.Run(ctx, chromedp.FullScreenshot(100)); shotErr == nil {
		// Outside t.TempDir(), which goes when the test ends.
		if f, err := os.CreateTemp("", "slackbot-browser-failure-*.png"); err == nil {
			if _, err := f.Write(png); err == nil && f.Close() == nil {
				p.t.Logf("the page at the failure: %s", f.Name())
			}
		}
	}
	p.t.Fatalf("%s: %v", what, err)
}
