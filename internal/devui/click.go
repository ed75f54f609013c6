package devui

import (
	"fmt"
	"net/http"

	"github.com/slackapprove/slackbot/internal/slackfake"
)

// clickRequest is POST /click: a person clicks a button of a message.
type clickRequest struct {
	User     string `json:"user"`
	Channel  string `json:"channel"`
	TS       string `json:"ts"`
	ActionID string `json:"action_id"`
	BlockID  string `json:"block_id"`
	// Value is the button's value as the page drew it; when it no longer
	// matches the message the page is behind, and the click is refused.
	Value string `json:"value"`
}

// handleClick delivers a block_actions payload for a button of a message
// (or of an ephemeral message of the clicking user), shaped like Slack's.
func (h *Handler) handleClick() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req clickRequest
		if err := decodeRequest(w, r, &req); err != nil {
			h.writeError(w, r, err)
			return
		}
		res, err := h.click(r, req)
		if err != nil {
			h.writeError(w, r, err)
			return
		}
		writeJSON(w, http.StatusOK, res)
	})
}

func (h *Handler) click(r *http.Request, req clickRequest) (result, error) {
	user, err := h.person(req.User)
	if err != nil {
		return result{}, err
	}
	if req.ActionID == "" {
		return result{}, fmt.Errorf("no action_id given: %w", errBadRequest)
	}
	target, err := h.clicked(req.Channel, req.TS, user.ID)
	if err != nil {
		return result{}, err
	}
	el, blockID, ok := findElement(target.blocks, req.BlockID, req.ActionID)
	if !ok {
		return result{}, fmt.Errorf("this button is no longer on the message: %w", errConflict)
	}
	if el["type"] != "button" {
		return result{}, fmt.Errorf("the emulator clicks buttons only, not %v: %w", el["type"], errBadRequest)
	}
	value, _ := el["value"].(string)
	if req.Value != "" && req.Value != value {
		return result{}, fmt.Errorf("the button changed since the page drew it: %w", errConflict)
	}

	now := h.now()
	action := map[string]any{
		"type":      "button",
		"action_id": req.ActionID,
		"block_id":  blockID,
		"text":      el["text"],
		"action_ts": slackTS(now),
	}
	if value != "" {
		action["value"] = value
	}
	if style, ok := el["style"].(string); ok && style != "" {
		action["style"] = style
	}
	payload := map[string]any{
		"type":       "block_actions",
		"user":       h.payloadUser(user),
		"api_app_id": appID,
		"token":      verificationToken,
		"container": map[string]any{
			"type":         "message",
			"message_ts":   target.ts,
			"channel_id":   target.channel,
			"is_ephemeral": target.ephemeral,
		},
		"trigger_id":            h.slack.IssueTrigger(user.ID, ""),
		"team":                  h.payloadTeam(),
		"enterprise":            nil,
		"is_enterprise_install": false,
		"channel":               map[string]any{"id": target.channel, "name": h.channelName(target.channel)},
		"state":                 map[string]any{"values": map[string]any{}},
		"response_url":          h.responseURL(r, target, user.ID),
		"actions":               []any{action},
	}
	if target.message != nil {
		payload["message"] = target.message
	}
	a, err := h.sendInteraction(r.Context(), payload)
	if err != nil {
		return result{}, err
	}
	return result{OK: true, Delivered: true, Status: a.Status, Body: shown(a.Body)}, nil
}

// clickTarget is the message a click happened on.
type clickTarget struct {
	channel   string
	ts        string
	ephemeral bool
	blocks    []block
	// message is the message as a block_actions payload carries it; nil
	// for an ephemeral message, which Slack leaves out.
	message map[string]any
}

// clicked finds the message of channel with ts: a message, or else an
// ephemeral message shown to user.
func (h *Handler) clicked(channel, ts, user string) (clickTarget, error) {
	if m, ok := h.slack.Message(channel, ts); ok && !m.Deleted {
		blocks, err := decodeBlocks(m.BlocksJSON)
		if err != nil {
			return clickTarget{}, err
		}
		return clickTarget{channel: m.Channel, ts: m.TS, blocks: blocks, message: h.payloadMessage(m, blocks)}, nil
	}
	for _, e := range h.slack.Ephemerals(user) {
		if e.Channel == channel && e.TS == ts {
			blocks, err := decodeBlocks(e.BlocksJSON)
			if err != nil {
				return clickTarget{}, err
			}
			return clickTarget{channel: e.Channel, ts: e.TS, ephemeral: true, blocks: blocks}, nil
		}
	}
	return clickTarget{}, fmt.Errorf("no message %s in %s: %w", ts, channel, errNotFound)
}

// payloadMessage is m as Slack puts it in a block_actions payload.
func (h *Handler) payloadMessage(m slackfake.Message, blocks []block) map[string]any {
	msg := map[string]any{
		"type":   "message",
		"user":   m.User,
		"ts":     m.TS,
		"text":   m.Text,
		"team":   h.slack.Team().ID,
		"blocks": blocks,
	}
	if m.BotID != "" {
		msg["bot_id"] = m.BotID
		msg["app_id"] = appID
	}
	switch {
	case m.ThreadTS != "":
		msg["thread_ts"] = m.ThreadTS
		if parent, ok := h.slack.Message(m.Channel, m.ThreadTS); ok {
			msg["parent_user_id"] = parent.User
		}
	case m.ReplyCount > 0:
		msg["thread_ts"] = m.TS
		msg["reply_count"] = m.ReplyCount
		msg["reply_users"] = m.ReplyUsers
		msg["reply_users_count"] = len(m.ReplyUsers)
		msg["latest_reply"] = m.LatestTS
	}
	if !m.Edited.IsZero() {
		msg["edited"] = map[string]any{"user": m.User, "ts": slackTS(m.Edited)}
	}
	return msg
}
