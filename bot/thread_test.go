package bot

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/slack-go/slack"

	"github.com/slackapprove/slackbot/agentrunner"
	"github.com/slackapprove/slackbot/approval"
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

type holdRecorder struct {
	Threads
	mu    sync.Mutex
	holds []time.Duration
}

func (h *holdRecorder) Hold(_ context.Context, _ ThreadRef, runID string, ttl time.Duration) (bool, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.holds = append(h.holds, ttl)
	return runID == "r1", nil
}

// TestWaitingRunHoldsItsThread: a run that hands calls to people holds its
// thread until the token's deadline (and a while after, for the expiry to
// resume it), not just the heartbeat's lease: a run parked in Redis, with
// no process holding it, keeps its thread.
func TestWaitingRunHoldsItsThread(t *testing.T) {
	rec := &holdRecorder{}
	rs := &Runs{Threads: rec}
	deps := &RunDeps{Origin: approval.Origin{Team: "T1", Channel: "C1", ThreadTS: "1.2", User: "U1"}}
	if _, ok := rs.bind(t.Context(), deps, "r1"); !ok {
		t.Fatal("a run with a thread does not hold it")
	}
	deps.Waits(time.Now().Add(time.Hour))
	if len(rec.holds) != 1 || rec.holds[0] < time.Hour || rec.holds[0] > time.Hour+threadWaitSlack {
		t.Errorf("holds: got %v, want one of about 1h + %v", rec.holds, threadWaitSlack)
	}
	// A run with no thread (an API run) holds none.
	api := &RunDeps{Origin: approval.Origin{Client: "billing"}}
	if _, ok := rs.bind(t.Context(), api, "r2"); ok {
		t.Error("a run with no thread holds one")
	}
	api.Waits(time.Now().Add(time.Hour))
	if len(rec.holds) != 1 {
		t.Errorf("holds after an API run waited: %v", rec.holds)
	}
}

// noHistory is a Threads that keeps no history for any thread.
type noHistory struct{ Threads }

func (noHistory) History(context.Context, ThreadRef) ([]agentrunner.Message, error) {
	return nil, ErrNoThreadHistory
}

// TestFreshStartFromTheMessageAlone: a reply in a thread slackbot keeps
// no history for starts from the thread as Slack shows it, and when Slack
// cannot show it, from the new message alone (issue 19: "or from the new
// message alone if that fails"), never failing the run.
func TestFreshStartFromTheMessageAlone(t *testing.T) {
	fake, srv := slackfaketest.NewTestServer(t, slackfake.WithDemoWorkspace())
	b := newTestBot(testConfig{Slack: slack.New(fake.Token(), slack.OptionAPIURL(slackfaketest.APIURL(srv)))})
	t.Cleanup(b.Close)
	botID := fake.BotUserID()
	parent, err := fake.PostAsUser("C0GENERAL", "U0DAVE", "customer wants a refund on A-1001", "")
	if err != nil {
		t.Fatal(err)
	}
	reply, err := fake.PostAsUser("C0GENERAL", "U0CAROL", "<@"+botID+"> make it 5", parent.TS)
	if err != nil {
		t.Fatal(err)
	}
	rs := &Runs{Bot: b, Threads: noHistory{}, BotUserID: botID}
	th := ThreadRef{Team: "T1", Channel: "C0GENERAL", TS: parent.TS}
	turn := newTurn("T1", "C0GENERAL", "U0CAROL", reply.TS, parent.TS)

	if got := rs.history(t.Context(), th, turn); len(got) != 1 || !strings.Contains(got[0].Parts[0].Content, "A-1001") {
		t.Fatalf("a thread Slack shows: got %+v, want its first message", got)
	}
	fake.ErrorNext("conversations.replies", "thread_not_found", 1)
	if got := rs.history(t.Context(), th, turn); got != nil {
		t.Errorf("a thread Slack cannot show: got %+v, want no history (the message alone)", got)
	}
	// A message that starts its thread reads nothing from Slack.
	calls := len(fake.Calls("conversations.replies"))
	if got := rs.history(t.Context(), th, newTurn("T1", "C0GENERAL", "U0CAROL", parent.TS, "")); got != nil {
		t.Errorf("a new thread: got %+v, want no history", got)
	}
	if n := len(fake.Calls("conversations.replies")) - calls; n != 0 {
		t.Errorf("a new thread read conversations.replies %d times", n)
	}
}
