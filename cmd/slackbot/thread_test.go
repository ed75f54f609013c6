package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/slackapprove/slackbot/agentrunner"
	"github.com/slackapprove/slackbot/agentrunner/demotools"
	"github.com/slackapprove/slackbot/bot"
	"github.com/slackapprove/slackbot/internal/slackfake"
	"github.com/slackapprove/slackbot/internal/slacktest"
)

// reply posts "<@bot> text" as user in a thread of channel and sends the
// signed app_mention Slack sends for it. It returns the message's ts.
func (e *env) reply(user, channel, thread, text string) string {
	e.t.Helper()
	full := "<@" + e.slack.BotUserID() + "> " + text
	msg, err := e.slack.PostAsUser(channel, user, full, thread)
	if err != nil {
		e.t.Fatal(err)
	}
	body := slacktest.Mention{
		Team: testTeam, EventID: fmt.Sprintf("Ev%08d", eventSeq.Add(1)),
		User: user, Channel: channel, Text: full, TS: msg.TS, ThreadTS: thread,
	}.Body()
	if resp := e.post("/slack/events", slacktest.JSONContentType, body, time.Now(), testSecret); resp.StatusCode != 200 {
		e.t.Fatalf("app_mention in a thread: got status %d", resp.StatusCode)
	}
	return msg.TS
}

// answers returns the bot's answers in a thread: its replies but the notes
// that a message waits for its turn (a reply sent the moment an answer
// appears may get one: the thread is handed on just after).
func (e *env) answers(channel, thread string) []string {
	var out []string
	for _, r := range e.replies(channel, thread) {
		if !isQueuedNote(r) {
			out = append(out, r)
		}
	}
	return out
}

func isQueuedNote(s string) bool {
	return strings.Contains(s, "once I've finished the earlier request")
}

// waitReplies waits for n bot answers in a thread and returns them.
func (e *env) waitReplies(channel, thread string, n int) []string {
	e.t.Helper()
	e.waitFor(fmt.Sprintf("%d answers in the thread", n), func() bool { return len(e.answers(channel, thread)) >= n })
	return e.answers(channel, thread)
}

// shown is a card's blocks as Slack would show their text: JSON with <, >
// and & unescaped.
func shown(m slackfake.Message) string {
	return strings.NewReplacer(`\u003c`, "<", `\u003e`, ">", `\u0026`, "&").Replace(cardText(m))
}

// TestThreadContinuesConversation: Carol's refund is approved and answered
// in her thread; her reply there, "actually make it 100", continues the
// same conversation: the model knows the order from the earlier turn.
func TestThreadContinuesConversation(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{model: demotools.Model{}})
	thread := e.mention(carol, general, "refund order A-1002 150")
	card := e.waitCards(1)[0]
	if code := e.click(alice, card, bot.ActionIDApprove); code != 200 {
		t.Fatalf("approve: status %d", code)
	}
	if got := e.waitReplies(general, thread, 1)[0]; got != "Done: refunded 150.00 on A-1002" {
		t.Fatalf("first answer: got %q", got)
	}

	e.reply(carol, general, thread, "actually make it 100 and tell the customer")
	card = e.waitCards(2)[1]
	if s := cardText(card); !strings.Contains(s, `\"order_id\": \"A-1002\"`) || !strings.Contains(s, `\"amount\": 100`) {
		t.Fatalf("the follow-up's card does not refund A-1002 $100:\n%s", s)
	}
	if code := e.click(alice, card, bot.ActionIDApprove); code != 200 {
		t.Fatalf("approve: status %d", code)
	}
	if got := e.waitReplies(general, thread, 2)[1]; got != "Done: refunded 100.00 on A-1002" {
		t.Errorf("second answer: got %q", got)
	}
	runs := e.tools.Runs("issue_refund")
	if len(runs) != 2 || string(runs[1]) != `{"order_id":"A-1002","amount":100}` {
		t.Errorf("refunds: got %s", runs)
	}

	// A new mention in the channel is a new conversation.
	other := e.mention(carol, general, "make it 100")
	if got := e.waitReplies(general, other, 1)[0]; got != demotools.Help {
		t.Errorf("a new thread: got %q, want the help (no earlier turn)", got)
	}
}

// TestThreadFollowUpRequester: anyone in the channel may continue a thread,
// and the requester on the follow-up's card is who wrote it: Bob may not
// approve the deletion he asked for in Carol's thread; Carol may.
func TestThreadFollowUpRequester(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{model: demotools.Model{}})
	thread := e.mention(carol, general, "look up order A-1001")
	e.waitReplies(general, thread, 1)

	e.reply(bob, general, thread, "delete customer C-77")
	card := e.waitCards(1)[0]
	if s := shown(card); !strings.Contains(s, "Requested by <@"+bob+">") {
		t.Fatalf("the follow-up's card does not name Bob as requester:\n%s", s)
	}
	if code := e.click(bob, card, bot.ActionIDApprove); code != 200 {
		t.Fatalf("Bob's click: status %d", code)
	}
	e.waitFor("Bob's refusal", func() bool {
		for _, m := range e.ephemeralsFor(bob) {
			if strings.Contains(m, "You asked for this call") {
				return true
			}
		}
		return false
	})
	if runs := e.tools.Runs("delete_customer"); len(runs) != 0 {
		t.Fatalf("Bob approved his own request: %s", runs)
	}
	if code := e.click(alice, e.latest(card), bot.ActionIDApprove); code != 200 {
		t.Fatalf("Alice's click: status %d", code)
	}
	if got := e.waitReplies(general, thread, 2)[1]; got != "Done: deleted C-77" {
		t.Errorf("answer: got %q", got)
	}
}

// TestThreadFreshStartFromSlack: in a thread slackbot has no history for
// (someone else started it without mentioning slackbot, or the history
// expired or no longer decodes), the run starts from the thread's messages
// as Slack shows them.
func TestThreadFreshStartFromSlack(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{model: demotools.Model{}})
	parent, err := e.slack.PostAsUser(general, dave, "customer wants: refund order A-1001 30", "")
	if err != nil {
		t.Fatal(err)
	}
	e.reply(carol, general, parent.TS, "make it 5 instead")
	card := e.waitCards(1)[0]
	if s := cardText(card); !strings.Contains(s, `\"order_id\": \"A-1001\"`) || !strings.Contains(s, `\"amount\": 5`) {
		t.Fatalf("the run did not read the thread:\n%s", s)
	}
	if !strings.Contains(shown(card), "Requested by <@"+carol+">") {
		t.Errorf("requester: want Carol, who mentioned slackbot:\n%s", shown(card))
	}

	// A history that no longer decodes: the next reply starts afresh from
	// the thread, which still says which order.
	e.click(alice, card, bot.ActionIDApprove)
	e.waitReplies(general, parent.TS, 1)
	key := e.prefix + "thread:" + testTeam + "/" + general + "/" + parent.TS + ":h"
	e.waitFor("the thread's history", func() bool { return e.app.store.Client().Exists(t.Context(), key).Val() == 1 })
	if err := e.app.store.Client().Set(t.Context(), key, "{not json", time.Hour).Err(); err != nil {
		t.Fatal(err)
	}
	e.reply(carol, general, parent.TS, "make it 7 instead")
	card = e.waitCards(2)[1]
	if s := cardText(card); !strings.Contains(s, `\"order_id\": \"A-1001\"`) || !strings.Contains(s, `\"amount\": 7`) {
		t.Fatalf("after an undecodable history:\n%s", s)
	}
}

// gatedModel is the demo model whose first request waits for open, and
// which counts the requests in flight at once.
type gatedModel struct {
	open     chan struct{}
	once     sync.Once
	started  chan struct{}
	inFlight atomic.Int32
	most     atomic.Int32
	mu       sync.Mutex
	seen     [][]agentrunner.Message
}

func (m *gatedModel) Request(ctx context.Context, msgs []agentrunner.Message, p agentrunner.RequestParams) (agentrunner.Message, error) {
	n := m.inFlight.Add(1)
	defer m.inFlight.Add(-1)
	for {
		most := m.most.Load()
		if n <= most || m.most.CompareAndSwap(most, n) {
			break
		}
	}
	m.mu.Lock()
	m.seen = append(m.seen, msgs)
	m.mu.Unlock()
	first := false
	m.once.Do(func() { first = true; close(m.started) })
	if first {
		<-m.open
	}
	time.Sleep(20 * time.Millisecond) // room for another run to interleave
	return demotools.Model{}.Request(ctx, msgs, p)
}

// TestThreadConcurrentMentions: a mention that arrives while the thread's
// run works waits for it (and says so), then runs with the first run's
// turn in its history; the two never interleave.
func TestThreadConcurrentMentions(t *testing.T) {
	t.Parallel()
	m := &gatedModel{open: make(chan struct{}), started: make(chan struct{})}
	e := newEnv(t, envOptions{model: m})
	thread := e.mention(carol, general, "look up order A-1001")
	<-m.started
	e.reply(bob, general, thread, "look up order A-1002")
	e.waitFor("the note that the message waits", func() bool {
		r := e.replies(general, thread)
		return len(r) == 1 && isQueuedNote(r[0])
	})
	close(m.open)
	// The test tools' lookup_order wants an amount: each run ends saying
	// it could not call the tool.
	if got := e.waitReplies(general, thread, 2); len(got) != 2 || !strings.HasPrefix(got[0], "I could not call lookup_order") {
		t.Errorf("answers: got %q, want two", got)
	}
	if most := m.most.Load(); most != 1 {
		t.Errorf("%d model requests in flight at once in one thread, want 1", most)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	var second []agentrunner.Message
	for _, h := range m.seen {
		if strings.Contains(lastPromptOf(h), "A-1002") {
			second = h
			break
		}
	}
	b, _ := json.Marshal(second)
	if !strings.Contains(string(b), "look up order A-1001") || !strings.Contains(string(b), `order A-1001`) {
		t.Errorf("the second run did not start from the first run's history: %s", b)
	}
}

func lastPromptOf(msgs []agentrunner.Message) string {
	for i := len(msgs) - 1; i >= 0; i-- {
		for _, p := range msgs[i].Parts {
			if p.PartKind == agentrunner.PartUserPrompt {
				return p.Content
			}
		}
	}
	return ""
}

// TestThreadInUnservedChannel: a thread in a channel no route serves goes
// on as a conversation, and its calls are denied as ever: no card, the
// model told why.
func TestThreadInUnservedChannel(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{model: demotools.Model{}, routes: `
routes:
  - name: refunds
    when: {tools: ["issue_refund"], channels: ["C0SUPPORT"]}
    channel: C0APPROVALS
    approvers: {users: [U0ALICE]}
`})
	thread := e.mention(carol, general, "refund order A-1002 150")
	first := e.waitReplies(general, thread, 1)[0]
	if !strings.Contains(first, "I did not run issue_refund: No approval route matches issue_refund from C0GENERAL") {
		t.Fatalf("first answer: got %q", first)
	}
	e.reply(carol, general, thread, "actually make it 120")
	second := e.waitReplies(general, thread, 2)[1]
	if !strings.Contains(second, "I did not run issue_refund: No approval route matches") {
		t.Errorf("follow-up answer: got %q", second)
	}
	if n := len(e.cards()); n != 0 {
		t.Errorf("%d cards posted for an unserved channel", n)
	}
	if runs := e.tools.Runs("issue_refund"); len(runs) != 0 {
		t.Errorf("refunds ran: %s", runs)
	}
}

// TestThreadRemembersFailedRun: a run that fails leaves its prompt, and
// that it failed, in the thread's history: the next message can refer to it.
func TestThreadRemembersFailedRun(t *testing.T) {
	t.Parallel()
	model := agentrunner.FunctionModel(func(_ context.Context, msgs []agentrunner.Message, _ agentrunner.RequestParams) (agentrunner.Message, error) {
		if lastPromptOf(msgs) == "boom" {
			return agentrunner.Message{}, fmt.Errorf("the model is down")
		}
		b, _ := json.Marshal(msgs)
		seen := "the failure is not in the history"
		if strings.Contains(string(b), `"boom"`) && strings.Contains(string(b), "The run failed") {
			seen = "I see the failed request"
		}
		return agentrunner.Message{Parts: []agentrunner.Part{agentrunner.Text(seen)}}, nil
	})
	e := newEnv(t, envOptions{model: model})
	thread := e.mention(carol, general, "boom")
	if got := e.waitReplies(general, thread, 1)[0]; !strings.Contains(got, "The agent run failed") {
		t.Fatalf("first answer: got %q", got)
	}
	e.reply(carol, general, thread, "try again")
	if got := e.waitReplies(general, thread, 2)[1]; got != "I see the failed request" {
		t.Errorf("follow-up: got %q", got)
	}
}
