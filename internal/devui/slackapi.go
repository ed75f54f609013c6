package devui

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
)

// errSlackAPI is the fake Slack Web API refusing a call the emulator made
// on slackbot's behalf (a response_action "update" or "push").
var errSlackAPI = errors.New("slack api")

// callSlack calls a Web API method of the fake workspace in process, with
// the bot token, as slackbot would over HTTP: the workspace checks the
// call and tells subscribers like for any other.
func (h *Handler) callSlack(ctx context.Context, method string, params map[string]any) (map[string]any, error) {
	body, err := json.Marshal(params)
	if err != nil {
		return nil, fmt.Errorf("%s: encode: %w", method, err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "/api/"+method, bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", method, err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+h.slack.Token())
	rec := &recorder{header: http.Header{}, status: http.StatusOK}
	h.slack.ServeHTTP(rec, req)
	var out map[string]any
	if err := json.Unmarshal(rec.body.Bytes(), &out); err != nil {
		return nil, fmt.Errorf("%s: HTTP %d: %w", method, rec.status, err)
	}
	if ok, _ := out["ok"].(bool); !ok {
		return out, fmt.Errorf("%s: %v %v: %w", method, out["error"], out["errors"], errSlackAPI)
	}
	return out, nil
}

// botID returns the app's bot id (B…), which slackfake reports in
// auth.test only; the answer is kept once it arrives.
func (h *Handler) botID() string {
	h.botMu.Lock()
	defer h.botMu.Unlock()
	if h.bot != "" {
		return h.bot
	}
	out, err := h.callSlack(context.Background(), "auth.test", map[string]any{})
	if err != nil {
		return ""
	}
	h.bot, _ = out["bot_id"].(string)
	return h.bot
}

// recorder is an in-memory http.ResponseWriter for in-process calls.
type recorder struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func (r *recorder) Header() http.Header         { return r.header }
func (r *recorder) Write(b []byte) (int, error) { return r.body.Write(b) }
func (r *recorder) WriteHeader(status int)      { r.status = status }
