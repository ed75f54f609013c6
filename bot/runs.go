package bot

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"

	"github.com/slack-go/slack"

	"github.com/slackapprove/slackbot/agentrunner"
)

// RunDeps are the Deps of a run started from Slack: its origin, plus the
// resume tokens asked during the run, so cards can show what the tool did.
type RunDeps struct {
	Origin

	mu     sync.Mutex
	tokens []string
}

// RunOrigin implements OriginCarrier.
func (d *RunDeps) RunOrigin() *Origin { return &d.Origin }

// Asked records a token handed to people during the run.
func (d *RunDeps) Asked(token string) {
	d.mu.Lock()
	d.tokens = append(d.tokens, token)
	d.mu.Unlock()
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
	// Context is the parent of every run: cancelling it (SIGTERM) stops
	// runs without deciding anything, so they can resume elsewhere.
	Context context.Context
	// HandedOff reports whether a run's error means another process took
	// the run over (e.g. it claimed the resumption first); such a run
	// reports nothing here.
	HandedOff func(err error) bool
	// Finished, when set, is told how each run ended: "complete",
	// "pending", "failed" (for metrics).
	Finished func(result string)

	wg sync.WaitGroup
}

func (rs *Runs) log() *slog.Logger {
	if rs.Log != nil {
		return rs.Log
	}
	return slog.New(slog.DiscardHandler)
}

// Wait waits for the runs started so far to end.
func (rs *Runs) Wait() { rs.wg.Wait() }

// Start runs the agent on prompt in the background.
func (rs *Runs) Start(prompt string, origin Origin) {
	deps := &RunDeps{Origin: origin}
	rs.Resume(agentrunner.RunInput{Prompt: prompt, Deps: deps}, deps, nil)
}

// Resume runs in in the background, e.g. a run continued from its saved
// state with the results of its token, and reports its end like Start.
// done, if set, is called after the end was reported.
func (rs *Runs) Resume(in agentrunner.RunInput, deps *RunDeps, done func()) {
	ctx := rs.Context
	if ctx == nil {
		ctx = context.Background()
	}
	in.Deps = deps
	rs.wg.Add(1)
	go func() {
		defer rs.wg.Done()
		res, err := rs.Runner.Run(ctx, in)
		if rs.Finish(ctx, deps, res, err) && done != nil {
			done()
		}
	}()
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
	ctx = context.WithoutCancel(ctx)
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
	// The answer first: it is what the requester waits for, and updating
	// the cards may wait on a card's lease.
	if deps.Channel != "" {
		if err := rs.Bot.PostInThread(ctx, deps.Channel, deps.ThreadTS, text); err != nil {
			rs.log().ErrorContext(ctx, "post answer", "err", err, "channel", deps.Channel)
		}
	}
	if res != nil {
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
	a, err := b.approvals.Get(ctx, token)
	if err != nil {
		return fmt.Errorf("report outcomes: %w", err)
	}
	returns := map[string]agentrunner.Part{}
	for _, m := range msgs {
		for _, p := range m.Parts {
			if p.PartKind == agentrunner.PartToolReturn {
				returns[p.ToolCallID] = p
			}
		}
	}
	var errs []error
	for _, c := range a.Calls {
		if c.State != StateApproved && c.State != StateAnswered {
			continue
		}
		p, ok := returns[c.ID]
		if !ok {
			continue
		}
		o := ToolOutcome{Status: OutcomeRan, Summary: truncate(p.ReturnText(), 500)}
		if p.Outcome == agentrunner.OutcomeFailed {
			o.Status, o.Summary = OutcomeFailed, truncate(b.failureText(p), 500)
		}
		// Recorded on the call first: a card update racing with this one
		// (the click's own) then renders the outcome too, whichever lands last.
		if err := b.approvals.Outcome(ctx, token, c.ID, o); err != nil {
			errs = append(errs, err)
		}
		c.Outcome = &o
		if err := b.updateCard(ctx, a, c); err != nil {
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
	for _, name := range []string{p.ToolName, b.toolLabel(p.ToolName)} {
		s = strings.TrimPrefix(s, name+": ")
	}
	return s
}
