package bot_test

import (
	"errors"
	"maps"
	"net/http"
	"testing"
	"time"

	"github.com/slack-go/slack"

	"github.com/slackapprove/slackbot/bot"
	"github.com/slackapprove/slackbot/internal/slackfake"
	"github.com/slackapprove/slackbot/internal/slackfaketest"
)

// UpdateMessageLean sends Slack what slack-go's UpdateMessageContext sends
// (the same form fields), updates the message, and reports Slack's
// refusals as slack-go does, so that Retry (429 with Retry-After, 5xx) and
// the minimal-card fallback (msg_blocks_too_long) treat both alike.
func TestSlackClientUpdateMessageLean(t *testing.T) {
	fake, srv := slackfaketest.NewTestServer(t, slackfake.WithDemoWorkspace())
	c := bot.NewSlackClient(fake.Token(), slackfaketest.APIURL(srv), nil)
	ctx := t.Context()
	ch, ts, err := c.PostMessageContext(ctx, "C0APPROVALS", slack.MsgOptionText("card", false))
	if err != nil {
		t.Fatal(err)
	}
	blocks := []slack.Block{slack.NewSectionBlock(slack.NewTextBlockObject(slack.MarkdownType, "*Approved*", false, false), nil, nil)}

	if _, _, _, err := c.UpdateMessageContext(ctx, ch, ts, slack.MsgOptionText("via slack-go", false), slack.MsgOptionBlocks(blocks...)); err != nil {
		t.Fatal(err)
	}
	if err := c.UpdateMessageLean(ctx, ch, ts, "lean", blocks); err != nil {
		t.Fatal(err)
	}
	calls := fake.Calls("chat.update")
	if len(calls) != 2 {
		t.Fatalf("%d chat.update calls, want 2", len(calls))
	}
	want, got := calls[0].Params, calls[1].Params
	want["text"] = "lean"
	if !maps.Equal(got, want) {
		t.Errorf("lean chat.update sent %v, want what slack-go sends: %v", got, want)
	}
	if m, _ := fake.Message(ch, ts); m.Text != "lean" {
		t.Errorf("message text %q after the update, want %q", m.Text, "lean")
	}

	fake.ErrorNext("chat.update", "msg_blocks_too_long", 1)
	var se slack.SlackErrorResponse
	if err := c.UpdateMessageLean(ctx, ch, ts, "x", blocks); !errors.As(err, &se) || se.Err != "msg_blocks_too_long" {
		t.Errorf("ok:false: %v (%T), want slack.SlackErrorResponse msg_blocks_too_long", err, err)
	}
	fake.FailNext("chat.update", http.StatusServiceUnavailable, 1)
	var sc slack.StatusCodeError
	if err := c.UpdateMessageLean(ctx, ch, ts, "x", blocks); !errors.As(err, &sc) || sc.Code != http.StatusServiceUnavailable {
		t.Errorf("503: %v (%T), want slack.StatusCodeError 503", err, err)
	}
	fake.RateLimit("chat.update", 1, time.Hour)
	_ = c.UpdateMessageLean(ctx, ch, ts, "x", blocks)
	var rl *slack.RateLimitedError
	if err := c.UpdateMessageLean(ctx, ch, ts, "x", blocks); !errors.As(err, &rl) || rl.RetryAfter <= 0 {
		t.Errorf("429: %v (%T), want *slack.RateLimitedError with its Retry-After", err, err)
	}
	fake.RateLimit("chat.update", 0, 0)
	if err := c.UpdateMessageLean(ctx, "C0APPROVALS", "1.000000", "x", blocks); !errors.As(err, &se) || se.Err != "message_not_found" {
		t.Errorf("unknown message: %v, want message_not_found", err)
	}
}
