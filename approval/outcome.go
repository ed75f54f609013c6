package approval

import (
	"context"
	"fmt"
	"strings"
	"unicode/utf8"
)

// MaxOutcomeSummary bounds the summary of a reported outcome, in
// characters: it is shown on the call's card.
const MaxOutcomeSummary = 1000

// ReportOutcome records what became of an approved call of token as the
// API client that opened the request reports it (a program that ran the
// call itself, or whose framework refused to), and shows it on the call's
// card, so a call approved but never run does not stay looking approved.
// The first report stands: a repeat of it changes nothing, a different
// one is ECONFLICT, naming what was reported first. It returns ENOTFOUND
// for another client's request (or a Slack run's), EINVALID for a call
// the request lacks, an outcome other than ran, failed or not_run, or a
// summary past MaxOutcomeSummary (not_run and failed need one), and
// ECONFLICT for a call that is not approved.
func (s *Service) ReportOutcome(ctx context.Context, token string, by Decider, callID string, o Outcome) (*Request, error) {
	if err := checkReported(o); err != nil {
		return nil, err
	}
	r, err := s.store.Get(ctx, token)
	if err != nil {
		return nil, fmt.Errorf("report outcome: %w", err)
	}
	if by.Client == "" || r.Origin.Client != by.Client {
		return nil, fmt.Errorf("report outcome %s: %w", callID, ErrNotFound)
	}
	if r.Call(callID) == nil {
		return nil, Errorf(EINVALID, "tool_call_id %q is not a call of this request", callID)
	}
	got, recorded, err := s.store.ReportOutcome(ctx, token, callID, by.Client, o)
	if err != nil {
		return nil, fmt.Errorf("report outcome: %w", err)
	}
	if !recorded && got != o {
		return nil, Errorf(ECONFLICT, "call %s's outcome was reported already (%s%s); a report is kept as first made", callID, got.Status, summaryOf(got))
	}
	if recorded {
		s.later(ctx, "show a reported outcome", func(ctx context.Context) error { return s.UpdateCard(ctx, token, callID) })
	}
	return s.store.Get(ctx, token)
}

// checkReported refuses an outcome a client may not report.
func checkReported(o Outcome) error {
	switch o.Status {
	case OutcomeRan:
	case OutcomeFailed, OutcomeNotRun:
		if strings.TrimSpace(o.Summary) == "" {
			return Errorf(EINVALID, "an outcome %q needs the error: say why", o.Status)
		}
	default:
		return Errorf(EINVALID, "outcome %q: want %q, %q or %q", o.Status, OutcomeRan, OutcomeFailed, OutcomeNotRun)
	}
	if !utf8.ValidString(o.Summary) {
		return Errorf(EINVALID, "the error is not valid UTF-8")
	}
	if n := utf8.RuneCountInString(o.Summary); n > MaxOutcomeSummary {
		return Errorf(EINVALID, "the error has %d characters; at most %d", n, MaxOutcomeSummary)
	}
	return nil
}

func summaryOf(o Outcome) string {
	if o.Summary == "" {
		return ""
	}
	return ": " + o.Summary
}
