package main

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/slackapprove/slackbot/bot"
	"github.com/slackapprove/slackbot/internal/slacktest"
)

// holdExpiredUpdates holds every chat.update that would mark a card
// expired until release is closed (or its client hangs up), and closes
// held when the first one arrives: the moment a process has claimed an
// expiry and not yet updated the card.
type holdExpiredUpdates struct {
	next     http.Handler
	held     chan struct{}
	heldOnce sync.Once
	release  chan struct{}
}

func (h *holdExpiredUpdates) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !strings.HasSuffix(r.URL.Path, "/chat.update") {
		h.next.ServeHTTP(w, r)
		return
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	if strings.Contains(updateBlocks(r.Header.Get("Content-Type"), body), "Expired") {
		h.heldOnce.Do(func() { close(h.held) })
		select {
		case <-h.release:
		case <-r.Context().Done():
			return // the process holding the expiry died
		}
	}
	h.next.ServeHTTP(w, r)
}

// updateBlocks is the blocks argument of a chat.update body, sent as a
// form (slack-go) or as JSON (bot.SlackClient).
func updateBlocks(contentType string, body []byte) string {
	if strings.HasPrefix(contentType, "application/json") {
		var args struct {
			Blocks json.RawMessage `json:"blocks"`
		}
		_ = json.Unmarshal(body, &args)
		return string(args.Blocks)
	}
	form, _ := url.ParseQuery(string(body))
	return form.Get("blocks")
}

// A claims the expiry of a token and dies before the card is updated; B
// takes the card update over from the job queue: the card says expired
// and has no buttons left.
func TestExpiredCardIsUpdatedAfterTheClaimerDies(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("starts processes")
	}
	c := newCluster(t, strings.Replace(durableRoutes, "timeout: 1h", "timeout: 2s", 1))
	hold := &holdExpiredUpdates{next: c.slack, held: make(chan struct{}), release: make(chan struct{})}
	proxy := httptest.NewServer(hold)
	t.Cleanup(proxy.Close)
	t.Cleanup(func() {
		select {
		case <-hold.release:
		default:
			close(hold.release)
		}
	})
	c.env = append(c.env, "SLACK_API_URL="+proxy.URL+"/api/") // the last one wins

	a, _, card, e := c.waitingRun()
	select {
	case <-hold.held:
	case <-time.After(30 * time.Second):
		t.Fatal("A never tried to mark the card expired")
	}
	a.kill(t)
	if strings.Contains(cardText(e.latest(card)), "Expired") {
		t.Fatal("the card says expired before B started: the test did not catch A in between")
	}
	close(hold.release)

	c.start("B")
	// B takes the job over once A's heartbeat is gone (6s), then waits for
	// the card lease A held when it died (30s).
	waitUntil(t, 90*time.Second, "the card to say expired", func() bool { return strings.Contains(cardText(e.latest(card)), "Expired") })
	got := e.latest(card)
	for _, id := range []string{bot.ActionIDApprove, bot.ActionIDDeny} {
		if _, ok := slacktest.Button(got, id); ok {
			t.Errorf("the expired card still has its %q button", id)
		}
	}
	if strings.Contains(cardText(got), `"type":"actions"`) {
		t.Errorf("the expired card still has an actions block: %s", cardText(got))
	}
}
