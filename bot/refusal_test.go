package bot

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/slackapprove/slackbot/approval"
)

// countingMetrics records what a Bot tells its Metrics.
type countingMetrics struct {
	mu         sync.Mutex
	refused    []string
	uncheckeds []string
	decided    []string
	slackErrs  []string
	limited    []string
}

// slack returns the Slack errors and 429s counted, by method.
func (m *countingMetrics) slack() (errs, limited []string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.slackErrs), slices.Clone(m.limited)
}

// unchecked returns the answers posted without a look-up, by reason.
func (m *countingMetrics) unchecked() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.uncheckeds)
}

func (m *countingMetrics) Decision(_, outcome string, _ time.Duration) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.decided = append(m.decided, outcome)
}

// decisions returns the decisions counted, by outcome.
func (m *countingMetrics) decisions() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.decided)
}
func (m *countingMetrics) Refused(reason string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.refused = append(m.refused, reason)
}
func (m *countingMetrics) SlackError(method string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.slackErrs = append(m.slackErrs, method)
}
func (m *countingMetrics) SlackRateLimited(method string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.limited = append(m.limited, method)
}
func (m *countingMetrics) AnswerUnchecked(reason string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.uncheckeds = append(m.uncheckeds, reason)
}

// A refused click is counted under its error code (the labels the metric
// had: not_approver, self_approval, wrong_team, wrong_message), never by
// matching the sentence, and the audit stream gets the same code.
func TestRefusedClickLabelIsItsCode(t *testing.T) {
	tests := []struct {
		name, user, team, route string
		want                    string
	}{
		{"not an approver", smStranger, smTeam, smRoute, approval.ENOTAPPROVER},
		{"another workspace", smApprover, "T0OTHER", smRoute, approval.EWRONGTEAM},
		{"route gone", smApprover, smTeam, "gone", approval.ENOROUTE},
		{"own request", smApprover, smTeam, smRoute, approval.ESELFAPPROVAL},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := &countingMetrics{}
			e := newClickEnv(t, tt.route, func(c *testConfig) { c.Metrics = m })
			if tt.want == approval.ESELFAPPROVAL {
				e.approvals.a.Origin.User = tt.user
			}
			payload := strings.Replace(string(clickPayload(tt.user, ActionIDApprove, EncodeAction(e.approvals.a.Token, smCallID))), `"`+smTeam+`"`, `"`+tt.team+`"`, 1)
			cb, err := ParseInteraction(payload)
			if err != nil {
				t.Fatal(err)
			}
			e.bot.Interact(t.Context(), cb)
			e.settle()
			if !slices.Equal(m.refused, []string{tt.want}) {
				t.Errorf("refused metric labels %q, want [%s]", m.refused, tt.want)
			}
			e.approvals.mu.Lock()
			defer e.approvals.mu.Unlock()
			if len(e.approvals.refusals) != 1 || e.approvals.refusals[0].Code != tt.want || e.approvals.refusals[0].Reason == "" {
				t.Errorf("audited refusals %+v, want one coded %s with the sentence", e.approvals.refusals, tt.want)
			}
			if len(e.approvals.decisions) != 0 {
				t.Errorf("a refused click recorded %+v", e.approvals.decisions)
			}
		})
	}
}

// Explain has one sentence per code, whatever wraps the error; a failed
// request reads as decided, as before.
func TestExplainByCode(t *testing.T) {
	decided := &approval.Call{Status: approval.CallDenied, DecidedBy: "U0ALICE"}
	tests := []struct {
		err  error
		want string
	}{
		{fmt.Errorf("decide x: %w", approval.ErrNotFound), "no longer knows this request"},
		{fmt.Errorf("decide x c9: %w", approval.ErrNotPending), "no longer knows this request"},
		{fmt.Errorf("decide x: %w", approval.ErrExpired), "expired before a decision"},
		{fmt.Errorf("decide x: %w", approval.ErrCancelled), "was cancelled"},
		{fmt.Errorf("decide x: %w", approval.ErrTooLate), tooLateText},
		{fmt.Errorf("decide x: %w", approval.ErrDecided), "already denied by <@U0ALICE>"},
		{fmt.Errorf("decide x: %w", approval.ErrResolved), "already denied by <@U0ALICE>"},
		{fmt.Errorf("decide x: %w", approval.ErrFailed), "already denied by <@U0ALICE>"},
		{fmt.Errorf("decide x: dial tcp: refused"), "could not record your decision"},
		{fmt.Errorf("decide x c1: %w (0 of 1 replicas confirmed)", approval.ErrUnconfirmed), "Your decision is not in effect yet: Redis's replicas have not confirmed it, so nothing acts on it."},
		{fmt.Errorf("decide x c1: %w", approval.ErrRecording), "A decision on this request is being recorded"},
	}
	for _, tt := range tests {
		if got := Explain(tt.err, decided, nil); !strings.Contains(got, tt.want) {
			t.Errorf("Explain(%v) = %q, want it to contain %q", tt.err, got, tt.want)
		}
	}
}
