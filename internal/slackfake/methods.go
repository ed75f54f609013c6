package slackfake

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/slack-go/slack"
)

// methodFunc answers one Web API method; s.mu is held. The response gets
// "ok": true added.
type methodFunc func(s *Server, r *request) (map[string]any, *apiError)

// methods are the Web API methods the fake speaks.
var methods = map[string]methodFunc{
	"auth.test":             (*Server).authTest,
	"chat.postMessage":      (*Server).postMessage,
	"chat.update":           (*Server).updateMessage,
	"chat.delete":           (*Server).deleteMessage,
	"chat.postEphemeral":    (*Server).postEphemeral,
	"chat.getPermalink":     (*Server).getPermalink,
	"conversations.info":    (*Server).conversationsInfo,
	"conversations.replies": (*Server).conversationsReplies,
	"conversations.history": (*Server).conversationsHistory,
	"users.info":            (*Server).usersInfo,
	"usergroups.users.list": (*Server).usergroupsUsersList,
	"views.open":            (*Server).viewsOpen,
	"views.push":            (*Server).viewsPush,
	"views.update":          (*Server).viewsUpdate,
	"views.publish":         (*Server).viewsPublish,
}

// maxMessageText is the longest text Slack accepts in a message.
const maxMessageText = 40_000

func (s *Server) authTest(*request) (map[string]any, *apiError) {
	return map[string]any{
		"url":                   fmt.Sprintf("https://%s.slack.com/", s.team.Domain),
		"team":                  s.team.Name,
		"user":                  s.users[s.botUID].Name,
		"team_id":               s.team.ID,
		"user_id":               s.botUID,
		"bot_id":                s.botID,
		"is_enterprise_install": false,
	}, nil
}

// content reads text, blocks, attachments and metadata of a message.
type content struct {
	text        string
	hasText     bool
	blocks      []slack.Block
	blocksJSON  json.RawMessage
	hasBlocks   bool
	attachments json.RawMessage
	metadata    json.RawMessage
}

func readContent(r *request) (content, *apiError) {
	c := content{text: r.str("text"), hasText: r.has("text")}
	if utf8.RuneCountInString(c.text) > maxMessageText {
		return c, errCode("msg_too_long")
	}
	if raw, ok := r.json("blocks"); ok {
		blocks, rawBlocks, apiErr := parseBlocks(raw, maxMessageBlocks)
		if apiErr != nil {
			return c, apiErr
		}
		if blocksText(rawBlocks) > maxBlocksText {
			return c, errCode("msg_blocks_too_long")
		}
		c.blocks, c.blocksJSON, c.hasBlocks = blocks, rawBlocks, true
	}
	if raw, ok := r.json("attachments"); ok && len(bytes.TrimSpace(raw)) > 0 {
		if !json.Valid(raw) {
			return c, errCode("invalid_attachments")
		}
		c.attachments = bytes.Clone(raw)
	}
	if raw, ok := r.json("metadata"); ok && len(bytes.TrimSpace(raw)) > 0 {
		if !json.Valid(raw) {
			return c, errCode("invalid_metadata_format")
		}
		c.metadata = bytes.Clone(raw)
	}
	return c, nil
}

// parseBlocks validates Block Kit JSON against Slack's limits and parses
// it with slack-go.
func parseBlocks(raw json.RawMessage, maxBlocks int) ([]slack.Block, json.RawMessage, *apiError) {
	raw = bytes.TrimSpace(raw)
	if problems := validateBlocks(raw, maxBlocks); len(problems) > 0 {
		return nil, nil, &apiError{code: "invalid_blocks", errors: problems}
	}
	var bs slack.Blocks
	if err := json.Unmarshal(raw, &bs); err != nil {
		return nil, nil, &apiError{code: "invalid_blocks", errors: []string{err.Error()}}
	}
	if bs.BlockSet == nil {
		bs.BlockSet = []slack.Block{}
	}
	return bs.BlockSet, json.RawMessage(bytes.Clone(raw)), nil
}

func (s *Server) postMessage(r *request) (map[string]any, *apiError) {
	ch, apiErr := s.resolveChannel(r.str("channel"))
	if apiErr != nil {
		return nil, apiErr
	}
	c, apiErr := readContent(r)
	if apiErr != nil {
		return nil, apiErr
	}
	if c.text == "" && len(c.blocks) == 0 && c.attachments == nil {
		return nil, errCode("no_text")
	}
	m := &Message{
		Channel: ch.ID, User: s.botUID, BotID: s.botID, Text: c.text,
		Blocks: c.blocks, BlocksJSON: c.blocksJSON, Attachments: c.attachments, Metadata: c.metadata,
	}
	if apiErr := s.post(m, r.str("thread_ts")); apiErr != nil {
		return nil, apiErr
	}
	return map[string]any{"channel": ch.ID, "ts": m.TS, "message": s.wire(m)}, nil
}

// botMessage finds the bot's own message that a request names by channel
// and ts, as chat.update and chat.delete do; notOwn is the error code for a
// message someone else posted.
func (s *Server) botMessage(r *request, notOwn string) (*Channel, *Message, *apiError) {
	ch, apiErr := s.resolveChannel(r.str("channel"))
	if apiErr != nil {
		return nil, nil, apiErr
	}
	m := s.message(ch.ID, r.str("ts"))
	if m == nil || m.Deleted {
		return nil, nil, errCode("message_not_found")
	}
	if m.BotID != s.botID {
		return nil, nil, errCode(notOwn)
	}
	return ch, m, nil
}

func (s *Server) updateMessage(r *request) (map[string]any, *apiError) {
	ch, m, apiErr := s.botMessage(r, "cant_update_message")
	if apiErr != nil {
		return nil, apiErr
	}
	c, apiErr := readContent(r)
	if apiErr != nil {
		return nil, apiErr
	}
	if !c.hasText && !c.hasBlocks && c.attachments == nil {
		return nil, errCode("no_text")
	}
	now := s.now()
	m.Edits = append(m.Edits, Edit{Text: m.Text, Blocks: m.Blocks, BlocksJSON: m.BlocksJSON, At: now})
	// Slack keeps what an update leaves out; blocks=[] removes the blocks.
	if c.hasText {
		m.Text = c.text
	}
	if c.hasBlocks {
		m.Blocks, m.BlocksJSON = c.blocks, c.blocksJSON
		if len(c.blocks) == 0 {
			m.Blocks, m.BlocksJSON = nil, nil
		}
	}
	if c.attachments != nil {
		m.Attachments = c.attachments
	}
	if c.metadata != nil {
		m.Metadata = c.metadata
	}
	m.Edited = now
	s.emit(Change{Kind: ChangeMessageChanged, Channel: m.Channel, TS: m.TS, ThreadTS: m.ThreadTS, User: m.User})
	return map[string]any{"channel": ch.ID, "ts": m.TS, "text": m.Text, "message": s.wire(m)}, nil
}

func (s *Server) deleteMessage(r *request) (map[string]any, *apiError) {
	ch, m, apiErr := s.botMessage(r, "cant_delete_message")
	if apiErr != nil {
		return nil, apiErr
	}
	m.Deleted = true
	s.emit(Change{Kind: ChangeMessageDeleted, Channel: m.Channel, TS: m.TS, ThreadTS: m.ThreadTS, User: m.User})
	return map[string]any{"channel": ch.ID, "ts": m.TS}, nil
}

func (s *Server) postEphemeral(r *request) (map[string]any, *apiError) {
	ch, apiErr := s.resolveChannel(r.str("channel"))
	if apiErr != nil {
		return nil, apiErr
	}
	user := r.str("user")
	if _, known := s.users[user]; !known && (len(s.users) > 1 || !userIDPattern.MatchString(user)) {
		return nil, errCode("user_not_in_channel")
	}
	c, apiErr := readContent(r)
	if apiErr != nil {
		return nil, apiErr
	}
	if c.text == "" && len(c.blocks) == 0 && c.attachments == nil {
		return nil, errCode("no_text")
	}
	e := &Ephemeral{
		Channel: ch.ID, User: user, TS: s.nextTS(), ThreadTS: r.str("thread_ts"),
		Text: c.text, Blocks: c.blocks, BlocksJSON: c.blocksJSON, Posted: s.now(),
	}
	s.ephemerals = append(s.ephemerals, e)
	s.emit(Change{Kind: ChangeEphemeral, Channel: e.Channel, TS: e.TS, ThreadTS: e.ThreadTS, User: e.User})
	return map[string]any{"message_ts": e.TS}, nil
}

func (s *Server) getPermalink(r *request) (map[string]any, *apiError) {
	ch, apiErr := s.resolveChannel(r.str("channel"))
	if apiErr != nil {
		return nil, apiErr
	}
	m := s.message(ch.ID, r.str("message_ts"))
	if m == nil || m.Deleted {
		return nil, errCode("message_not_found")
	}
	link := fmt.Sprintf("https://%s.slack.com/archives/%s/p%s", s.team.Domain, ch.ID, strings.ReplaceAll(m.TS, ".", ""))
	if m.ThreadTS != "" {
		link += fmt.Sprintf("?thread_ts=%s&cid=%s", m.ThreadTS, ch.ID)
	}
	return map[string]any{"channel": ch.ID, "permalink": link}, nil
}

func (s *Server) conversationsInfo(r *request) (map[string]any, *apiError) {
	ch, apiErr := s.resolveChannel(r.str("channel"))
	if apiErr != nil {
		return nil, apiErr
	}
	out := map[string]any{
		"id":              ch.ID,
		"name":            ch.Name,
		"is_channel":      !ch.IsIM && !ch.IsPrivate,
		"is_group":        ch.IsPrivate,
		"is_im":           ch.IsIM,
		"is_private":      ch.IsPrivate || ch.IsIM,
		"is_member":       true,
		"context_team_id": s.team.ID,
	}
	if ch.IsIM {
		out["user"] = ch.User
	}
	return map[string]any{"channel": out}, nil
}

// defaultRepliesLimit is conversations.replies' page size when the caller
// gives none.
const defaultRepliesLimit = 1000

func (s *Server) conversationsReplies(r *request) (map[string]any, *apiError) {
	ch, apiErr := s.resolveChannel(r.str("channel"))
	if apiErr != nil {
		return nil, apiErr
	}
	thread := s.thread(ch.ID, r.str("ts"))
	if thread == nil {
		return nil, errCode("thread_not_found")
	}
	limit := defaultRepliesLimit
	if v := r.str("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			return nil, errCode("invalid_limit")
		}
		limit = n
	}
	start := 0
	if cur := r.str("cursor"); cur != "" {
		n, err := strconv.Atoi(strings.TrimPrefix(cur, "offset:"))
		if err != nil || n < 0 || n > len(thread) {
			return nil, errCode("invalid_cursor")
		}
		start = n
	}
	end := min(start+limit, len(thread))
	msgs := make([]map[string]any, 0, end-start)
	for _, m := range thread[start:end] {
		msgs = append(msgs, s.wire(m))
	}
	next := ""
	if end < len(thread) {
		next = fmt.Sprintf("offset:%d", end)
	}
	return map[string]any{
		"messages":          msgs,
		"has_more":          next != "",
		"response_metadata": map[string]any{"next_cursor": next},
	}, nil
}

// conversationsHistory lists a channel's top-level messages, newest first,
// optionally only those newer than oldest, as Slack does.
func (s *Server) conversationsHistory(r *request) (map[string]any, *apiError) {
	ch, apiErr := s.resolveChannel(r.str("channel"))
	if apiErr != nil {
		return nil, apiErr
	}
	limit := 100
	if v := r.str("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			return nil, errCode("invalid_limit")
		}
		limit = min(n, 1000)
	}
	oldest := r.str("oldest")
	var msgs []map[string]any
	all := s.messages[ch.ID]
	for i := len(all) - 1; i >= 0 && len(msgs) < limit; i-- {
		m := all[i]
		if m.Deleted || m.ThreadTS != "" {
			continue
		}
		if oldest != "" && tsLess(m.TS, oldest) {
			break
		}
		msgs = append(msgs, s.wire(m))
	}
	return map[string]any{"messages": msgs, "has_more": false, "response_metadata": map[string]any{"next_cursor": ""}}, nil
}

// tsLess orders Slack timestamps ("1700000000.000100").
func tsLess(a, b string) bool {
	fa, _ := strconv.ParseFloat(a, 64)
	fb, _ := strconv.ParseFloat(b, 64)
	return fa < fb
}

func (s *Server) usersInfo(r *request) (map[string]any, *apiError) {
	u, ok := s.users[r.str("user")]
	if !ok {
		return nil, errCode("user_not_found")
	}
	tz := u.TZ
	if tz == "" {
		tz = "UTC"
	}
	display := u.DisplayName
	return map[string]any{"user": map[string]any{
		"id":        u.ID,
		"team_id":   s.team.ID,
		"name":      u.Name,
		"real_name": u.RealName,
		"tz":        tz,
		"is_bot":    u.IsBot,
		"deleted":   false,
		"profile": map[string]any{
			"real_name":               u.RealName,
			"real_name_normalized":    u.RealName,
			"display_name":            display,
			"display_name_normalized": display,
			"team":                    s.team.ID,
		},
	}}, nil
}

func (s *Server) usergroupsUsersList(r *request) (map[string]any, *apiError) {
	g, ok := s.groups[r.str("usergroup")]
	if !ok {
		return nil, errCode("no_such_subteam")
	}
	return map[string]any{"users": slices.Clone(g.Members)}, nil
}

// maxMessageBlocks and maxViewBlocks are Slack's block counts per surface.
const (
	maxMessageBlocks = 50
	maxViewBlocks    = 100
)

// readView reads and checks the view parameter of views.open, push and
// update.
func readView(r *request) (map[string]any, json.RawMessage, []slack.Block, *apiError) {
	return readSurface(r, "modal")
}

// readSurface reads and checks the view parameter of views.*: a view of
// type kind.
func readSurface(r *request, kind string) (map[string]any, json.RawMessage, []slack.Block, *apiError) {
	raw, ok := r.json("view")
	if !ok || len(bytes.TrimSpace(raw)) == 0 {
		return nil, nil, nil, &apiError{code: "invalid_arguments", errors: []string{"missing required field: view"}}
	}
	var view map[string]any
	if err := json.Unmarshal(raw, &view); err != nil {
		return nil, nil, nil, &apiError{code: "invalid_arguments", errors: []string{"view: " + err.Error()}}
	}
	if problems := validateSurface(view, kind); len(problems) > 0 {
		return nil, nil, nil, &apiError{code: "invalid_arguments", errors: problems}
	}
	blocksRaw, err := json.Marshal(view["blocks"])
	if err != nil {
		return nil, nil, nil, &apiError{code: "invalid_arguments", errors: []string{err.Error()}}
	}
	blocks, _, apiErr := parseBlocks(blocksRaw, maxViewBlocks)
	if apiErr != nil {
		return nil, nil, nil, &apiError{code: "invalid_arguments", errors: apiErr.errors}
	}
	return view, json.RawMessage(bytes.Clone(bytes.TrimSpace(raw))), blocks, nil
}

// useTrigger checks and spends a trigger_id.
func (s *Server) useTrigger(id string) (*trigger, *apiError) {
	if id == "" {
		return nil, &apiError{code: "invalid_arguments", errors: []string{"missing required field: trigger_id"}}
	}
	t, ok := s.triggers[id]
	if !ok {
		return &trigger{}, nil
	}
	switch {
	case t.used:
		return nil, errCode("exchanged_trigger_id")
	case s.now().Sub(t.issued) > triggerLifetime:
		return nil, errCode("expired_trigger_id")
	}
	t.used = true
	return t, nil
}

func (s *Server) newView(r *request, t *trigger, view map[string]any, raw json.RawMessage, blocks []slack.Block) *View {
	s.ids++
	v := &View{
		ID:              fmt.Sprintf("V%010d", s.ids),
		ExternalID:      stringField(view, "external_id"),
		TriggerID:       r.str("trigger_id"),
		User:            t.user,
		Type:            stringField(view, "type"),
		CallbackID:      stringField(view, "callback_id"),
		PrivateMetadata: stringField(view, "private_metadata"),
		JSON:            raw,
		Blocks:          blocks,
		Opened:          s.now(),
	}
	if title, ok := view["title"].(map[string]any); ok {
		v.Title = stringField(title, "text")
	}
	v.RootViewID = v.ID
	v.Hash = s.viewHash()
	s.views[v.ID] = v
	s.viewOrder = append(s.viewOrder, v.ID)
	return v
}

func (s *Server) viewHash() string {
	s.ids++
	return fmt.Sprintf("%d.%08x", s.now().Unix(), s.ids)
}

func stringField(m map[string]any, key string) string {
	v, _ := m[key].(string)
	return v
}

func (s *Server) externalIDTaken(id, except string) bool {
	if id == "" {
		return false
	}
	for _, v := range s.views {
		if v.ExternalID == id && v.ID != except && !v.Closed {
			return true
		}
	}
	return false
}

func (s *Server) viewsOpen(r *request) (map[string]any, *apiError) {
	t, apiErr := s.useTrigger(r.str("trigger_id"))
	if apiErr != nil {
		return nil, apiErr
	}
	view, raw, blocks, apiErr := readView(r)
	if apiErr != nil {
		return nil, apiErr
	}
	if s.externalIDTaken(stringField(view, "external_id"), "") {
		return nil, errCode("duplicate_external_id")
	}
	v := s.newView(r, t, view, raw, blocks)
	s.emit(Change{Kind: ChangeViewOpened, ViewID: v.ID, User: v.User})
	return map[string]any{"view": s.wireView(v, view)}, nil
}

// maxViewStack is how many views Slack stacks in one modal.
const maxViewStack = 3

func (s *Server) viewsPush(r *request) (map[string]any, *apiError) {
	t, apiErr := s.useTrigger(r.str("trigger_id"))
	if apiErr != nil {
		return nil, apiErr
	}
	view, raw, blocks, apiErr := readView(r)
	if apiErr != nil {
		return nil, apiErr
	}
	if s.externalIDTaken(stringField(view, "external_id"), "") {
		return nil, errCode("duplicate_external_id")
	}
	var below *View
	if t.viewID != "" {
		below = s.views[t.viewID]
		if below == nil || below.Closed {
			return nil, errCode("not_found")
		}
		depth := 0
		for _, o := range s.views {
			if o.RootViewID == below.RootViewID && !o.Closed {
				depth++
			}
		}
		if depth >= maxViewStack {
			return nil, errCode("push_limit_reached")
		}
	}
	v := s.newView(r, t, view, raw, blocks)
	if below != nil {
		v.RootViewID, v.PreviousViewID = below.RootViewID, below.ID
		if v.User == "" {
			v.User = below.User
		}
	}
	s.emit(Change{Kind: ChangeViewPushed, ViewID: v.ID, User: v.User})
	return map[string]any{"view": s.wireView(v, view)}, nil
}

func (s *Server) viewsUpdate(r *request) (map[string]any, *apiError) {
	var v *View
	switch id, ext := r.str("view_id"), r.str("external_id"); {
	case id != "":
		v = s.views[id]
	case ext != "":
		for _, o := range s.views {
			if o.ExternalID == ext && !o.Closed {
				v = o
			}
		}
	default:
		return nil, &apiError{code: "invalid_arguments", errors: []string{"view_id or external_id is required"}}
	}
	if v == nil || v.Closed {
		return nil, errCode("not_found")
	}
	if h := r.str("hash"); h != "" && h != v.Hash {
		return nil, errCode("hash_conflict")
	}
	view, raw, blocks, apiErr := readView(r)
	if apiErr != nil {
		return nil, apiErr
	}
	if ext := stringField(view, "external_id"); s.externalIDTaken(ext, v.ID) {
		return nil, errCode("duplicate_external_id")
	}
	v.History = append(v.History, v.JSON)
	v.JSON, v.Blocks = raw, blocks
	v.ExternalID = stringField(view, "external_id")
	v.CallbackID = stringField(view, "callback_id")
	v.PrivateMetadata = stringField(view, "private_metadata")
	if title, ok := view["title"].(map[string]any); ok {
		v.Title = stringField(title, "text")
	}
	v.Hash = s.viewHash()
	v.Updated = s.now()
	s.emit(Change{Kind: ChangeViewUpdated, ViewID: v.ID, User: v.User})
	return map[string]any{"view": s.wireView(v, view)}, nil
}

// wireView is the view as Slack returns it: what the app sent plus the
// fields Slack fills in.
func (s *Server) wireView(v *View, sent map[string]any) map[string]any {
	out := map[string]any{
		"private_metadata": "",
		"callback_id":      "",
		"external_id":      "",
		"clear_on_close":   false,
		"notify_on_close":  false,
		"blocks":           []any{},
	}
	for k, val := range sent {
		out[k] = val
	}
	out["id"] = v.ID
	out["team_id"] = s.team.ID
	out["hash"] = v.Hash
	out["root_view_id"] = v.RootViewID
	out["previous_view_id"] = nil
	if v.PreviousViewID != "" {
		out["previous_view_id"] = v.PreviousViewID
	}
	out["app_id"] = s.appID
	out["bot_id"] = s.botID
	out["app_installed_team_id"] = s.team.ID
	out["state"] = map[string]any{"values": map[string]any{}}
	return out
}
