package bot

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// stalledDedupe is a Deduper whose store never answers: it waits for its
// context, or gives up after a while so a test without a deadline ends.
type stalledDedupe struct{ calls chan struct{} }

func (d *stalledDedupe) Dedupe(ctx context.Context, _ string, _ time.Duration) (bool, error) {
	d.calls <- struct{}{}
	select {
	case <-ctx.Done():
		return false, ctx.Err()
	case <-time.After(10 * time.Second):
		return true, nil
	}
}

// The Events API's dedupe is the one store call before an event's
// acknowledgement: it shares the 2.5 s budget a click has, so a frozen
// Redis delays the answer to Slack by the budget at most (Slack waits
// 3 s), over HTTP and over Socket Mode (both call HandleEvent). Past it
// the event is not acknowledged (503 over HTTP), so Slack delivers it
// again.
func TestEventDedupeIsBoundedByAckBudget(t *testing.T) {
	const budget = 200 * time.Millisecond
	w := newEventsWorld(t)
	w.bot.ackBudget = budget
	stalled := &stalledDedupe{calls: make(chan struct{}, 2)}
	w.events.Dedupe = stalled
	body := `{"type":"event_callback","team_id":"` + smTeam + `","event_id":"Ev0STALL","event":` +
		`{"type":"app_mention","user":"` + smRequester + `","text":"<@U0BOT> refund 42","ts":"1700000009.000100","channel":"C0SUPPORT","event_ts":"1700000009.000100"}}`

	start := time.Now()
	rec := httptest.NewRecorder()
	w.events.HandleEvents().ServeHTTP(rec, httptest.NewRequestWithContext(t.Context(), http.MethodPost, "/slack/events", strings.NewReader(body)))
	elapsed := time.Since(start)

	select {
	case <-stalled.calls:
	default:
		t.Fatal("the event never reached the dedupe store")
	}
	if elapsed > budget+time.Second {
		t.Errorf("answered after %v, want within the %v budget (Slack gives up at 3 s)", elapsed, budget)
	}
	if rec.Code != http.StatusServiceUnavailable {
		t.Errorf("got status %d, want 503 so that Slack delivers the event again", rec.Code)
	}
}
