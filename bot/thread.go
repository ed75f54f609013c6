package bot

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/slack-go/slack"

	"github.com/slackapprove/slackbot/agentrunner"
	"github.com/slackapprove/slackbot/approval"
)

// A Slack thread is one conversation with the agent. A message in a thread
// slackbot answered before continues from the history its last run ended
// with; one in a thread slackbot keeps no history for starts from what
// conversations.replies shows of it. The runs of one thread take turns.

// ThreadRef names a Slack thread: workspace, channel, parent ts.
type ThreadRef struct {
	Team, Channel, TS string
}

// Turn is one message to the agent in a thread, waiting for its turn or
// running: the run it starts (RunID), the prompt, who wrote it and where
// (Origin: the requester on its cards is its author), and the message's
// own ts. InThread says the message was a reply in an existing thread.
type Turn struct {
	RunID     string          `json:"run_id"`
	Prompt    string          `json:"prompt"`
	Origin    approval.Origin `json:"origin"`
	MessageTS string          `json:"message_ts,omitempty"`
	InThread  bool            `json:"in_thread,omitempty"`
}

// Errors of a Threads implementation.
var (
	// ErrNoThreadHistory: no history is kept for the thread.
	ErrNoThreadHistory = errors.New("no history for the thread")
	// ErrThreadBusy: too many messages already wait in the thread.
	ErrThreadBusy = errors.New("too many messages wait in the thread")
)

// Threads keeps each thread's conversation and lets its runs take turns.
// cmd/slackbot hands Runs one over the store.
type Threads interface {
	// History returns the thread's history, ErrNoThreadHistory, or another
	// error (one that no longer decodes, Redis down): the run then starts
	// afresh.
	History(ctx context.Context, th ThreadRef) ([]agentrunner.Message, error)
	// SaveHistory keeps msgs as the thread's history (trimmed to a cap).
	SaveHistory(ctx context.Context, th ThreadRef, msgs []agentrunner.Message) error
	// Enter asks for the thread for t: it returns the turn that runs now
	// (t, or one queued earlier; t then waits), or nil when t waits behind
	// a running turn. ErrThreadBusy when the queue is full.
	Enter(ctx context.Context, th ThreadRef, t Turn, lease time.Duration) (*Turn, error)
	// Leave ends runID's turn and returns the next one, which now holds
	// the thread, or nil.
	Leave(ctx context.Context, th ThreadRef, runID string, lease time.Duration) (*Turn, error)
	// Hold extends runID's hold on the thread to at least ttl.
	Hold(ctx context.Context, th ThreadRef, runID string, ttl time.Duration) (bool, error)
}

// Defaults of Runs' thread settings.
const (
	// DefaultThreadLease is how long a run holds its thread without a
	// heartbeat; a run whose process died frees it this long after.
	DefaultThreadLease = 30 * time.Second
	// DefaultThreadReplies bounds the messages a fresh start reads from a
	// thread slackbot keeps no history for.
	DefaultThreadReplies = 20
	// threadWaitSlack keeps a run's hold on its thread a while past its
	// token's deadline: the expiry still has to resume the run.
	threadWaitSlack = 5 * time.Minute
	// repliesPage is the page size of conversations.replies: 15 is the
	// most Slack serves a commercially distributed app outside the
	// Marketplace (which may also call it only once a minute).
	repliesPage = 15
	// maxRepliesPages bounds the conversations.replies pages a fresh start
	// reads, and repliesBudget the time it spends on them: the run does not
	// wait out a rate limit, it starts from what it has.
	maxRepliesPages = 7
	repliesBudget   = 10 * time.Second
	// maxThreadMessage bounds each message a fresh start reads, so a
	// thread costs the model a bounded prompt.
	maxThreadMessage = 4000
)

// noDecisionText answers the calls a saved history left pending, so the
// next run can continue it.
const noDecisionText = "No decision was made for this call before the conversation went on; it did not run."

// queuedText tells the author of a message that waits for its turn.
const queuedText = ":hourglass_flowing_sand: I'll answer this once I've finished the earlier request in this thread."

// busyText answers a message the thread's full queue refused.
const busyText = ":warning: Too many messages are already waiting in this thread; please ask again once I've answered them."

func (rs *Runs) lease() time.Duration {
	if rs.ThreadLease > 0 {
		return rs.ThreadLease
	}
	return DefaultThreadLease
}

// threadOf returns the thread a run's origin is in, if the run takes
// turns in it.
func (rs *Runs) threadOf(o approval.Origin) (ThreadRef, bool) {
	if rs.Threads == nil || o.Channel == "" || o.ThreadTS == "" {
		return ThreadRef{}, false
	}
	return ThreadRef{Team: o.Team, Channel: o.Channel, TS: o.ThreadTS}, true
}

// history is where turn t's run starts: the thread's kept history, else
// (when t is a reply in a thread) the thread as Slack shows it, else
// nothing.
func (rs *Runs) history(ctx context.Context, th ThreadRef, t Turn) []agentrunner.Message {
	msgs, err := rs.Threads.History(ctx, th)
	if err == nil {
		return agentrunner.CloseUnprocessed(msgs, noDecisionText)
	}
	if !errors.Is(err, ErrNoThreadHistory) {
		rs.log().WarnContext(ctx, "thread history unusable; starting afresh", "err", err, "channel", th.Channel, "thread", th.TS)
	}
	if !t.InThread {
		return nil
	}
	limit := rs.ThreadReplies
	if limit <= 0 {
		limit = DefaultThreadReplies
	}
	msgs, err = rs.Bot.ThreadMessages(ctx, th.Channel, th.TS, t.MessageTS, rs.BotUserID, limit)
	if err != nil {
		rs.log().WarnContext(ctx, "read thread for a fresh start; starting from the message alone", "err", err, "channel", th.Channel)
		return nil
	}
	return msgs
}

// saveHistory keeps what a run of the thread ended with, its pending calls
// closed, for the thread's next message.
func (rs *Runs) saveHistory(ctx context.Context, deps *RunDeps, msgs []agentrunner.Message) {
	th, ok := rs.threadOf(deps.Origin)
	if !ok || len(msgs) == 0 {
		return
	}
	if err := rs.Threads.SaveHistory(ctx, th, agentrunner.CloseUnprocessed(msgs, noDecisionText)); err != nil {
		rs.log().ErrorContext(ctx, "save thread history", "err", err, "channel", th.Channel, "thread", th.TS)
	}
}

// heartbeat keeps runID's hold on its thread while the run works, until
// stop is called.
func (rs *Runs) heartbeat(ctx context.Context, th ThreadRef, runID string) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(max(rs.lease()/3, time.Millisecond))
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				if _, err := rs.Threads.Hold(ctx, th, runID, rs.lease()); err != nil && ctx.Err() == nil {
					rs.log().WarnContext(ctx, "renew thread lease", "err", err, "channel", th.Channel)
				}
			}
		}
	}()
	return func() { cancel(); <-done }
}

// ThreadMessages reads a thread as conversations.replies shows it, for a
// run that starts in a thread slackbot keeps no history for: its last
// limit messages before the message at exclude (which the run gets as its
// prompt), botUser's as the model's turns, everyone else's as user turns
// naming their author. Leading model turns are dropped: a conversation
// starts with a person. It reads at most maxRepliesPages pages within
// repliesBudget; when a later page fails it uses the pages it read.
func (b *Bot) ThreadMessages(ctx context.Context, channel, threadTS, exclude, botUser string, limit int) ([]agentrunner.Message, error) {
	ctx, cancel := context.WithTimeout(ctx, repliesBudget)
	defer cancel()
	var kept []slack.Message
	params := &slack.GetConversationRepliesParameters{ChannelID: channel, Timestamp: threadTS, Limit: repliesPage}
	for page := 0; page < maxRepliesPages; page++ {
		var msgs []slack.Message
		var more bool
		var next string
		err := b.retry.Do(ctx, func(ctx context.Context) error {
			var err error
			msgs, more, next, err = b.slack.GetConversationRepliesContext(ctx, params)
			if err != nil {
				b.metrics.SlackError("conversations.replies")
			}
			return err
		})
		if err != nil && page == 0 {
			return nil, fmt.Errorf("read thread: %w", err)
		}
		if err != nil {
			b.log.WarnContext(ctx, "read thread: using the pages read so far", "err", err, "pages", page)
			break
		}
		for _, m := range msgs {
			said := m.SubType == "" || m.SubType == "bot_message" || m.SubType == "thread_broadcast"
			// Later messages wait for their own turn.
			if said && (exclude == "" || tsBefore(m.Timestamp, exclude)) {
				kept = append(kept, m)
			}
		}
		if len(kept) > limit {
			kept = kept[len(kept)-limit:]
		}
		if !more || next == "" {
			break
		}
		params.Cursor = next
	}
	var out []agentrunner.Message
	for _, m := range kept {
		text := truncate(strings.TrimSpace(mentionRE.ReplaceAllString(m.Text, "")), maxThreadMessage)
		if text == "" {
			continue
		}
		if m.User == botUser && botUser != "" {
			if len(out) == 0 {
				continue
			}
			out = append(out, agentrunner.Message{Kind: agentrunner.KindResponse, Parts: []agentrunner.Part{agentrunner.Text(text)}})
			continue
		}
		who := m.User
		if who == "" {
			who = cmp.Or(m.Username, m.BotID, "someone")
		}
		out = append(out, agentrunner.Message{Kind: agentrunner.KindRequest,
			Parts: []agentrunner.Part{agentrunner.UserPrompt("<@" + who + "> wrote: " + text)}})
	}
	return out, nil
}

// tsBefore reports whether Slack timestamp a ("1700000000.000100") is
// earlier than b.
func tsBefore(a, b string) bool {
	as, af, _ := strings.Cut(a, ".")
	bs, bf, _ := strings.Cut(b, ".")
	if len(as) != len(bs) {
		return len(as) < len(bs)
	}
	if as != bs {
		return as < bs
	}
	return af < bf
}
