package slackfake

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/slack-go/slack"
)

// Team is the workspace.
type Team struct {
	ID     string
	Name   string
	Domain string // as in https://<domain>.slack.com
}

// User is a member of the workspace.
type User struct {
	ID          string
	Name        string // the handle, e.g. "alice"
	RealName    string
	DisplayName string
	TZ          string
	IsBot       bool
}

// Usergroup is a Slack usergroup (a "subteam", id S…).
type Usergroup struct {
	ID      string
	Handle  string
	Name    string
	Members []string
}

// Channel is a conversation: a public (C…) or private (G…) channel, or a
// direct message with User (D…).
type Channel struct {
	ID        string
	Name      string
	IsPrivate bool
	IsIM      bool
	User      string // the other person of a direct message
}

// Message is a message in a channel, as it is now.
type Message struct {
	Channel string
	TS      string
	// ThreadTS is the parent's ts for a reply, "" for a top-level message.
	ThreadTS string
	// User posted it: the bot user for calls through the API, a person for
	// PostAsUser.
	User  string
	BotID string
	Text  string
	// Blocks is the Block Kit content, parsed by slack-go; BlocksJSON is it
	// as it was sent (nil when the message has no blocks).
	Blocks      []slack.Block
	BlocksJSON  json.RawMessage
	Attachments json.RawMessage
	Metadata    json.RawMessage
	Posted      time.Time
	// Edits holds earlier versions, oldest first; Edited is when the last
	// chat.update happened.
	Edits   []Edit
	Edited  time.Time
	Deleted bool
	// Replies counts the thread's replies (on a parent), with who replied.
	ReplyCount int
	ReplyUsers []string
	LatestTS   string
}

// Edit is a version of a message that a chat.update replaced.
type Edit struct {
	Text       string
	Blocks     []slack.Block
	BlocksJSON json.RawMessage
	At         time.Time // when this version was replaced
}

// Ephemeral is a message only User sees.
type Ephemeral struct {
	Channel    string
	User       string
	TS         string
	ThreadTS   string
	Text       string
	Blocks     []slack.Block
	BlocksJSON json.RawMessage
	Posted     time.Time
}

// View is a modal opened with views.open or views.push.
type View struct {
	ID             string
	ExternalID     string
	Hash           string
	RootViewID     string
	PreviousViewID string
	// TriggerID opened the view; User is who it was opened for, when the
	// trigger came from IssueTrigger.
	TriggerID       string
	User            string
	Type            string
	Title           string
	CallbackID      string
	PrivateMetadata string
	// JSON is the view as the app last sent it; Blocks its blocks.
	JSON    json.RawMessage
	Blocks  []slack.Block
	Opened  time.Time
	Updated time.Time
	// History holds the JSON of earlier versions, oldest first.
	History []json.RawMessage
	Closed  bool
}

type trigger struct {
	user   string
	viewID string
	issued time.Time
	used   bool
}

// triggerLifetime is how long Slack accepts a trigger_id.
const triggerLifetime = 3 * time.Second

var (
	channelIDPattern = regexp.MustCompile(`^[CGD][A-Z0-9]{2,}$`)
	userIDPattern    = regexp.MustCompile(`^[UW][A-Z0-9]{2,}$`)
)

func (s *Server) addUser(u User) {
	if _, ok := s.users[u.ID]; !ok {
		s.userOrder = append(s.userOrder, u.ID)
	}
	s.users[u.ID] = &u
}

func (s *Server) addUsergroup(g Usergroup) {
	if _, ok := s.groups[g.ID]; !ok {
		s.groupOrder = append(s.groupOrder, g.ID)
	}
	g.Members = slices.Clone(g.Members)
	s.groups[g.ID] = &g
}

func (s *Server) addChannel(c Channel) {
	if _, ok := s.channels[c.ID]; !ok {
		s.chanOrder = append(s.chanOrder, c.ID)
	}
	s.channels[c.ID] = &c
}

// AddUser adds or replaces a person.
func (s *Server) AddUser(u User) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.addUser(u)
}

// AddUsergroup adds or replaces a usergroup, members included.
func (s *Server) AddUsergroup(g Usergroup) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.addUsergroup(g)
}

// AddChannel adds or replaces a channel.
func (s *Server) AddChannel(c Channel) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.addChannel(c)
}

// Team returns the workspace.
func (s *Server) Team() Team {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.team
}

// BotUserID returns the app's bot user id.
func (s *Server) BotUserID() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.botUID
}

// Users returns the workspace's members, bot included, in the order added.
func (s *Server) Users() []User {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]User, 0, len(s.userOrder))
	for _, id := range s.userOrder {
		out = append(out, *s.users[id])
	}
	return out
}

// Usergroups returns the usergroups in the order added.
func (s *Server) Usergroups() []Usergroup {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Usergroup, 0, len(s.groupOrder))
	for _, id := range s.groupOrder {
		g := *s.groups[id]
		g.Members = slices.Clone(g.Members)
		out = append(out, g)
	}
	return out
}

// Channels returns the channels, including those created on first use, in
// the order they appeared.
func (s *Server) Channels() []Channel {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Channel, 0, len(s.chanOrder))
	for _, id := range s.chanOrder {
		out = append(out, *s.channels[id])
	}
	return out
}

// Messages returns every message of a channel that is not deleted, thread
// replies included, in the order they were posted.
func (s *Server) Messages(channel string) []Message {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Message
	for _, m := range s.messages[channel] {
		if !m.Deleted {
			out = append(out, m.clone())
		}
	}
	return out
}

// Message returns the message of channel with ts, deleted or not.
func (s *Server) Message(channel, ts string) (Message, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if m := s.message(channel, ts); m != nil {
		return m.clone(), true
	}
	return Message{}, false
}

// Replies returns a thread as conversations.replies does: the parent
// first, then its replies in order, without deleted messages.
func (s *Server) Replies(channel, threadTS string) []Message {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Message
	for _, m := range s.thread(channel, threadTS) {
		out = append(out, m.clone())
	}
	return out
}

// Ephemerals returns the ephemeral messages shown to user, in order.
func (s *Server) Ephemerals(user string) []Ephemeral {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Ephemeral
	for _, e := range s.ephemerals {
		if e.User == user {
			c := *e
			c.Blocks = slices.Clone(e.Blocks)
			out = append(out, c)
		}
	}
	return out
}

// Views returns the modals that are open, in the order they were opened.
func (s *Server) Views() []View {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []View
	for _, id := range s.viewOrder {
		if v := s.views[id]; !v.Closed {
			out = append(out, v.clone())
		}
	}
	return out
}

// View returns the modal with id, open or closed.
func (s *Server) View(id string) (View, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	v, ok := s.views[id]
	if !ok {
		return View{}, false
	}
	return v.clone(), true
}

// CloseView closes a modal as a person closing or submitting it would:
// the view and every view pushed on top of it.
func (s *Server) CloseView(id string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	v, ok := s.views[id]
	if !ok || v.Closed {
		return false
	}
	start := slices.Index(s.viewOrder, id)
	for _, other := range s.viewOrder[start:] {
		o := s.views[other]
		if !o.Closed && (o.ID == id || o.RootViewID == v.RootViewID) {
			o.Closed = true
			s.emit(Change{Kind: ChangeViewClosed, ViewID: o.ID, User: o.User})
		}
	}
	return true
}

// IssueTrigger returns a trigger_id as Slack puts in an interaction
// payload: views.open and views.push accept it once, within 3 seconds (by
// the server's clock). With viewID, views.push stacks onto that view.
// Trigger ids the server did not issue are accepted too, without expiry.
func (s *Server) IssueTrigger(user, viewID string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.ids++
	id := fmt.Sprintf("%d.%d.%032x", s.ids, s.now().Unix(), s.ids)
	s.triggers[id] = &trigger{user: user, viewID: viewID, issued: s.now()}
	return id
}

// ErrNotFound is returned by PostAsUser for an unknown channel or thread.
var ErrNotFound = errors.New("slackfake: not found")

// PostAsUser posts a message from a person (not the app), as when someone
// writes to the bot; it reaches subscribers like any other message.
func (s *Server) PostAsUser(channel, user, text, threadTS string) (Message, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ch, apiErr := s.resolveChannel(channel)
	if apiErr != nil {
		return Message{}, fmt.Errorf("post to %s: %w", channel, ErrNotFound)
	}
	m := &Message{Channel: ch.ID, User: user, Text: text}
	if apiErr := s.post(m, threadTS); apiErr != nil {
		return Message{}, fmt.Errorf("post in thread %s: %w", threadTS, ErrNotFound)
	}
	return m.clone(), nil
}

func (m *Message) clone() Message {
	c := *m
	c.Blocks = slices.Clone(m.Blocks)
	c.BlocksJSON = bytes.Clone(m.BlocksJSON)
	c.Edits = slices.Clone(m.Edits)
	c.ReplyUsers = slices.Clone(m.ReplyUsers)
	return c
}

func (v *View) clone() View {
	c := *v
	c.Blocks = slices.Clone(v.Blocks)
	c.JSON = bytes.Clone(v.JSON)
	c.History = slices.Clone(v.History)
	return c
}

// resolveChannel finds a channel, opening a direct message for a user id
// and, unless strict, creating a channel for a well-formed channel id.
func (s *Server) resolveChannel(id string) (*Channel, *apiError) {
	if ch, ok := s.channels[id]; ok {
		return ch, nil
	}
	switch {
	case id == "":
		return nil, errCode("channel_not_found")
	case userIDPattern.MatchString(id):
		if _, known := s.users[id]; !known && len(s.users) > 1 {
			return nil, errCode("channel_not_found")
		}
		dm := "D" + id[1:]
		if ch, ok := s.channels[dm]; ok {
			return ch, nil
		}
		s.addChannel(Channel{ID: dm, IsIM: true, User: id})
		return s.channels[dm], nil
	case !s.strict && channelIDPattern.MatchString(id):
		s.addChannel(Channel{ID: id, Name: strings.ToLower(id), IsPrivate: id[0] == 'G', IsIM: id[0] == 'D'})
		return s.channels[id], nil
	}
	return nil, errCode("channel_not_found")
}

func (s *Server) message(channel, ts string) *Message {
	for _, m := range s.messages[channel] {
		if m.TS == ts {
			return m
		}
	}
	return nil
}

// thread returns a thread's live messages, parent first; a reply's ts
// finds its thread.
func (s *Server) thread(channel, ts string) []*Message {
	parent := s.message(channel, ts)
	if parent == nil || parent.Deleted {
		return nil
	}
	if parent.ThreadTS != "" {
		parent = s.message(channel, parent.ThreadTS)
	}
	out := []*Message{parent}
	for _, m := range s.messages[channel] {
		if m.ThreadTS == parent.TS && !m.Deleted {
			out = append(out, m)
		}
	}
	return out
}

// post stores a new message, in a thread when threadTS is set; s.mu is held.
func (s *Server) post(m *Message, threadTS string) *apiError {
	if threadTS != "" {
		parent := s.message(m.Channel, threadTS)
		if parent == nil || parent.Deleted {
			return errCode("thread_not_found")
		}
		// A reply to a reply joins the parent's thread, as in Slack.
		if parent.ThreadTS != "" {
			parent = s.message(m.Channel, parent.ThreadTS)
		}
		m.ThreadTS = parent.TS
		m.TS = s.nextTS()
		parent.ReplyCount++
		parent.LatestTS = m.TS
		if !slices.Contains(parent.ReplyUsers, m.User) {
			parent.ReplyUsers = append(parent.ReplyUsers, m.User)
		}
	} else {
		m.TS = s.nextTS()
	}
	m.Posted = s.now()
	s.messages[m.Channel] = append(s.messages[m.Channel], m)
	s.emit(Change{Kind: ChangeMessage, Channel: m.Channel, TS: m.TS, ThreadTS: m.ThreadTS, User: m.User})
	return nil
}

// wire is the message as Slack's API returns it.
func (s *Server) wire(m *Message) map[string]any {
	out := map[string]any{
		"type": "message",
		"ts":   m.TS,
		"text": m.Text,
		"team": s.team.ID,
	}
	if m.User != "" {
		out["user"] = m.User
	}
	if m.BotID != "" {
		out["bot_id"] = m.BotID
		out["app_id"] = s.appID
	}
	if m.BlocksJSON != nil {
		out["blocks"] = m.BlocksJSON
	}
	if m.Attachments != nil {
		out["attachments"] = m.Attachments
	}
	if m.Metadata != nil {
		out["metadata"] = m.Metadata
	}
	if m.ThreadTS != "" {
		out["thread_ts"] = m.ThreadTS
		if parent := s.message(m.Channel, m.ThreadTS); parent != nil {
			out["parent_user_id"] = parent.User
		}
	}
	if m.ReplyCount > 0 {
		out["thread_ts"] = m.TS
		out["reply_count"] = m.ReplyCount
		out["reply_users"] = m.ReplyUsers
		out["reply_users_count"] = len(m.ReplyUsers)
		out["latest_reply"] = m.LatestTS
	}
	if !m.Edited.IsZero() {
		out["edited"] = map[string]any{"user": m.User, "ts": fmt.Sprintf("%d.%06d", m.Edited.Unix(), m.Edited.Nanosecond()/1000)}
	}
	return out
}
