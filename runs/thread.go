package runs

import (
	"context"
	"errors"
	"time"

	"github.com/slackapprove/slackbot/agentrunner"
	"github.com/slackapprove/slackbot/approval"
)

// A thread is one conversation with the agent. A message in a thread
// answered before continues from the history its last run ended with; one
// in a thread no history is kept for starts from what the chat shows of
// it. The runs of one thread take turns.

// ThreadRef names a thread: workspace, channel, parent message.
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

// Defaults of Runs' thread settings.
const (
	// DefaultThreadLease is how long a run holds its thread without a
	// heartbeat; a run whose process died frees it this long after.
	DefaultThreadLease = 30 * time.Second
	// DefaultThreadReplies bounds the messages a fresh start reads from a
	// thread no history is kept for.
	DefaultThreadReplies = 20
	// threadWaitSlack keeps a run's hold on its thread a while past its
	// token's deadline: the expiry still has to resume the run.
	threadWaitSlack = 5 * time.Minute
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
// (when t is a reply in a thread) the thread as the chat shows it, else
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
	msgs, err = rs.Chat.ThreadMessages(ctx, th.Channel, th.TS, t.MessageTS, rs.BotUserID, limit)
	if err != nil {
		rs.log().WarnContext(ctx, "read thread for a fresh start; starting from the message alone", "err", err, "channel", th.Channel)
		return nil
	}
	return msgs
}

// saveHistory keeps what a run of the thread ended with, its pending calls
// closed, for the thread's next message.
func (rs *Runs) saveHistory(ctx context.Context, deps *Deps, msgs []agentrunner.Message) {
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

// handOn ends runID's turn in its thread and starts the next waiting one.
func (rs *Runs) handOn(ctx context.Context, th ThreadRef, runID string) {
	next, err := rs.Threads.Leave(context.WithoutCancel(ctx), th, runID, rs.lease())
	if err != nil {
		// The lease lapses; the thread's next message picks up the queue.
		rs.log().ErrorContext(ctx, "hand the thread on", "err", err, "channel", th.Channel)
		return
	}
	if next != nil {
		rs.runTurn(ctx, th, *next)
	}
}
