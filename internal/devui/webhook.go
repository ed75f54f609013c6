package devui

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/slackapprove/slackbot/bot"
)

// The paths of slackbot's Slack endpoints, relative to Config.Webhook.
const (
	eventsPath        = "/slack/events"
	interactivityPath = "/slack/interactivity"
)

// verificationToken fills the deprecated "token" field of payloads, which
// Slack still sends; slackbot checks signatures, not this.
const verificationToken = "devui-verification-token"

// userAgent is what Slack's requests say they are.
const userAgent = "Slackbot 1.0 (+https://api.slack.com/robots)"

// answer is slackbot's reply to a payload.
type answer struct {
	Status int
	Body   []byte
}

// sendEvent delivers an Events API payload.
func (h *Handler) sendEvent(ctx context.Context, payload any) (answer, error) {
	body, err := json.Marshal(payload)
	if err != nil {
		return answer{}, fmt.Errorf("encode event: %w", err)
	}
	return h.deliver(ctx, eventsPath, "application/json", body)
}

// sendInteraction delivers an interactivity payload, form-encoded as
// payload=<json> like Slack does.
func (h *Handler) sendInteraction(ctx context.Context, payload any) (answer, error) {
	js, err := json.Marshal(payload)
	if err != nil {
		return answer{}, fmt.Errorf("encode interaction: %w", err)
	}
	body := []byte(url.Values{"payload": {string(js)}}.Encode())
	return h.deliver(ctx, interactivityPath, "application/x-www-form-urlencoded", body)
}

// deliver POSTs a signed body to slackbot. Anything but a 2xx answer is a
// *webhookError. The request outlives the page's request: a click the
// browser gave up on still arrives whole, as with Slack.
func (h *Handler) deliver(ctx context.Context, path, contentType string, body []byte) (answer, error) {
	target := strings.TrimSuffix(h.webhook, "/") + path
	req, err := http.NewRequestWithContext(context.WithoutCancel(ctx), http.MethodPost, target, bytes.NewReader(body))
	if err != nil {
		return answer{}, &webhookError{URL: target, Err: err}
	}
	req.Header.Set("Content-Type", contentType)
	req.Header.Set("User-Agent", userAgent)
	bot.SignSlackRequest(req.Header, h.secret, h.now(), body)
	resp, err := h.client.Do(req)
	if err != nil {
		return answer{}, &webhookError{URL: target, Err: err}
	}
	defer resp.Body.Close()
	reply, err := io.ReadAll(io.LimitReader(resp.Body, maxRequestBody))
	if err != nil {
		return answer{}, &webhookError{URL: target, Status: resp.StatusCode, Err: fmt.Errorf("read answer: %w", err)}
	}
	a := answer{Status: resp.StatusCode, Body: reply}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return a, &webhookError{URL: target, Status: resp.StatusCode, Body: shown(reply)}
	}
	return a, nil
}

// shown cuts an answer for the page.
func shown(b []byte) string {
	if len(b) > maxShownBody {
		return strings.ToValidUTF8(string(b[:maxShownBody]), "") + "…"
	}
	return string(b)
}

// randomID returns prefix and n random characters of Slack's id alphabet.
func randomID(prefix string, n int) string {
	const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
	b := make([]byte, n)
	_, _ = rand.Read(b) // never fails (crypto/rand panics instead)
	for i := range b {
		b[i] = alphabet[int(b[i])%len(alphabet)]
	}
	return prefix + string(b)
}

// slackTS formats t as a Slack timestamp, e.g. "1700000000.123456".
func slackTS(t time.Time) string {
	us := t.UnixMicro()
	return fmt.Sprintf("%d.%06d", us/1_000_000, us%1_000_000)
}
