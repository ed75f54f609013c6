package devui

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
	"unicode/utf8"

	"github.com/slackapprove/slackbot/internal/slackfake"
)

// postRequest is POST /post: a person writes a message.
type postRequest struct {
	User    string `json:"user"`
	Channel string `json:"channel"`
	// Text is the message as Slack stores it: mentions as <@U…>, and &, <
	// and > escaped.
	Text     string `json:"text"`
	ThreadTS string `json:"thread_ts"`
}

// maxMessageText is the longest message Slack accepts.
const maxMessageText = 40_000

// notMentioned explains why a channel message reaches no one: slackbot's
// app manifest subscribes to app_mention and message.im only.
const notMentioned = "Not sent to slackbot: in a channel, slackbot only hears messages that @mention it."

// handlePost stores the message in the workspace and delivers the event
// Slack would send slackbot for it: app_mention for a channel message that
// mentions the bot, message (channel_type "im") for a direct message to
// the app, nothing otherwise.
func (h *Handler) handlePost() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req postRequest
		if err := decodeRequest(w, r, &req); err != nil {
			h.writeError(w, r, err)
			return
		}
		res, err := h.post(r, req)
		if err != nil {
			h.writeError(w, r, err)
			return
		}
		writeJSON(w, http.StatusOK, res)
	})
}

func (h *Handler) post(r *http.Request, req postRequest) (result, error) {
	user, err := h.person(req.User)
	if err != nil {
		return result{}, err
	}
	if strings.TrimSpace(req.Text) == "" {
		return result{}, fmt.Errorf("the message is empty: %w", errBadRequest)
	}
	if utf8.RuneCountInString(req.Text) > maxMessageText {
		return result{}, fmt.Errorf("the message is longer than %d characters: %w", maxMessageText, errBadRequest)
	}
	ch, err := h.conversation(req.Channel, user.ID)
	if err != nil {
		return result{}, err
	}
	target := ch.ID
	if ch.IsIM {
		// slackfake opens the direct message with the app for a user id.
		target = user.ID
	}
	m, err := h.slack.PostAsUser(target, user.ID, req.Text, req.ThreadTS)
	if errors.Is(err, slackfake.ErrNotFound) {
		return result{}, fmt.Errorf("%w: %w", err, errNotFound)
	}
	if err != nil {
		return result{}, fmt.Errorf("post message: %w", err)
	}
	res := result{OK: true, Channel: m.Channel, TS: m.TS}

	botID := h.slack.BotUserID()
	mentioned := strings.Contains(m.Text, "<@"+botID+">") || strings.Contains(m.Text, "<@"+botID+"|")
	var event map[string]any
	switch {
	case ch.IsIM:
		event = h.messageEvent(m, "message")
		event["channel_type"] = "im"
	case mentioned:
		event = h.messageEvent(m, "app_mention")
	default:
		res.Note = notMentioned
		return res, nil
	}
	a, err := h.sendEvent(r.Context(), h.eventCallback(event))
	if err != nil {
		return result{}, err
	}
	res.Delivered, res.Status, res.Body = true, a.Status, shown(a.Body)
	return res, nil
}

// messageEvent is the inner event for a person's message m.
func (h *Handler) messageEvent(m slackfake.Message, typ string) map[string]any {
	e := map[string]any{
		"type":          typ,
		"client_msg_id": randomUUID(),
		"text":          m.Text,
		"user":          m.User,
		"ts":            m.TS,
		"team":          h.slack.Team().ID,
		"channel":       m.Channel,
		"event_ts":      m.TS,
	}
	if m.ThreadTS != "" {
		e["thread_ts"] = m.ThreadTS
		if parent, ok := h.slack.Message(m.Channel, m.ThreadTS); ok {
			e["parent_user_id"] = parent.User
		}
	}
	return e
}

// eventCallback wraps an inner event as the Events API delivers it, with
// a fresh event_id.
func (h *Handler) eventCallback(event map[string]any) map[string]any {
	team := h.slack.Team()
	return map[string]any{
		"token":      verificationToken,
		"team_id":    team.ID,
		"api_app_id": appID,
		"event":      event,
		"type":       "event_callback",
		"event_id":   randomID("Ev", 10),
		"event_time": h.now().Unix(),
		"authorizations": []map[string]any{{
			"enterprise_id":         nil,
			"team_id":               team.ID,
			"user_id":               h.slack.BotUserID(),
			"is_bot":                true,
			"is_enterprise_install": false,
		}},
		"is_ext_shared_channel": false,
		"event_context":         randomID("4-", 24),
	}
}

// randomUUID returns a random version-4 UUID, as Slack's client_msg_id.
func randomUUID() string {
	id := randomHex(16)
	b := []byte(id)
	b[12] = '4'
	b[16] = "89ab"[int(b[16])%4]
	s := string(b)
	return s[0:8] + "-" + s[8:12] + "-" + s[12:16] + "-" + s[16:20] + "-" + s[20:32]
}
