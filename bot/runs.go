package bot

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/slack-go/slack"

	"github.com/slackapprove/slackbot/agentrunner"
	"github.com/slackapprove/slackbot/approval"
)

// RunDeps are the Deps of a run started from Slack: its origin, plus the
// resume tokens asked during the run, so cards can show what the tool did.
type RunDeps struct {
	approval.Origin

	mu     sync.Mutex
	tokens []string
	// waits, set by Runs for a run that holds its thread, keeps the thread
	// while the run waits for people (until the token's deadline).
	waits func(until time.Time)
	// runID is the run's id: its hold on its thread.
	runID string
	// history and prompt are what a new turn started from, so that a run
	// that fails still leaves its prompt in the thread's history.
	history []agentrunner.Message
	prompt  string
}

// Waits is told, when the run hands calls to people, until when it may
// wait for them: the run's thread stays its own until then, even if the
// run is parked in Redis with no process holding it.
func (d *RunDeps) Waits(until time.Time) {
	if d.waits != nil {
		d.waits(until)
	}
}

var _ approval.AskHooks = (*RunDeps)(nil)

// RunOrigin implements approval.OriginCarrier.
func (d *RunDeps) RunOrigin() *approval.Origin { return &d.Origin }

// Asked implements approval.AskHooks: it records a token handed to people
// during the run and, unless until is zero (a run resumed from a token),
// keeps the run's thread until then (Waits).
func (d *RunDeps) Asked(token string, until time.Time) {
	d.mu.Lock()
	d.tokens = append(d.tokens, token)
	d.mu.Unlock()
	if !until.IsZero() {
		d.Waits(until)
	}
}

// Tokens returns the tokens asked so far.
func (d *RunDeps) Tokens() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]string(nil), d.tokens...)
}

// Runs starts agent runs for Slack messages and posts their answers in the
// thread they came from.
type Runs struct {
	Bot       *Bot
	Runner    *agentrunner.Runner
	Dedupe    Deduper
	BotUserID string
	Log       *slog.Logger
	// HandedOff reports whether a run's error means another process took
	// the run over (e.g. it claimed the resumption first); such a run
	// reports nothing here.
	HandedOff func(err error) bool
	// Finished, when set, is told how each run ended: "complete",
	// "pending", "failed" (for metrics).
	Finished func(result string)
	// Threads, when set, makes a Slack thread one conversation: a message
	// in a thread continues from the history of the thread's last run, and
	// the runs of a thread take turns. Nil: every message starts afresh.
	Threads Threads
	// ThreadLease is how long a run holds its thread between heartbeats;
	// default DefaultThreadLease.
	ThreadLease time.Duration
	// ThreadReplies bounds the messages read from a thread slackbot keeps
	// no history for; default DefaultThreadReplies.
	ThreadReplies int
	// Followups, when set, makes what follows a run's end durable: the
	// answer and the cards' updates are queued as jobs (any replica does
	// them, even if this process dies) instead of done here.
	Followups Followups

	wg sync.WaitGroup
	// stop is closed by Stop; every run's context ends with it.
	stopOnce, stopMake sync.Once
	stop               chan struct{}
}

func (rs *Runs) log() *slog.Logger {
	if rs.Log != nil {
		return rs.Log
	}
	return slog.New(slog.DiscardHandler)
}

// Wait waits for the runs started so far to end.
func (rs *Runs) Wait() { rs.wg.Wait() }

// Stop cancels every run, those started and those to come (SIGTERM, once
// the shutdown budget is spent): they stop without deciding anything, so
// that they resume elsewhere.
func (rs *Runs) Stop() {
	ch := rs.stopped()
	rs.stopOnce.Do(func() { close(ch) })
}

func (rs *Runs) stopped() chan struct{} {
	rs.stopMake.Do(func() { rs.stop = make(chan struct{}) })
	return rs.stop
}

// runContext is the context of one run (or of a turn waiting for its
// thread): it ends with cancel, or when Stop is called. It has parent's
// values (a trace span), not its end.
func (rs *Runs) runContext(parent context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(context.WithoutCancel(parent))
	stop := rs.stopped()
	go func() {
		select {
		case <-stop:
			cancel()
		case <-ctx.Done():
		}
	}()
	return ctx, cancel
}

// Start runs the agent on prompt in the background, as a new message
// that starts its thread.
func (rs *Runs) Start(prompt string, origin approval.Origin) {
	rs.StartTurn(Turn{Prompt: prompt, Origin: origin})
}

// StartTurn runs the agent on a message in the background. In a thread
// (with Threads set) the run continues the thread's conversation, and
// waits for the thread's running turn to end first.
func (rs *Runs) StartTurn(t Turn) {
	if t.RunID == "" {
		t.RunID = agentrunner.NewToken()[:16]
	}
	th, threaded := rs.threadOf(t.Origin)
	if !threaded {
		deps := &RunDeps{Origin: t.Origin}
		rs.Resume(agentrunner.RunInput{RunID: t.RunID, Prompt: t.Prompt}, deps, nil)
		return
	}
	ctx, cancel := rs.runContext(context.Background())
	rs.wg.Add(1)
	go func() {
		defer rs.wg.Done()
		defer cancel()
		now, err := rs.Threads.Enter(ctx, th, t, rs.lease())
		switch {
		case errors.Is(err, ErrThreadBusy):
			rs.log().WarnContext(ctx, "thread queue full; message refused", "channel", th.Channel, "thread", th.TS)
			rs.postNote(ctx, t.Origin, busyText)
			return
		case err != nil:
			// Without Redis no run gets far; this one starts afresh.
			rs.log().ErrorContext(ctx, "enter thread; running without its history", "err", err, "channel", th.Channel)
			now = &t
		case now == nil:
			rs.log().InfoContext(ctx, "message waits for the thread's running turn", "channel", th.Channel, "thread", th.TS, "run", t.RunID)
			rs.postNote(ctx, t.Origin, queuedText)
			return
		}
		rs.runTurn(ctx, th, *now)
	}()
}

// runTurn starts the run of a turn that holds its thread.
func (rs *Runs) runTurn(ctx context.Context, th ThreadRef, t Turn) {
	in := agentrunner.RunInput{RunID: t.RunID, History: rs.history(ctx, th, t), Prompt: t.Prompt}
	rs.Resume(in, &RunDeps{Origin: t.Origin}, nil)
}

func (rs *Runs) postNote(ctx context.Context, o approval.Origin, text string) {
	if err := rs.Bot.PostInThread(ctx, o.Channel, o.ThreadTS, text); err != nil {
		rs.log().ErrorContext(ctx, "post in thread", "err", err, "channel", o.Channel)
	}
}

// Resume runs in in the background, e.g. a run continued from its saved
// state with the results of its token, and reports its end like Start.
// done, if set, is called after the end was reported, with whether the run
// suspended again (on a later token, whose saved state replaced the one
// it resumed from). A run whose calls were handed to people suspends
// (agentrunner.StatusSuspended): its goroutine ends, and nothing of it
// stays in this process; whoever records the decision resumes it. A run of a thread
// holds the thread while it works (and while it waits for people), saves
// the thread's history when it ends, and hands the thread to the next
// message waiting in it, on whichever process the run ends.
func (rs *Runs) Resume(in agentrunner.RunInput, deps *RunDeps, done func(suspended bool)) {
	rs.ResumeIn(context.Background(), in, deps, done)
}

// ResumeIn is Resume with the values of ctx (the span of the resume, so
// the run's tool calls and Slack posts join its trace); the run's lifetime
// is its own, not ctx's.
func (rs *Runs) ResumeIn(ctx context.Context, in agentrunner.RunInput, deps *RunDeps, done func(suspended bool)) {
	ctx, cancel := rs.runContext(ctx)
	if in.RunID == "" {
		in.RunID = agentrunner.NewToken()[:16]
	}
	in.Deps = deps
	if in.Results == nil && in.Pending == nil {
		deps.history, deps.prompt = in.History, in.Prompt
	}
	th, threaded := rs.bind(ctx, deps, in.RunID)
	rs.wg.Add(1)
	go func() {
		defer rs.wg.Done()
		defer cancel()
		stop := func() {}
		if threaded {
			stop = rs.heartbeat(ctx, th, in.RunID)
		}
		res, err := rs.Runner.Run(ctx, in)
		stop()
		if rs.Finish(ctx, deps, res, err) && done != nil {
			done(err == nil && res.Status == agentrunner.StatusSuspended)
		}
	}()
}

// bind makes deps the deps of run runID, and returns the thread the run
// holds, if it does: while the run waits for people, the thread stays its
// own until the token's deadline.
func (rs *Runs) bind(ctx context.Context, deps *RunDeps, runID string) (ThreadRef, bool) {
	deps.runID = runID
	th, threaded := rs.threadOf(deps.Origin)
	if !threaded {
		return th, false
	}
	deps.waits = func(until time.Time) {
		ttl := time.Until(until) + threadWaitSlack
		if _, err := rs.Threads.Hold(context.WithoutCancel(ctx), th, runID, ttl); err != nil {
			rs.log().WarnContext(ctx, "hold thread while waiting", "err", err, "channel", th.Channel)
		}
	}
	return th, true
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

// Finish reports a run's end: the answer (or the failure) in the thread,
// and each decided call's tool outcome on its card. It reports whether the
// run ended here: a run stopped because the process is shutting down, or
// taken over by another process, reports nothing (it resumes elsewhere).
func (rs *Runs) Finish(ctx context.Context, deps *RunDeps, res *agentrunner.RunResult, err error) bool {
	if err != nil && ctx.Err() != nil && errors.Is(err, ctx.Err()) {
		rs.log().Info("run stopped by shutdown; it will resume elsewhere", "channel", deps.Channel)
		return false
	}
	if err != nil && rs.HandedOff != nil && rs.HandedOff(err) {
		rs.log().Info("run continues in another process", "channel", deps.Channel)
		return false
	}
	stopping := ctx.Err() != nil
	runCtx := ctx
	ctx = context.WithoutCancel(ctx)
	if err == nil && res.Status == agentrunner.StatusSuspended {
		rs.suspended(ctx, runCtx, deps, res)
		return true
	}
	text, result := "", ""
	switch {
	case err != nil:
		rs.log().ErrorContext(ctx, "run failed", "err", err, "channel", deps.Channel)
		text, result = ":warning: The agent run failed: "+EscapeText(err.Error()), "failed"
	case res.Status == agentrunner.StatusPending:
		text, result = ":hourglass: Some tool calls are still waiting for a decision.", "pending"
	default:
		text, result = EscapeText(res.Output), "complete"
	}
	if rs.Finished != nil {
		rs.Finished(result)
	}
	// Before the answer: a reply to it must find the history.
	switch {
	case res != nil:
		rs.saveHistory(ctx, deps, res.Messages)
	case deps.prompt != "":
		// The thread remembers what was asked and that it failed.
		failed := append(slices.Clip(deps.history),
			agentrunner.Message{Kind: agentrunner.KindRequest, Parts: []agentrunner.Part{agentrunner.UserPrompt(deps.prompt)}},
			agentrunner.Message{Kind: agentrunner.KindResponse, Parts: []agentrunner.Part{agentrunner.Text("(The run failed: " + err.Error() + ")")}})
		rs.saveHistory(ctx, deps, failed)
	}
	if rs.Followups != nil {
		rs.followUp(ctx, runCtx, deps, res, text, result)
	}
	// The answer first: it is what the requester waits for, and updating
	// the cards may wait on a card's lease.
	if deps.Channel != "" && rs.Followups == nil {
		if err := rs.Bot.PostInThread(ctx, deps.Channel, deps.ThreadTS, text); err != nil {
			rs.log().ErrorContext(ctx, "post answer", "err", err, "channel", deps.Channel)
		}
	}
	// Then the thread's next message, which need not wait for the cards.
	// A process shutting down leaves it to the lease's lapse.
	if th, ok := rs.threadOf(deps.Origin); ok && deps.runID != "" && !stopping {
		rs.handOn(ctx, th, deps.runID)
	}
	if res != nil && rs.Followups == nil {
		for _, token := range deps.Tokens() {
			if err := rs.Bot.ReportOutcomes(ctx, token, res.Messages); err != nil {
				rs.log().ErrorContext(ctx, "report tool outcomes", "err", err)
			}
		}
	}
	return true
}

// PostInThread posts text as a reply in a thread (or to the channel when
// threadTS is empty), retrying as Slack asks.
func (b *Bot) PostInThread(ctx context.Context, channel, threadTS, text string) error {
	if len(text) > 39000 {
		text = truncate(text, 39000)
	}
	opts := []slack.MsgOption{slack.MsgOptionText(text, false)}
	if threadTS != "" {
		opts = append(opts, slack.MsgOptionTS(threadTS))
	}
	err := b.retry.Do(ctx, func(ctx context.Context) error {
		_, _, err := b.slack.PostMessageContext(ctx, channel, opts...)
		if err != nil {
			b.metrics.SlackError("chat.postMessage")
		}
		return err
	})
	if err != nil {
		return fmt.Errorf("post in thread: %w", err)
	}
	return nil
}

// EscapeText makes model or user text safe to post: Slack's control
// characters are escaped so it cannot mention anyone or link anywhere.
func EscapeText(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;").Replace(s)
}

// ReportOutcomes shows on each card of token what its tool did, from the
// tool returns in msgs, and records the outcomes in the audit stream.
func (b *Bot) ReportOutcomes(ctx context.Context, token string, msgs []agentrunner.Message) error {
	// Recorded on the call first: a card update racing with this one
	// (the click's own) then renders the outcome too, whichever lands last.
	a, calls, err := b.RecordOutcomes(ctx, token, msgs)
	if a == nil {
		return fmt.Errorf("report outcomes: %w", err)
	}
	errs := []error{err}
	for _, c := range calls {
		if err := b.svc.UpdateCard(ctx, a.Token, c.ID); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// failureText is what a failed tool said, worded once: the card already
// says "The tool failed" and names the tool, so the runner's "Tool failed: "
// and a leading "<tool>: " (an MCP server's error names its tool) go.
func (b *Bot) failureText(p agentrunner.Part) string {
	s := strings.TrimPrefix(p.ReturnText(), agentrunner.ToolFailedPrefix)
	for _, name := range []string{p.ToolName, b.cards.toolLabel(p.ToolName)} {
		s = strings.TrimPrefix(s, name+": ")
	}
	return s
}
