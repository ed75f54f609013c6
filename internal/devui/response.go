package devui

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
)

// Slack's rules for a response_url: five uses within thirty minutes.
const (
	responseURLUses     = 5
	responseURLLifetime = 30 * time.Minute
	// maxResponseURLs bounds how many the emulator remembers.
	maxResponseURLs = 1000
)

// responseTarget is the message a response_url answers.
type responseTarget struct {
	channel   string
	ts        string
	user      string
	ephemeral bool
	issued    time.Time
	uses      int
}

// responseURL issues a response_url for a click on target by user, on the
// emulator as the browser reached it: slackbot may answer through it like
// through Slack's.
func (h *Handler) responseURL(r *http.Request, target clickTarget, user string) string {
	id := randomHex(16)
	now := h.now()
	h.respMu.Lock()
	// Forget expired URLs, and any when too many are remembered.
	for k, t := range h.responses {
		if now.Sub(t.issued) > responseURLLifetime || len(h.responses) >= maxResponseURLs {
			delete(h.responses, k)
		}
	}
	h.responses[id] = &responseTarget{channel: target.channel, ts: target.ts, user: user, ephemeral: target.ephemeral, issued: now}
	h.respMu.Unlock()
	return baseURL(r) + "/response/" + id
}

// baseURL is where the handler is mounted, as the request reached it.
func baseURL(r *http.Request) string {
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	path, _, _ := strings.Cut(r.RequestURI, "?")
	prefix := strings.TrimSuffix(path, r.URL.Path)
	return scheme + "://" + r.Host + prefix
}

// responseMessage is what an app POSTs to a response_url.
type responseMessage struct {
	Text            string          `json:"text"`
	Blocks          json.RawMessage `json:"blocks"`
	ResponseType    string          `json:"response_type"`
	ReplaceOriginal bool            `json:"replace_original"`
	DeleteOriginal  bool            `json:"delete_original"`
	ThreadTS        string          `json:"thread_ts"`
}

// maxResponseBody bounds a response_url message; Slack's own limit on a
// message is far lower.
const maxResponseBody = 1 << 20

// handleResponse answers POST /response/{id}, a response_url: it replaces
// or deletes the clicked message, or posts a new one, ephemeral unless the
// response_type is "in_channel".
func (h *Handler) handleResponse() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		t, err := h.useResponseURL(r.PathValue("id"))
		if err != nil {
			h.writeError(w, r, err)
			return
		}
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxResponseBody))
		if err != nil {
			h.writeError(w, r, fmt.Errorf("read response: %w", err))
			return
		}
		var msg responseMessage
		if err := json.Unmarshal(body, &msg); err != nil {
			h.writeError(w, r, fmt.Errorf("response_url takes a JSON message (%v): %w", err, errBadRequest))
			return
		}
		if err := h.respond(r, t, msg); err != nil {
			h.writeError(w, r, err)
			return
		}
		writeJSON(w, http.StatusOK, map[string]bool{"ok": true})
	})
}

// useResponseURL counts a use of a response_url.
func (h *Handler) useResponseURL(id string) (responseTarget, error) {
	h.respMu.Lock()
	defer h.respMu.Unlock()
	t, ok := h.responses[id]
	switch {
	case !ok || h.now().Sub(t.issued) > responseURLLifetime:
		return responseTarget{}, fmt.Errorf("expired_url: %w", errNotFound)
	case t.uses >= responseURLUses:
		return responseTarget{}, fmt.Errorf("used_url: %w", errConflict)
	}
	t.uses++
	return *t, nil
}

func (h *Handler) respond(r *http.Request, t responseTarget, msg responseMessage) error {
	content := map[string]any{"channel": t.channel, "text": msg.Text}
	if len(msg.Blocks) > 0 {
		content["blocks"] = msg.Blocks
	}
	var method string
	switch {
	case msg.DeleteOriginal && t.ephemeral:
		return nil // Slack removes it from the person's screen; slackfake keeps no such state
	case msg.DeleteOriginal:
		method, content = "chat.delete", map[string]any{"channel": t.channel, "ts": t.ts}
	case msg.ReplaceOriginal && !t.ephemeral:
		method, content["ts"] = "chat.update", t.ts
	case msg.ResponseType == "in_channel":
		method = "chat.postMessage"
		if msg.ThreadTS != "" {
			content["thread_ts"] = msg.ThreadTS
		}
	default:
		method, content["user"] = "chat.postEphemeral", t.user
		if msg.ThreadTS != "" {
			content["thread_ts"] = msg.ThreadTS
		}
	}
	if _, err := h.callSlack(r.Context(), method, content); err != nil {
		return fmt.Errorf("response_url: %w", err)
	}
	return nil
}
