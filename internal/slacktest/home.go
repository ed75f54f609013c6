package slacktest

import (
	"fmt"
	"time"

	"github.com/slack-go/slack"

	"github.com/slackapprove/slackbot/internal/slackfake"
)

// HomeButtons returns the buttons with actionID on a Home tab (in actions
// blocks and as section accessories), in the order shown.
func HomeButtons(v slackfake.View, actionID string) []*slack.ButtonBlockElement {
	var out []*slack.ButtonBlockElement
	for _, b := range v.Blocks {
		switch b := b.(type) {
		case *slack.ActionBlock:
			for _, el := range b.Elements.ElementSet {
				if btn, ok := el.(*slack.ButtonBlockElement); ok && btn.ActionID == actionID {
					out = append(out, btn)
				}
			}
		case *slack.SectionBlock:
			if b.Accessory != nil && b.Accessory.ButtonElement != nil && b.Accessory.ButtonElement.ActionID == actionID {
				out = append(out, b.Accessory.ButtonElement)
			}
		}
	}
	return out
}

// HomeClick is a person clicking a button on their App Home tab.
type HomeClick struct {
	Team string
	User string
	// Home is the Home tab as the person sees it (slackfake.Server.Home).
	Home slackfake.View
	// Button is the button clicked, as HomeButtons returns it.
	Button *slack.ButtonBlockElement
}

// Payload returns the block_actions payload Slack sends for the click: its
// container is the view, and the view is the user's Home tab.
func (c HomeClick) Payload() []byte {
	return mustJSON(map[string]any{
		"type":       "block_actions",
		"team":       map[string]any{"id": c.Team, "domain": "fake"},
		"user":       map[string]any{"id": c.User, "username": "u", "team_id": c.Team},
		"api_app_id": appID,
		"token":      "x",
		"trigger_id": fmt.Sprintf("%d.trigger", time.Now().UnixNano()),
		"container":  map[string]any{"type": "view", "view_id": c.Home.ID},
		"view": map[string]any{
			"id": c.Home.ID, "team_id": c.Team, "type": "home", "hash": c.Home.Hash,
			"callback_id": c.Home.CallbackID, "private_metadata": c.Home.PrivateMetadata,
			"state": map[string]any{"values": map[string]any{}},
		},
		"actions": []map[string]any{{
			"type": "button", "action_id": c.Button.ActionID, "block_id": "home",
			"value": c.Button.Value, "action_ts": fmt.Sprint(time.Now().Unix()),
		}},
	})
}

// HomeOpened is the app_home_opened event of a person opening the app's
// Home tab.
type HomeOpened struct {
	Team    string
	EventID string
	User    string
	// Tab is "home" (the default) or "messages".
	Tab string
}

// Body returns the event_callback body of the event.
func (h HomeOpened) Body() []byte {
	tab := h.Tab
	if tab == "" {
		tab = "home"
	}
	id := h.EventID
	if id == "" {
		id = fmt.Sprintf("EvHome%d", time.Now().UnixNano())
	}
	ts := fmt.Sprintf("%d.000100", time.Now().Unix())
	return mustJSON(map[string]any{
		"token": "x", "team_id": h.Team, "api_app_id": appID, "type": "event_callback",
		"event_id": id, "event_time": time.Now().Unix(),
		"event": map[string]any{"type": "app_home_opened", "user": h.User, "channel": "D0" + h.User, "tab": tab, "event_ts": ts},
	})
}
