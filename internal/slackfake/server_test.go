package slackfake_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/slack-go/slack"

	"github.com/slackapprove/slackbot/internal/slackfake"
	"github.com/slackapprove/slackbot/internal/slackfaketest"
)

// clock is a test clock that moves only when told to.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func newClock() *clock { return &clock{now: time.Date(2025, 3, 14, 9, 0, 0, 0, time.UTC)} }

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

func newFake(t *testing.T, opts ...slackfake.Option) (*slackfake.Server, *slack.Client, *clock) {
	t.Helper()
	clk := newClock()
	opts = append([]slackfake.Option{slackfake.WithDemoWorkspace(), slackfake.WithClock(clk.Now)}, opts...)
	s, ts := slackfaketest.NewTestServer(t, opts...)
	return s, slack.New(s.Token(), slack.OptionAPIURL(slackfaketest.APIURL(ts))), clk
}

func approvalBlocks(text string) []slack.Block {
	return []slack.Block{
		slack.NewSectionBlock(slack.NewTextBlockObject(slack.MarkdownType, text, false, false), nil, nil),
		slack.NewActionBlock("decide",
			slack.NewButtonBlockElement("approve", "tok:1", slack.NewTextBlockObject(slack.PlainTextType, "Approve", false, false)).WithStyle(slack.StylePrimary),
			slack.NewButtonBlockElement("deny", "tok:1", slack.NewTextBlockObject(slack.PlainTextType, "Deny", false, false)).WithStyle(slack.StyleDanger),
		),
	}
}

func slackError(err error) string {
	var se slack.SlackErrorResponse
	if errors.As(err, &se) {
		return se.Err
	}
	return ""
}

func TestMessageRoundTrip(t *testing.T) {
	s, api, _ := newFake(t)
	ctx := t.Context()
	events, cancel := s.Subscribe()
	defer cancel()

	ch, ts, err := api.PostMessageContext(ctx, "C0APPROVALS",
		slack.MsgOptionText("Approve delete_file?", false), slack.MsgOptionBlocks(approvalBlocks("*delete_file*")...))
	if err != nil {
		t.Fatalf("PostMessage: %v", err)
	}
	if ch != "C0APPROVALS" || !strings.Contains(ts, ".") {
		t.Fatalf("PostMessage = %q, %q; want C0APPROVALS and a ts", ch, ts)
	}
	msgs := s.Messages("C0APPROVALS")
	if len(msgs) != 1 {
		t.Fatalf("got %d messages, want 1", len(msgs))
	}
	m := msgs[0]
	if m.TS != ts || m.Text != "Approve delete_file?" || m.User != s.BotUserID() || len(m.Blocks) != 2 {
		t.Errorf("stored message %+v, want ts %s, the text, the bot as user and 2 blocks", m, ts)
	}
	actions, ok := m.Blocks[1].(*slack.ActionBlock)
	if !ok || len(actions.Elements.ElementSet) != 2 {
		t.Fatalf("block 1 is %T, want an actions block with two buttons", m.Blocks[1])
	}
	if b := actions.Elements.ElementSet[0].(*slack.ButtonBlockElement); b.ActionID != "approve" || b.Value != "tok:1" {
		t.Errorf("first button %+v, want action approve with value tok:1", b)
	}

	// A reply in the thread, then the decision replaces the buttons.
	if _, _, err := api.PostMessageContext(ctx, ch, slack.MsgOptionText("Done: deleted.", false), slack.MsgOptionTS(ts)); err != nil {
		t.Fatalf("reply: %v", err)
	}
	decided := []slack.Block{slack.NewSectionBlock(slack.NewTextBlockObject(slack.MarkdownType, "Approved by <@U0ALICE>", false, false), nil, nil)}
	if _, _, _, err := api.UpdateMessageContext(ctx, ch, ts, slack.MsgOptionText("Approved", false), slack.MsgOptionBlocks(decided...)); err != nil {
		t.Fatalf("UpdateMessage: %v", err)
	}
	m, _ = s.Message(ch, ts)
	if m.Text != "Approved" || len(m.Blocks) != 1 || len(m.Edits) != 1 || m.Edits[0].Text != "Approve delete_file?" || len(m.Edits[0].Blocks) != 2 {
		t.Errorf("after update: text %q, %d blocks, edits %+v; want the new version and the old one in Edits", m.Text, len(m.Blocks), m.Edits)
	}

	replies, _, _, err := api.GetConversationRepliesContext(ctx, &slack.GetConversationRepliesParameters{ChannelID: ch, Timestamp: ts})
	if err != nil {
		t.Fatalf("GetConversationReplies: %v", err)
	}
	if len(replies) != 2 || replies[0].Timestamp != ts || replies[1].Text != "Done: deleted." || replies[1].ThreadTimestamp != ts {
		t.Fatalf("replies %+v, want the parent then the reply", replies)
	}
	if replies[0].ReplyCount != 1 || len(replies[0].Blocks.BlockSet) != 1 {
		t.Errorf("parent in replies: reply_count %d, %d blocks; want 1 and 1", replies[0].ReplyCount, len(replies[0].Blocks.BlockSet))
	}

	if _, _, err := api.DeleteMessageContext(ctx, ch, replies[1].Timestamp); err != nil {
		t.Fatalf("DeleteMessage: %v", err)
	}
	if got := s.Replies(ch, ts); len(got) != 1 {
		t.Errorf("after delete: %d messages in thread, want 1", len(got))
	}
	if gone, ok := s.Message(ch, replies[1].Timestamp); !ok || !gone.Deleted {
		t.Errorf("deleted reply: got %+v, %v; want it marked deleted", gone, ok)
	}

	var kinds []slackfake.ChangeKind
	for range 4 {
		e := <-events
		kinds = append(kinds, e.Kind)
	}
	want := []slackfake.ChangeKind{slackfake.ChangeMessage, slackfake.ChangeMessage, slackfake.ChangeMessageChanged, slackfake.ChangeMessageDeleted}
	if diff := cmp.Diff(want, kinds); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
}

func TestUpdateKeepsWhatItLeavesOut(t *testing.T) {
	s, api, _ := newFake(t)
	ctx := t.Context()
	_, ts, err := api.PostMessageContext(ctx, "C0APPROVALS", slack.MsgOptionText("v1", false), slack.MsgOptionBlocks(approvalBlocks("x")...))
	if err != nil {
		t.Fatal(err)
	}
	if _, _, _, err := api.UpdateMessageContext(ctx, "C0APPROVALS", ts, slack.MsgOptionText("v2", false)); err != nil {
		t.Fatal(err)
	}
	if m, _ := s.Message("C0APPROVALS", ts); m.Text != "v2" || len(m.Blocks) != 2 {
		t.Errorf("text-only update: text %q, %d blocks; want v2 with the blocks kept", m.Text, len(m.Blocks))
	}
	if _, _, _, err := api.UpdateMessageContext(ctx, "C0APPROVALS", ts, slack.MsgOptionBlocks()); err != nil {
		t.Fatal(err)
	}
	if m, _ := s.Message("C0APPROVALS", ts); m.Text != "v2" || len(m.Blocks) != 0 || len(m.Edits) != 2 {
		t.Errorf("blocks=[] update: text %q, %d blocks, %d edits; want v2, no blocks, 2 edits", m.Text, len(m.Blocks), len(m.Edits))
	}
	_, _, _, err = api.UpdateMessageContext(ctx, "C0APPROVALS", "1.000001", slack.MsgOptionText("x", false))
	if got := slackError(err); got != "message_not_found" {
		t.Errorf("update of unknown ts: got %v, want message_not_found", err)
	}
}

func TestPostMessageRefusals(t *testing.T) {
	_, api, _ := newFake(t, slackfake.StrictChannels())
	ctx := t.Context()
	long := strings.Repeat("x", 3001)
	tests := []struct {
		name    string
		channel string
		opts    []slack.MsgOption
		want    string
	}{
		{"channel name instead of id", "#approvals", []slack.MsgOption{slack.MsgOptionText("hi", false)}, "channel_not_found"},
		{"unknown channel when strict", "C0NOWHERE", []slack.MsgOption{slack.MsgOptionText("hi", false)}, "channel_not_found"},
		{"nothing to post", "C0APPROVALS", nil, "no_text"},
		{"text too long", "C0APPROVALS", []slack.MsgOption{slack.MsgOptionText(strings.Repeat("x", 40001), false)}, "msg_too_long"},
		{"section text over 3000", "C0APPROVALS", []slack.MsgOption{slack.MsgOptionBlocks(
			slack.NewSectionBlock(slack.NewTextBlockObject(slack.MarkdownType, long, false, false), nil, nil))}, "invalid_blocks"},
		{"blocks with more than 12,000 characters of text in all", "C0APPROVALS", []slack.MsgOption{slack.MsgOptionBlocks(
			slack.NewHeaderBlock(slack.NewTextBlockObject(slack.PlainTextType, "🙂 header", false, false)),
			slack.NewSectionBlock(slack.NewTextBlockObject(slack.MarkdownType, strings.Repeat("é", 3000), false, false), nil, nil),
			slack.NewSectionBlock(slack.NewTextBlockObject(slack.MarkdownType, strings.Repeat("x", 3000), false, false), nil, nil),
			slack.NewContextBlock("", slack.NewTextBlockObject(slack.MarkdownType, strings.Repeat("x", 3000), false, false)),
			slack.NewSectionBlock(slack.NewTextBlockObject(slack.PlainTextType, strings.Repeat("x", 2990), false, false), nil,
				slack.NewAccessory(slack.NewButtonBlockElement("a", "v", slack.NewTextBlockObject(slack.PlainTextType, "View all", false, false)))))}, "msg_blocks_too_long"},
		{"unknown thread", "C0APPROVALS", []slack.MsgOption{slack.MsgOptionText("hi", false), slack.MsgOptionTS("1.000001")}, "thread_not_found"},
	}
	for _, tt := range tests {
		_, _, err := api.PostMessageContext(ctx, tt.channel, tt.opts...)
		if got := slackError(err); got != tt.want {
			t.Errorf("%s: got error %v, want %s", tt.name, err, tt.want)
		}
	}
}

// The fake refuses Block Kit that Slack would refuse, pointing at the
// offending field.
func TestBlockKitLimits(t *testing.T) {
	_, api, _ := newFake(t)
	text := func(s string) *slack.TextBlockObject {
		return slack.NewTextBlockObject(slack.PlainTextType, s, false, false)
	}
	button := func(id, value string) slack.BlockElement { return slack.NewButtonBlockElement(id, value, text("Go")) }
	many := make([]slack.Block, 51)
	for i := range many {
		many[i] = slack.NewDividerBlock()
	}
	tests := []struct {
		name   string
		blocks []slack.Block
		want   string // a problem Slack lists
	}{
		{"too many blocks", many, "no more than 50 items allowed [json-pointer:/blocks]"},
		{"header over 150", []slack.Block{slack.NewHeaderBlock(text(strings.Repeat("h", 151)))}, "must be less than 151 characters [json-pointer:/blocks/0/text/text]"},
		{"button value over 2000", []slack.Block{slack.NewActionBlock("", button("approve", strings.Repeat("v", 2001)))}, "[json-pointer:/blocks/0/elements/0/value]"},
		{"button text over 75", []slack.Block{slack.NewActionBlock("", slack.NewButtonBlockElement("a", "v", text(strings.Repeat("b", 76))))}, "[json-pointer:/blocks/0/elements/0/text/text]"},
		{"duplicate action_id", []slack.Block{slack.NewActionBlock("", button("approve", "1"), button("approve", "2"))}, `duplicate action_id "approve"`},
		{"duplicate block_id", []slack.Block{&slack.DividerBlock{Type: slack.MBTDivider, BlockID: "x"}, &slack.DividerBlock{Type: slack.MBTDivider, BlockID: "x"}}, `duplicate block_id "x" [json-pointer:/blocks/1/block_id]`},
		{"12,000 characters of text in all", []slack.Block{
			slack.NewSectionBlock(text(strings.Repeat("é", 3000)), nil, nil),
			slack.NewSectionBlock(text(strings.Repeat("x", 3000)), nil, nil),
			slack.NewContextBlock("", text(strings.Repeat("x", 3000))),
			slack.NewSectionBlock(text(strings.Repeat("x", 2998)), nil, slack.NewAccessory(button("a", "v"))),
		}, ""},
		{"eleven fields", []slack.Block{slack.NewSectionBlock(nil, func() []*slack.TextBlockObject {
			f := make([]*slack.TextBlockObject, 11)
			for i := range f {
				f[i] = text("f")
			}
			return f
		}(), nil)}, "no more than 10 items allowed [json-pointer:/blocks/0/fields]"},
	}
	for _, tt := range tests {
		_, _, err := api.PostMessageContext(t.Context(), "C0APPROVALS", slack.MsgOptionBlocks(tt.blocks...))
		if tt.want == "" {
			if err != nil {
				t.Errorf("%s: %v, want it accepted", tt.name, err)
			}
			continue
		}
		var se slack.SlackErrorResponse
		if !errors.As(err, &se) || se.Err != "invalid_blocks" {
			t.Errorf("%s: got %v, want invalid_blocks", tt.name, err)
			continue
		}
		if !strings.Contains(strings.Join(se.ResponseMetadata.Messages, "\n"), tt.want) {
			t.Errorf("%s: problems %q, want one containing %q", tt.name, se.ResponseMetadata.Messages, tt.want)
		}
	}
}

func TestEphemeral(t *testing.T) {
	s, api, _ := newFake(t)
	ctx := t.Context()
	ts, err := api.PostEphemeralContext(ctx, "C0APPROVALS", "U0BOB", slack.MsgOptionText("You may not approve this call.", false))
	if err != nil {
		t.Fatalf("PostEphemeral: %v", err)
	}
	got := s.Ephemerals("U0BOB")
	if len(got) != 1 || got[0].TS != ts || got[0].Text != "You may not approve this call." || got[0].Channel != "C0APPROVALS" {
		t.Errorf("ephemerals for U0BOB: %+v, want the one just posted", got)
	}
	if n := len(s.Ephemerals("U0ALICE")); n != 0 {
		t.Errorf("U0ALICE sees %d ephemerals, want 0", n)
	}
	if n := len(s.Messages("C0APPROVALS")); n != 0 {
		t.Errorf("channel has %d messages, want 0: ephemerals are not messages", n)
	}
	_, err = api.PostEphemeralContext(ctx, "C0APPROVALS", "U0NOBODY", slack.MsgOptionText("x", false))
	if got := slackError(err); got != "user_not_in_channel" {
		t.Errorf("ephemeral to unknown user: got %v, want user_not_in_channel", err)
	}
}

func modal(title, metadata string) slack.ModalViewRequest {
	return slack.ModalViewRequest{
		Type:            slack.VTModal,
		Title:           slack.NewTextBlockObject(slack.PlainTextType, title, false, false),
		Submit:          slack.NewTextBlockObject(slack.PlainTextType, "Deny", false, false),
		CallbackID:      "deny_reason",
		PrivateMetadata: metadata,
		Blocks: slack.Blocks{BlockSet: []slack.Block{
			slack.NewInputBlock("reason", slack.NewTextBlockObject(slack.PlainTextType, "Why?", false, false), nil,
				slack.NewPlainTextInputBlockElement(nil, "reason")),
		}},
	}
}

func TestViews(t *testing.T) {
	s, api, clk := newFake(t)
	ctx := t.Context()
	trigger := s.IssueTrigger("U0ALICE", "")
	resp, err := api.OpenViewContext(ctx, trigger, modal("Deny delete_file", "tok:1"))
	if err != nil {
		t.Fatalf("OpenView: %v", err)
	}
	if resp.ID == "" || resp.Hash == "" || resp.PrivateMetadata != "tok:1" || resp.CallbackID != "deny_reason" || resp.RootViewID != resp.ID {
		t.Errorf("OpenView response %+v, want id, hash, metadata, callback id and itself as root", resp.View)
	}
	views := s.Views()
	if len(views) != 1 || views[0].User != "U0ALICE" || views[0].Title != "Deny delete_file" || len(views[0].Blocks) != 1 {
		t.Fatalf("open views %+v, want Alice's modal with one block", views)
	}

	// A trigger works once, and only for 3 seconds.
	if _, err := api.OpenViewContext(ctx, trigger, modal("again", "")); slackError(err) != "exchanged_trigger_id" {
		t.Errorf("reused trigger: got %v, want exchanged_trigger_id", err)
	}
	late := s.IssueTrigger("U0ALICE", "")
	clk.Advance(4 * time.Second)
	if _, err := api.OpenViewContext(ctx, late, modal("late", "")); slackError(err) != "expired_trigger_id" {
		t.Errorf("expired trigger: got %v, want expired_trigger_id", err)
	}

	upd, err := api.UpdateViewContext(ctx, modal("Deny it", "tok:2"), "", resp.Hash, resp.ID)
	if err != nil {
		t.Fatalf("UpdateView: %v", err)
	}
	if upd.Hash == resp.Hash || upd.PrivateMetadata != "tok:2" {
		t.Errorf("UpdateView: hash %q (was %q), metadata %q; want a new hash and tok:2", upd.Hash, resp.Hash, upd.PrivateMetadata)
	}
	if _, err := api.UpdateViewContext(ctx, modal("stale", ""), "", resp.Hash, resp.ID); slackError(err) != "hash_conflict" {
		t.Errorf("update with a stale hash: got %v, want hash_conflict", err)
	}
	if v, _ := s.View(resp.ID); len(v.History) != 1 || v.Title != "Deny it" {
		t.Errorf("view after update: title %q, %d earlier versions; want Deny it and 1", v.Title, len(v.History))
	}

	pushed, err := api.PushViewContext(ctx, s.IssueTrigger("U0ALICE", resp.ID), modal("Sure?", ""))
	if err != nil {
		t.Fatalf("PushView: %v", err)
	}
	if pushed.RootViewID != resp.ID || pushed.PreviousViewID != resp.ID {
		t.Errorf("pushed view root %q previous %q, want both %q", pushed.RootViewID, pushed.PreviousViewID, resp.ID)
	}

	bad := modal(strings.Repeat("t", 25), "")
	_, err = api.OpenViewContext(ctx, s.IssueTrigger("U0ALICE", ""), bad)
	var se slack.SlackErrorResponse
	if !errors.As(err, &se) || se.Err != "invalid_arguments" || !strings.Contains(strings.Join(se.ResponseMetadata.Messages, " "), "/view/title/text") {
		t.Errorf("title over 24 characters: got %v (%+v), want invalid_arguments naming /view/title/text", err, se.ResponseMetadata)
	}

	if !s.CloseView(resp.ID) || len(s.Views()) != 0 {
		t.Errorf("CloseView: %d views still open, want 0 (the pushed one closes too)", len(s.Views()))
	}
}

func TestWorkspaceMethods(t *testing.T) {
	_, api, _ := newFake(t)
	ctx := t.Context()

	auth, err := api.AuthTestContext(ctx)
	if err != nil {
		t.Fatalf("AuthTest: %v", err)
	}
	if auth.TeamID != "T0FAKE" || auth.UserID != "U0BOT" || auth.BotID != "B0BOT" || auth.User != "slackbot" {
		t.Errorf("AuthTest = %+v", auth)
	}

	members, err := api.GetUserGroupMembersContext(ctx, "S0APPROVERS")
	if err != nil {
		t.Fatalf("GetUserGroupMembers: %v", err)
	}
	if diff := cmp.Diff([]string{"U0ALICE", "U0BOB"}, members); diff != "" {
		t.Errorf("members (-want +got):\n%s", diff)
	}
	if _, err := api.GetUserGroupMembersContext(ctx, "S0NOPE"); slackError(err) != "no_such_subteam" {
		t.Errorf("unknown usergroup: got %v, want no_such_subteam", err)
	}

	u, err := api.GetUserInfoContext(ctx, "U0ALICE")
	if err != nil {
		t.Fatalf("GetUserInfo: %v", err)
	}
	if u.Name != "alice" || u.Profile.DisplayName != "Alice" || u.RealName != "Alice Approver" {
		t.Errorf("GetUserInfo = %+v", u)
	}
	if _, err := api.GetUserInfoContext(ctx, "U0NOPE"); slackError(err) != "user_not_found" {
		t.Errorf("unknown user: got %v, want user_not_found", err)
	}

	ch, err := api.GetConversationInfoContext(ctx, &slack.GetConversationInfoInput{ChannelID: "C0APPROVALS"})
	if err != nil {
		t.Fatalf("GetConversationInfo: %v", err)
	}
	if ch.Name != "approvals" || !ch.IsChannel {
		t.Errorf("GetConversationInfo = %+v", ch)
	}

	// A user id as channel opens the direct message with that person.
	dm, _, err := api.PostMessageContext(ctx, "U0CAROL", slack.MsgOptionText("Your run finished.", false))
	if err != nil || dm != "D0CAROL" {
		t.Errorf("post to U0CAROL: channel %q, %v; want D0CAROL", dm, err)
	}
}

func TestAuth(t *testing.T) {
	s, ts := slackfaketest.NewTestServer(t)
	ctx := t.Context()
	_, err := slack.New("xoxb-wrong", slack.OptionAPIURL(slackfaketest.APIURL(ts))).AuthTestContext(ctx)
	if got := slackError(err); got != "invalid_auth" {
		t.Errorf("wrong token: got %v, want invalid_auth", err)
	}

	// Without the /api/ prefix, with the token as a form field.
	res, err := http.PostForm(ts.URL+"/auth.test", url.Values{"token": {s.Token()}})
	if err != nil {
		t.Fatal(err)
	}
	var body struct {
		OK    bool   `json:"ok"`
		Error string `json:"error"`
	}
	if err := json.NewDecoder(res.Body).Decode(&body); err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if !body.OK {
		t.Errorf("auth.test with token field at /auth.test: got error %q, want ok", body.Error)
	}

	res, err = http.PostForm(ts.URL+"/api/auth.test", nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.NewDecoder(res.Body).Decode(&body); err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if body.OK || body.Error != "not_authed" {
		t.Errorf("no token: got ok=%v error=%q, want not_authed", body.OK, body.Error)
	}
	if n := len(s.Calls("auth.test")); n != 3 {
		t.Errorf("logged %d auth.test calls, want 3", n)
	}
}

func TestRateLimit(t *testing.T) {
	s, api, clk := newFake(t)
	ctx := t.Context()
	s.RateLimit("chat.postMessage", 2, time.Minute)
	post := func(ch, text string) error {
		_, _, err := api.PostMessageContext(ctx, ch, slack.MsgOptionText(text, false))
		return err
	}
	for i := range 2 {
		if err := post("C0APPROVALS", fmt.Sprint(i)); err != nil {
			t.Fatalf("post %d: %v", i, err)
		}
	}
	clk.Advance(15 * time.Second)
	err := post("C0APPROVALS", "2")
	var rl *slack.RateLimitedError
	if !errors.As(err, &rl) {
		t.Fatalf("third post in a minute: got %v (%T), want *slack.RateLimitedError", err, err)
	}
	if rl.RetryAfter != 45*time.Second {
		t.Errorf("RetryAfter = %v, want 45s (the first post leaves the window then)", rl.RetryAfter)
	}
	// The limit counts per channel.
	if err := post("C0GENERAL", "elsewhere"); err != nil {
		t.Errorf("post to another channel: %v", err)
	}
	clk.Advance(45 * time.Second)
	if err := post("C0APPROVALS", "2"); err != nil {
		t.Errorf("post after the window: %v", err)
	}

	var texts []string
	for _, m := range s.Messages("C0APPROVALS") {
		texts = append(texts, m.Text)
	}
	if diff := cmp.Diff([]string{"0", "1", "2"}, texts); diff != "" {
		t.Errorf("posted (-want +got):\n%s", diff)
	}
	var statuses []int
	for _, c := range s.Calls("chat.postMessage") {
		statuses = append(statuses, c.Status)
	}
	if diff := cmp.Diff([]int{200, 200, 429, 200, 200}, statuses); diff != "" {
		t.Errorf("call statuses (-want +got):\n%s", diff)
	}
}

func TestFailNext(t *testing.T) {
	s, api, _ := newFake(t)
	ctx := t.Context()
	s.FailNext("chat.postMessage", http.StatusInternalServerError, 1)
	_, _, err := api.PostMessageContext(ctx, "C0APPROVALS", slack.MsgOptionText("x", false))
	var sce slack.StatusCodeError
	if !errors.As(err, &sce) || sce.Code != http.StatusInternalServerError {
		t.Fatalf("got %v (%T), want slack.StatusCodeError 500", err, err)
	}
	if n := len(s.Messages("C0APPROVALS")); n != 0 {
		t.Errorf("a failed call posted %d messages, want 0", n)
	}
	if _, _, err := api.PostMessageContext(ctx, "C0APPROVALS", slack.MsgOptionText("x", false)); err != nil {
		t.Errorf("the call after the failure: %v", err)
	}

	s.ErrorNext("*", "fatal_error", 1)
	if _, err := api.AuthTestContext(ctx); slackError(err) != "fatal_error" {
		t.Errorf("ErrorNext(*): got %v, want fatal_error", err)
	}
	if _, err := api.AuthTestContext(ctx); err != nil {
		t.Errorf("after ErrorNext ran out: %v", err)
	}
}

func TestDelayEndsWithClient(t *testing.T) {
	s, api, _ := newFake(t)
	s.Delay("chat.postMessage", time.Hour)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, _, err := api.PostMessageContext(ctx, "C0APPROVALS", slack.MsgOptionText("x", false)); err == nil {
		t.Error("delayed post with a cancelled context: got no error")
	}
	s.Delay("chat.postMessage", 0)
	if _, _, err := api.PostMessageContext(t.Context(), "C0APPROVALS", slack.MsgOptionText("x", false)); err != nil {
		t.Errorf("after removing the delay: %v", err)
	}
}

// Timestamps are unique and increasing even when the clock stands still
// and many clients post at once.
func TestTimestampsUniqueUnderConcurrency(t *testing.T) {
	s, api, _ := newFake(t)
	var wg sync.WaitGroup
	for i := range 20 {
		wg.Go(func() {
			if _, _, err := api.PostMessageContext(t.Context(), "C0APPROVALS", slack.MsgOptionText(fmt.Sprint(i), false)); err != nil {
				t.Errorf("post %d: %v", i, err)
			}
		})
	}
	wg.Wait()
	msgs := s.Messages("C0APPROVALS")
	if len(msgs) != 20 {
		t.Fatalf("got %d messages, want 20", len(msgs))
	}
	for i := 1; i < len(msgs); i++ {
		if msgs[i].TS <= msgs[i-1].TS {
			t.Errorf("ts %s after %s: not increasing", msgs[i].TS, msgs[i-1].TS)
		}
	}
	if got, want := msgs[0].TS, "1741942800.000000"; got != want {
		t.Errorf("first ts %s, want %s (the clock's time)", got, want)
	}
}

func TestJSONBody(t *testing.T) {
	s, ts := slackfaketest.NewTestServer(t)
	body := `{"channel":"C0APPROVALS","text":"hi","blocks":[{"type":"divider"}]}`
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, ts.URL+"/api/chat.postMessage", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json; charset=utf-8")
	req.Header.Set("Authorization", "Bearer "+s.Token())
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	msgs := s.Messages("C0APPROVALS")
	if len(msgs) != 1 || msgs[0].Text != "hi" || len(msgs[0].Blocks) != 1 {
		t.Fatalf("JSON post stored %+v, want one message with one block", msgs)
	}
	if got := s.Calls("chat.postMessage")[0]; got.Params["channel"] != "C0APPROVALS" || string(got.Body) != body {
		t.Errorf("call log %+v, want the channel param and the raw body", got)
	}
}

func BenchmarkPostMessage(b *testing.B) {
	s, ts := slackfaketest.NewTestServer(b)
	api := slack.New(s.Token(), slack.OptionAPIURL(slackfaketest.APIURL(ts)))
	blocks := approvalBlocks("*delete_file* `{\"path\":\"temp.txt\"}`")
	for b.Loop() {
		if _, _, err := api.PostMessageContext(b.Context(), "C0APPROVALS", slack.MsgOptionText("x", false), slack.MsgOptionBlocks(blocks...)); err != nil {
			b.Fatal(err)
		}
	}
}
