package runs

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/slackapprove/slackbot/agentrunner"
	"github.com/slackapprove/slackbot/approval"
)

// Deps are the Deps of a run started from a chat message: its origin,
// plus the resume tokens asked during the run, so cards can show what the
// tool did.
type Deps struct {
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
	// retaken: the run is resumed from the resume queue, where an earlier
	// resume by a process that died may have got as far as its answer.
	retaken bool
}

// Waits is told, when the run hands calls to people, until when it may
// wait for them: the run's thread stays its own until then, even if the
// run is parked in Redis with no process holding it.
func (d *Deps) Waits(until time.Time) {
	if d.waits != nil {
		d.waits(until)
	}
}

var _ approval.AskHooks = (*Deps)(nil)

// RunOrigin implements approval.OriginCarrier.
func (d *Deps) RunOrigin() *approval.Origin { return &d.Origin }

// Asked implements approval.AskHooks: it records a token handed to people
// during the run and, unless until is zero (a run resumed from a token),
// keeps the run's thread until then (Waits).
func (d *Deps) Asked(token string, until time.Time) {
	d.mu.Lock()
	d.tokens = append(d.tokens, token)
	d.mu.Unlock()
	if !until.IsZero() {
		d.Waits(until)
	}
}

// Tokens returns the tokens asked so far.
func (d *Deps) Tokens() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]string(nil), d.tokens...)
}

// Runs runs the agent for chat messages, resumes the runs that
// hibernated, and posts their answers in the thread they came from.
type Runs struct {
	Chat      Chat
	Approvals Approvals
	// Receipts signs the receipts of the results a resumed run is handed
	// (approval.Request.Results): the runner runs an approved call only if
	// its receipt verifies.
	Receipts approval.Signer
	Runner   *agentrunner.Runner
	// BotUserID is the bot's own user: its messages in a thread are the
	// model's turns.
	BotUserID string
	Log       *slog.Logger
	// HandedOff reports whether a run's error means another process took
	// the run over (e.g. it claimed the resumption first); such a run
	// reports nothing here.
	HandedOff func(err error) bool
	// Metrics, when set, counts how runs end and resume.
	Metrics Metrics
	// Threads, when set, makes a thread one conversation: a message in a
	// thread continues from the history of the thread's last run, and the
	// runs of a thread take turns. Nil: every message starts afresh.
	Threads Threads
	// ThreadLease is how long a run holds its thread between heartbeats;
	// default DefaultThreadLease.
	ThreadLease time.Duration
	// ThreadReplies bounds the messages read from a thread no history is
	// kept for; default DefaultThreadReplies.
	ThreadReplies int
	// Jobs, when set, makes what follows a run's end durable: the answer
	// and the cards' updates are queued (any replica does them, even if
	// this process dies) before they are done here; the answer is then
	// posted once (Answers), and the run's tokens are done with (State).
	// Nil: done here, at once.
	Jobs    Jobs
	Answers Answers
	// JobTimeout bounds the follow-ups a run's end does at once; default
	// two minutes. What is not done by then is left to the job queue.
	JobTimeout time.Duration
	// State keeps hibernated runs and the claims on their resumption.
	State RunStore
	// Owner names this process in the claims and the answers' marks.
	Owner string
	// Trace, when set, starts the span of a resume (in the trace of
	// traceParent when it is not empty), which the run's tool calls and
	// posts join.
	Trace func(ctx context.Context, traceParent, runID, path string) (context.Context, func(error))

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
		deps := &Deps{Origin: t.Origin}
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
	rs.Resume(in, &Deps{Origin: t.Origin}, nil)
}

func (rs *Runs) postNote(ctx context.Context, o approval.Origin, text string) {
	if err := rs.Chat.PostInThread(ctx, o.Channel, o.ThreadTS, text); err != nil {
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
func (rs *Runs) Resume(in agentrunner.RunInput, deps *Deps, done func(suspended bool)) {
	rs.ResumeIn(context.Background(), in, deps, done)
}

// ResumeIn is Resume with the values of ctx (the span of the resume, so
// the run's tool calls and posts join its trace); the run's lifetime is
// its own, not ctx's.
func (rs *Runs) ResumeIn(ctx context.Context, in agentrunner.RunInput, deps *Deps, done func(suspended bool)) {
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
func (rs *Runs) bind(ctx context.Context, deps *Deps, runID string) (ThreadRef, bool) {
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

func (rs *Runs) ended(result string) {
	if rs.Metrics != nil {
		rs.Metrics.RunEnded(result)
	}
}
