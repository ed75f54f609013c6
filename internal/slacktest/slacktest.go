// Package slacktest speaks to slackbot's HTTP handlers as Slack does, for
// tests: it builds interactivity payloads (a click on a card's button, a
// modal's submission) and Events API bodies shaped like Slack's, and posts
// them signed with the app's signing secret.
//
// Cards and views come from internal/slackfake, the fake Slack Web API the
// tests run against. It is for tests only; nothing outside _test.go files
// imports it.
package slacktest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/slack-go/slack"

	"github.com/slackapprove/slackbot/bot"
	"github.com/slackapprove/slackbot/internal/slackfake"
)

// Content types of Slack's requests: interactivity payloads come as a
// form, Events API callbacks as JSON.
const (
	FormContentType = "application/x-www-form-urlencoded"
	JSONContentType = "application/json"
)

// appID is the Slack app the payloads are addressed to.
const appID = "A0TEST"

// Button returns the button with actionID on a card, and whether the card
// has one.
func Button(m slackfake.Message, actionID string) (*slack.ButtonBlockElement, bool) {
	for _, b := range m.Blocks {
		ab, ok := b.(*slack.ActionBlock)
		if !ok {
			continue
		}
		for _, el := range ab.Elements.ElementSet {
			if btn, ok := el.(*slack.ButtonBlockElement); ok && btn.ActionID == actionID {
				return btn, true
			}
		}
	}
	return nil, false
}

// Click is a person clicking a button on a message.
type Click struct {
	// Team is the workspace the click comes from.
	Team string
	// User is who clicks.
	User string
	// Message is the message as the person sees it.
	Message slackfake.Message
	// Button is the button clicked, as Button returns it.
	Button *slack.ButtonBlockElement
	// TriggerID lets the handler open a modal; slackfake.Server.IssueTrigger
	// makes one views.open accepts. Empty: one made up from the clock.
	TriggerID string
}

// Payload returns the block_actions payload of the click, the JSON Slack
// sends in the payload field of its form.
func (c Click) Payload() []byte {
	trigger := c.TriggerID
	if trigger == "" {
		trigger = fmt.Sprintf("%d.trigger", time.Now().UnixNano())
	}
	m := c.Message
	return mustJSON(map[string]any{
		"type":       "block_actions",
		"team":       map[string]any{"id": c.Team, "domain": "fake"},
		"user":       map[string]any{"id": c.User, "username": strings.ToLower(c.User), "team_id": c.Team},
		"api_app_id": appID,
		"token":      "x",
		"trigger_id": trigger,
		"container":  map[string]any{"type": "message", "message_ts": m.TS, "channel_id": m.Channel, "is_ephemeral": false},
		"channel":    map[string]any{"id": m.Channel},
		"message":    map[string]any{"type": "message", "ts": m.TS, "text": m.Text, "blocks": json.RawMessage(m.BlocksJSON)},
		"actions": []map[string]any{{
			"type": "button", "action_id": c.Button.ActionID, "block_id": bot.BlockIDActions,
			"value": c.Button.Value, "action_ts": fmt.Sprint(time.Now().Unix()),
		}},
	})
}

// Submission is a person submitting an open modal.
type Submission struct {
	// Team is the workspace the submission comes from.
	Team string
	// User is who submits.
	User string
	// View is the open modal.
	View slackfake.View
	// Values are the plain-text inputs, by block_id and then action_id.
	Values map[string]map[string]string
}

// Payload returns the view_submission payload, the JSON Slack sends in the
// payload field of its form.
func (s Submission) Payload() []byte {
	state := map[string]any{}
	for block, actions := range s.Values {
		a := map[string]any{}
		for action, v := range actions {
			a[action] = map[string]any{"type": "plain_text_input", "value": v}
		}
		state[block] = a
	}
	return mustJSON(map[string]any{
		"type":       "view_submission",
		"team":       map[string]any{"id": s.Team, "domain": "fake"},
		"user":       map[string]any{"id": s.User, "team_id": s.Team},
		"api_app_id": appID,
		"trigger_id": "t.submit",
		"view": map[string]any{
			"id": s.View.ID, "team_id": s.Team, "type": "modal",
			"callback_id": s.View.CallbackID, "private_metadata": s.View.PrivateMetadata,
			"state": map[string]any{"values": state}, "hash": s.View.Hash,
		},
	})
}

// Mention is an app_mention event: a message that mentions the bot.
type Mention struct {
	// Team is the workspace of the message.
	Team string
	// EventID identifies the delivery; Slack retries with the same one.
	// Empty: "Ev" followed by TS.
	EventID string
	// User wrote the message.
	User string
	// Channel is where it was posted.
	Channel string
	// Text is the message's text, the bot's mention included.
	Text string
	// TS is the message's timestamp.
	TS string
	// ThreadTS is the parent's ts for a reply in a thread; empty for a
	// top-level message.
	ThreadTS string
}

// Body returns the event_callback body of the mention, as Slack posts it
// to the Events API URL.
func (m Mention) Body() []byte {
	id := m.EventID
	if id == "" {
		id = "Ev" + m.TS
	}
	event := map[string]any{
		"type": "app_mention", "user": m.User, "text": m.Text, "ts": m.TS,
		"channel": m.Channel, "event_ts": m.TS,
	}
	if m.ThreadTS != "" {
		event["thread_ts"] = m.ThreadTS
	}
	return mustJSON(map[string]any{
		"token": "x", "team_id": m.Team, "api_app_id": appID, "type": "event_callback",
		"event_id": id, "event_time": time.Now().Unix(), "event": event,
	})
}

// Form returns the form body Slack posts an interactivity payload in.
func Form(payload []byte) []byte {
	return []byte("payload=" + url.QueryEscape(string(payload)))
}

// NewRequest returns a POST of body to url carrying the signature Slack
// would send with it, made with secret at signedAt.
func NewRequest(ctx context.Context, url, contentType string, body []byte, secret string, signedAt time.Time) (*http.Request, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("new request: %w", err)
	}
	req.Header.Set("Content-Type", contentType)
	bot.SignSlackRequest(req.Header, secret, signedAt, body)
	return req, nil
}

// Post sends NewRequest's request with http.DefaultClient. The response's
// body has already been read in full and closed; resp.Body reads it again
// and needs no closing.
func Post(ctx context.Context, url, contentType string, body []byte, secret string, signedAt time.Time) (*http.Response, error) {
	req, err := NewRequest(ctx, url, contentType, body, secret, signedAt)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("post %s: %w", url, err)
	}
	b, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return nil, fmt.Errorf("read the answer of %s: %w", url, err)
	}
	resp.Body = io.NopCloser(bytes.NewReader(b))
	return resp, nil
}

// mustJSON encodes v, which holds nothing json.Marshal can refuse.
func mustJSON(v map[string]any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("slacktest: encode a payload: %v", err))
	}
	return b
}
