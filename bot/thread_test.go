package bot

import (
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/slack-go/slack"

	"github.com/slackapprove/slackbot/agentrunner"
	"github.com/slackapprove/slackbot/internal/slackfake"
	"github.com/slackapprove/slackbot/internal/slackfaketest"
)

// TestThreadMessages: a thread slackbot keeps no history for is read as
// Slack shows it: the last messages before the one being answered, the
// bot's own as the model's turns, everyone else's naming their author.
func TestThreadMessages(t *testing.T) {
	fake, srv := slackfaketest.NewTestServer(t, slackfake.WithDemoWorkspace())
	b := newTestBot(testConfig{Slack: slack.New(fake.Token(), slack.OptionAPIURL(slackfaketest.APIURL(srv)))})
	botID := fake.BotUserID()
	post := func(user, text, thread string) string {
		t.Helper()
		m, err := fake.PostAsUser("C0GENERAL", user, text, thread)
		if err != nil {
			t.Fatal(err)
		}
		return m.TS
	}
	parent := post("U0DAVE", "customer wants a refund on A-1001", "")
	post("U0CAROL", "<@"+botID+"> look up order A-1001", parent)
	post(botID, "Done: order A-1001", parent)
	now := post("U0CAROL", "<@"+botID+"> make it 5 instead", parent)
	post("U0BOB", "later: waits for its own turn", parent)

	got, err := b.ThreadMessages(t.Context(), "C0GENERAL", parent, now, botID, 20)
	if err != nil {
		t.Fatal(err)
	}
	want := []agentrunner.Message{
		{Kind: agentrunner.KindRequest, Parts: []agentrunner.Part{agentrunner.UserPrompt("<@U0DAVE> wrote: customer wants a refund on A-1001")}},
		{Kind: agentrunner.KindRequest, Parts: []agentrunner.Part{agentrunner.UserPrompt("<@U0CAROL> wrote: look up order A-1001")}},
		{Kind: agentrunner.KindResponse, Parts: []agentrunner.Part{agentrunner.Text("Done: order A-1001")}},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("thread (-want +got):\n%s", diff)
	}

	// A thread under the bot's own message (a card, say): a conversation
	// starts with a person, so the bot's leading message is left out.
	card := post(botID, "Approval needed: issue_refund", "")
	ask := post("U0CAROL", "<@"+botID+"> why?", card)
	if got, err := b.ThreadMessages(t.Context(), "C0GENERAL", card, ask, botID, 20); err != nil || len(got) != 0 {
		t.Errorf("thread under the bot's message: got %+v, %v; want nothing", got, err)
	}

	// A long thread, over several pages: only the last messages are kept.
	for i := range 40 {
		post("U0CAROL", fmt.Sprintf("message %d", i), parent)
	}
	got, err = b.ThreadMessages(t.Context(), "C0GENERAL", parent, "", botID, 5)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 5 || got[4].Parts[0].Content != "<@U0CAROL> wrote: message 39" || got[0].Parts[0].Content != "<@U0CAROL> wrote: message 35" {
		t.Errorf("last 5 of a long thread: got %+v", got)
	}
	if n := len(fake.Calls("conversations.replies")); n < 4 {
		t.Errorf("read %d pages, want the thread's pages of %d", n, repliesPage)
	}

	// Each message costs the model a bounded prompt.
	post("U0CAROL", strings.Repeat("x", 10*maxThreadMessage), parent)
	got, err = b.ThreadMessages(t.Context(), "C0GENERAL", parent, "", botID, 1)
	if err != nil || len(got) != 1 {
		t.Fatalf("a long message: got %d messages, %v", len(got), err)
	}
	if n := len(got[0].Parts[0].Content); n > maxThreadMessage+len("<@U0CAROL> wrote: ")+4 {
		t.Errorf("a long message: got %d bytes, want at most about %d", n, maxThreadMessage)
	}

	fake.ErrorNext("conversations.replies", "thread_not_found", 1)
	if _, err := b.ThreadMessages(t.Context(), "C0GENERAL", parent, "", botID, 5); err == nil {
		t.Error("a thread Slack does not show: no error")
	}
}
