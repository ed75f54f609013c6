package runs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/slackapprove/slackbot/agentrunner"
	"github.com/slackapprove/slackbot/approval"
)

// Answer is a run's answer to post in the thread it was asked in, as a
// durable job carries it (JobAnswer's Data, as JSON: replicas of every
// version read it).
type Answer struct {
	// Key names this end of this run (its id, the token it last resumed
	// from, and how it ended), so that the answer is posted once however
	// many processes finish the run.
	Key      string `json:"key"`
	Channel  string `json:"channel"`
	ThreadTS string `json:"thread_ts,omitempty"`
	Text     string `json:"text"`
	// MayBePosted says an earlier process may have posted this answer
	// without a record of it: one that resumed the run, could not reach
	// Redis to queue its follow-ups, posted the answer itself (followUp's
	// "doing them here") and died before it could mark the run done. The
	// thread is searched for it before it is posted.
	MayBePosted bool `json:"may_be_posted,omitempty"`
}

// ErrAnswerBusy: another live process is posting the answer; try again
// later (a job queue retries it without spending an attempt).
var ErrAnswerBusy = errors.New("another replica is posting the answer")

// PostAnswer posts ans once, however many processes try: Answers marks
// each attempt, and after an attempt that may have posted it (an earlier
// attempt of this job, or a process that died) the thread is searched for
// it first (Chat.PostAnswer with look). It returns ErrAnswerBusy while a
// live process posts it.
func (rs *Runs) PostAnswer(ctx context.Context, ans Answer) error {
	prev, err := rs.Answers.BeginAnswer(ctx, ans.Key, rs.Owner+"/"+agentrunner.NewToken()[:8])
	if err != nil {
		return err
	}
	switch prev {
	case "posted":
		return nil
	case "busy":
		return ErrAnswerBusy
	}
	ts, err := rs.Chat.PostAnswer(ctx, ans, prev != "" || ans.MayBePosted)
	if err != nil {
		if err := rs.Answers.AnswerFailed(context.WithoutCancel(ctx), ans.Key); err != nil {
			rs.log().ErrorContext(ctx, "record a failed answer", "err", err)
		}
		return err
	}
	return rs.Answers.AnswerPosted(ctx, ans.Key, ts)
}

// ErrMalformedJob: a job's data does not decode; it is dropped.
var ErrMalformedJob = errors.New("malformed job")

// AnswerJob does a JobAnswer job from the queue: data is the Answer as
// JSON. It returns ErrMalformedJob for data that does not decode.
func (rs *Runs) AnswerJob(ctx context.Context, data string) error {
	var ans Answer
	if err := json.Unmarshal([]byte(data), &ans); err != nil {
		return fmt.Errorf("answer job: %w: %w", ErrMalformedJob, err)
	}
	if ans.Key == "" || ans.Channel == "" {
		return fmt.Errorf("answer job: %w: no key or channel", ErrMalformedJob)
	}
	return rs.PostAnswer(ctx, ans)
}

// The values of approval.Outcome.Status a run records.
const (
	outcomeRan    = "ran"
	outcomeFailed = "failed"
)

// ReportOutcomes shows on each card of token what its tool did, from the
// tool returns in msgs, and records the outcomes in the audit stream.
func (rs *Runs) ReportOutcomes(ctx context.Context, token string, msgs []agentrunner.Message) error {
	// Recorded on the call first: a card update racing with this one
	// (the click's own) then renders the outcome too, whichever lands last.
	a, calls, err := rs.RecordOutcomes(ctx, token, msgs)
	if a == nil {
		return fmt.Errorf("report outcomes: %w", err)
	}
	errs := []error{err}
	for _, c := range calls {
		if err := rs.Approvals.UpdateCard(ctx, a.Token, c.ID); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// RecordOutcomes records on each decided call of token what its tool did,
// from the tool returns in msgs (and so in the audit stream), without
// touching the chat, and returns the calls it recorded, with their
// outcome.
func (rs *Runs) RecordOutcomes(ctx context.Context, token string, msgs []agentrunner.Message) (*approval.Request, []*approval.Call, error) {
	a, err := rs.Approvals.Get(ctx, token)
	if err != nil {
		return nil, nil, fmt.Errorf("record outcomes: %w", err)
	}
	returns := map[string]agentrunner.Part{}
	for _, m := range msgs {
		for _, p := range m.Parts {
			if p.PartKind == agentrunner.PartToolReturn {
				returns[p.ToolCallID] = p
			}
		}
	}
	var (
		errs  []error
		calls []*approval.Call
	)
	for i := range a.Calls {
		c := &a.Calls[i]
		if c.Status != approval.CallApproved && c.Status != approval.CallAnswered {
			continue
		}
		p, ok := returns[c.ID]
		if !ok {
			continue
		}
		o := approval.Outcome{Status: outcomeRan, Summary: truncate(p.ReturnText(), 500)}
		if p.Outcome == agentrunner.OutcomeFailed {
			o.Status, o.Summary = outcomeFailed, truncate(FailureSummary(p, rs.Chat.ToolLabel(p.ToolName)), 500)
		}
		if err := rs.Approvals.RecordOutcome(ctx, token, c.ID, o); err != nil {
			errs = append(errs, err)
		}
		c.Outcome = &o
		calls = append(calls, c)
	}
	return a, calls, errors.Join(errs...)
}

// FailureSummary is what a failed tool said (p, its return), worded once:
// the card already says "The tool failed" and names the tool, so the
// runner's "Tool failed: " and a leading "<tool>: " or "<label>: " (an MCP
// server's error names its tool; label is how people see it) go.
func FailureSummary(p agentrunner.Part, label string) string {
	s := strings.TrimPrefix(p.ReturnText(), agentrunner.ToolFailedPrefix)
	for _, name := range []string{p.ToolName, label} {
		s = strings.TrimPrefix(s, name+": ")
	}
	return s
}

// truncate cuts s to at most n bytes, on a rune boundary, marking the cut.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}
