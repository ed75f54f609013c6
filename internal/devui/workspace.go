package devui

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"

	"github.com/slackapprove/slackbot/internal/slackfake"
)

// appID is the app's id in payloads (api_app_id). slackfake does not
// export the app id it was given, so this is its default; slackbot does
// not check it.
const appID = "A0APP"

// person returns the member of the workspace with id, who must be a
// person: the app does not click buttons.
func (h *Handler) person(id string) (slackfake.User, error) {
	for _, u := range h.slack.Users() {
		if u.ID != id {
			continue
		}
		if u.IsBot {
			return slackfake.User{}, fmt.Errorf("%s is the app, not a person: %w", id, errBadRequest)
		}
		return u, nil
	}
	return slackfake.User{}, fmt.Errorf("no user %q in the workspace: %w", id, errBadRequest)
}

// conversation returns the channel with id as user sees it. The direct
// message between user and the app (D + the user id without its U) may
// not exist yet: it is opened by the first message.
func (h *Handler) conversation(id, user string) (slackfake.Channel, error) {
	if id == "" {
		return slackfake.Channel{}, fmt.Errorf("no channel given: %w", errBadRequest)
	}
	own := len(user) > 1 && id == "D"+user[1:]
	for _, c := range h.slack.Channels() {
		if c.ID != id {
			continue
		}
		if c.IsIM && !own && c.User != user {
			return slackfake.Channel{}, fmt.Errorf("%s is someone else's direct message with the app: %w", id, errBadRequest)
		}
		return c, nil
	}
	if own {
		return slackfake.Channel{ID: id, IsIM: true, User: user}, nil
	}
	return slackfake.Channel{}, fmt.Errorf("no channel %q in the workspace: %w", id, errNotFound)
}

// channelName is a channel's name in payloads; Slack calls every direct
// message "directmessage".
func (h *Handler) channelName(id string) string {
	for _, c := range h.slack.Channels() {
		if c.ID == id {
			if c.IsIM {
				return "directmessage"
			}
			return c.Name
		}
	}
	return ""
}

// payloadUser is a person as payloads name them.
func (h *Handler) payloadUser(u slackfake.User) map[string]any {
	return map[string]any{"id": u.ID, "username": u.Name, "name": u.Name, "team_id": h.slack.Team().ID}
}

// payloadTeam is the workspace as payloads name it.
func (h *Handler) payloadTeam() map[string]any {
	t := h.slack.Team()
	return map[string]any{"id": t.ID, "domain": t.Domain}
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b) // never fails (crypto/rand panics instead)
	return hex.EncodeToString(b)
}
