package devui

import (
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"github.com/slackapprove/slackbot/internal/slackfake"
)

// changeJSON is one change of GET /changes.
type changeJSON struct {
	Seq      uint64 `json:"seq"`
	Kind     string `json:"kind"`
	Channel  string `json:"channel,omitempty"`
	TS       string `json:"ts,omitempty"`
	ThreadTS string `json:"thread_ts,omitempty"`
	User     string `json:"user,omitempty"`
	ViewID   string `json:"view_id,omitempty"`
}

// heartbeat keeps idle event streams open through proxies that close
// silent connections.
const heartbeat = 20 * time.Second

// handleChanges streams the workspace's changes as server-sent events: a
// "ready" event once subscribed, then a "change" event per change. The
// page reloads /state on each; a gap in seq means events were missed,
// which a reload repairs too.
func (h *Handler) handleChanges() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rc := http.NewResponseController(w)
		// The stream outlives a server's WriteTimeout, which is meant for
		// ordinary requests; where the writer cannot lift it, the page
		// reconnects when it ends.
		_ = rc.SetWriteDeadline(time.Time{})
		events, unsubscribe := h.slack.Subscribe()
		defer unsubscribe()

		w.Header().Set("Content-Type", "text/event-stream")
		w.Header().Set("Cache-Control", "no-cache")
		w.Header().Set("X-Accel-Buffering", "no")
		w.WriteHeader(http.StatusOK)
		if _, err := fmt.Fprint(w, "retry: 1000\nevent: ready\ndata: {}\n\n"); err != nil {
			return
		}
		if err := rc.Flush(); err != nil {
			return
		}
		tick := time.NewTicker(heartbeat)
		defer tick.Stop()
		for {
			var frame string
			select {
			case <-r.Context().Done():
				return
			case <-h.done:
				return
			case <-tick.C:
				frame = ": ping\n\n"
			case e, ok := <-events:
				if !ok {
					return
				}
				frame = "event: change\ndata: " + changeOf(e) + "\n\n"
			}
			if _, err := fmt.Fprint(w, frame); err != nil {
				return
			}
			if err := rc.Flush(); err != nil {
				return
			}
		}
	})
}

func changeOf(e slackfake.Change) string {
	b, _ := json.Marshal(changeJSON{
		Seq: e.Seq, Kind: string(e.Kind), Channel: e.Channel, TS: e.TS,
		ThreadTS: e.ThreadTS, User: e.User, ViewID: e.ViewID,
	})
	return string(b)
}
