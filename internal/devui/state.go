package devui

import (
	"encoding/json"
	"net/http"
	"time"

	"github.com/slackapprove/slackbot/internal/slackfake"
)

// stateResponse is GET /state: the whole workspace as the page draws it.
type stateResponse struct {
	Team       teamJSON                   `json:"team"`
	BotUserID  string                     `json:"bot_user_id"`
	Users      []userJSON                 `json:"users"`
	Usergroups []usergroupJSON            `json:"usergroups"`
	Channels   []channelJSON              `json:"channels"`
	Messages   map[string][]messageJSON   `json:"messages"`
	Ephemerals map[string][]ephemeralJSON `json:"ephemerals"`
	Views      []viewJSON                 `json:"views"`
	// Homes are the app's Home tabs, by user.
	Homes map[string]viewJSON `json:"homes"`
}

type teamJSON struct {
	ID     string `json:"id"`
	Name   string `json:"name"`
	Domain string `json:"domain"`
}

type userJSON struct {
	ID          string `json:"id"`
	Name        string `json:"name"`
	RealName    string `json:"real_name"`
	DisplayName string `json:"display_name"`
	IsBot       bool   `json:"is_bot"`
}

type usergroupJSON struct {
	ID      string   `json:"id"`
	Handle  string   `json:"handle"`
	Name    string   `json:"name"`
	Members []string `json:"members"`
}

type channelJSON struct {
	ID        string `json:"id"`
	Name      string `json:"name"`
	IsPrivate bool   `json:"is_private"`
	IsIM      bool   `json:"is_im"`
	// User is the person of a direct message with the app.
	User string `json:"user,omitempty"`
}

// messageJSON is a message; times are Unix milliseconds.
type messageJSON struct {
	TS          string   `json:"ts"`
	ThreadTS    string   `json:"thread_ts,omitempty"`
	User        string   `json:"user"`
	BotID       string   `json:"bot_id,omitempty"`
	Text        string   `json:"text"`
	Blocks      []block  `json:"blocks"`
	Posted      int64    `json:"posted"`
	Edited      int64    `json:"edited,omitempty"`
	Edits       int      `json:"edits,omitempty"`
	ReplyCount  int      `json:"reply_count,omitempty"`
	ReplyUsers  []string `json:"reply_users,omitempty"`
	LatestReply string   `json:"latest_reply,omitempty"`
}

// ephemeralJSON is a message only User sees.
type ephemeralJSON struct {
	Channel  string  `json:"channel"`
	TS       string  `json:"ts"`
	ThreadTS string  `json:"thread_ts,omitempty"`
	User     string  `json:"user"`
	Text     string  `json:"text"`
	Blocks   []block `json:"blocks"`
	Posted   int64   `json:"posted"`
}

// viewJSON is an open modal; View is the view as the app sent it, with
// Slack's ids filled in.
type viewJSON struct {
	ID             string         `json:"id"`
	User           string         `json:"user,omitempty"`
	RootViewID     string         `json:"root_view_id"`
	PreviousViewID string         `json:"previous_view_id,omitempty"`
	Hash           string         `json:"hash"`
	View           map[string]any `json:"view"`
}

func (h *Handler) handleState() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, h.snapshot())
	})
}

// snapshot reads the workspace. Blocks that do not parse (slackfake
// refuses them, so only a bug gets here) are shown as no blocks.
func (h *Handler) snapshot() stateResponse {
	team := h.slack.Team()
	out := stateResponse{
		Team:       teamJSON{ID: team.ID, Name: team.Name, Domain: team.Domain},
		BotUserID:  h.slack.BotUserID(),
		Users:      []userJSON{},
		Usergroups: []usergroupJSON{},
		Channels:   []channelJSON{},
		Messages:   map[string][]messageJSON{},
		Ephemerals: map[string][]ephemeralJSON{},
		Views:      []viewJSON{},
		Homes:      map[string]viewJSON{},
	}
	for _, u := range h.slack.Users() {
		out.Users = append(out.Users, userJSON{ID: u.ID, Name: u.Name, RealName: u.RealName, DisplayName: u.DisplayName, IsBot: u.IsBot})
		if home, ok := h.slack.Home(u.ID); ok {
			out.Homes[u.ID] = viewOf(home)
		}
		for _, e := range h.slack.Ephemerals(u.ID) {
			blocks, _ := decodeBlocks(e.BlocksJSON)
			out.Ephemerals[u.ID] = append(out.Ephemerals[u.ID], ephemeralJSON{
				Channel: e.Channel, TS: e.TS, ThreadTS: e.ThreadTS, User: e.User,
				Text: e.Text, Blocks: blocks, Posted: millis(e.Posted),
			})
		}
	}
	for _, g := range h.slack.Usergroups() {
		out.Usergroups = append(out.Usergroups, usergroupJSON{ID: g.ID, Handle: g.Handle, Name: g.Name, Members: g.Members})
	}
	for _, c := range h.slack.Channels() {
		out.Channels = append(out.Channels, channelJSON{ID: c.ID, Name: c.Name, IsPrivate: c.IsPrivate, IsIM: c.IsIM, User: c.User})
		msgs := []messageJSON{}
		for _, m := range h.slack.Messages(c.ID) {
			msgs = append(msgs, messageOf(m))
		}
		out.Messages[c.ID] = msgs
	}
	for _, v := range h.slack.Views() {
		out.Views = append(out.Views, viewOf(v))
	}
	return out
}

func messageOf(m slackfake.Message) messageJSON {
	blocks, _ := decodeBlocks(m.BlocksJSON)
	return messageJSON{
		TS: m.TS, ThreadTS: m.ThreadTS, User: m.User, BotID: m.BotID, Text: m.Text,
		Blocks: blocks, Posted: millis(m.Posted), Edited: millis(m.Edited), Edits: len(m.Edits),
		ReplyCount: m.ReplyCount, ReplyUsers: m.ReplyUsers, LatestReply: m.LatestTS,
	}
}

func viewOf(v slackfake.View) viewJSON {
	view := map[string]any{}
	_ = decodeJSON(v.JSON, &view)
	raw, _ := json.Marshal(view["blocks"])
	blocks, _ := decodeBlocks(raw)
	view["blocks"] = blocks
	view["id"] = v.ID
	return viewJSON{ID: v.ID, User: v.User, RootViewID: v.RootViewID, PreviousViewID: v.PreviousViewID, Hash: v.Hash, View: view}
}

func millis(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixMilli()
}
