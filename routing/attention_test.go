package routing_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/slackapprove/slackbot/routing"
)

const attentionRoutes = `
routes:
  - name: refunds
    when: {tools: ["refund_*"]}
    channel: C0APPROVALS
    approvers: {users: [U0ALICE], usergroups: [S0FINANCE]}
    timeout: 2h
    confirm: true
    remind_every: 10m
    escalate:
      after: 1h
      channel: C0ONCALL
      approvers: {users: [U0CAROL], usergroups: [S0ONCALL]}
    grants: 8h
  - name: plain
    channel: C0APPROVALS
    approvers: {users: [U0ALICE]}
`

func TestAttentionSettings(t *testing.T) {
	rs, err := routing.ParseRoutes([]byte(attentionRoutes), "r.yaml")
	if err != nil {
		t.Fatal(err)
	}
	r, plain := rs.Named("refunds"), rs.Named("plain")
	if !r.Confirm || r.RemindEvery != 10*time.Minute || r.Grants != 8*time.Hour {
		t.Errorf("confirm, remind_every, grants = %v, %v, %v", r.Confirm, r.RemindEvery, r.Grants)
	}
	want := &routing.Escalation{After: time.Hour, Channel: "C0ONCALL", Users: []string{"U0CAROL"}, Usergroups: []string{"S0ONCALL"}}
	if diff := cmp.Diff(want, r.Escalate); diff != "" {
		t.Errorf("escalate (-want +got):\n%s", diff)
	}
	if plain.Confirm || plain.RemindEvery != 0 || plain.Escalate != nil || plain.Grants != 0 {
		t.Errorf("a route without the settings got %+v", plain)
	}

	var out strings.Builder
	if err := rs.Describe(&out); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "refunds  confirm, remind every 10m, escalate after 1h to U0CAROL, @S0ONCALL in C0ONCALL, grants up to 8h") {
		t.Errorf("Describe does not show the settings:\n%s", out.String())
	}
}

func TestReminders(t *testing.T) {
	created := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	r := &routing.Route{RemindEvery: 10 * time.Minute}
	at := func(mins ...int) []time.Time {
		var out []time.Time
		for _, m := range mins {
			out = append(out, created.Add(time.Duration(m)*time.Minute))
		}
		return out
	}
	for _, tt := range []struct {
		expires time.Duration
		want    []time.Time
	}{
		{2 * time.Hour, at(10, 20, 30)}, // at most three
		{25 * time.Minute, at(10, 20)},  // none at or after the expiry
		{20 * time.Minute, at(10)},
		{5 * time.Minute, nil},
		// The request's deadline and creation come from two readings of
		// the clock: a reminder a few milliseconds before the expiry asks
		// for what cannot be done, and its count would depend on them.
		{30*time.Minute + 3*time.Millisecond, at(10, 20)},
		{31 * time.Minute, at(10, 20, 30)},
	} {
		got := r.Reminders(created, created.Add(tt.expires))
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("Reminders with expiry after %s (-want +got):\n%s", tt.expires, diff)
		}
	}
	if got := (&routing.Route{}).Reminders(created, created.Add(time.Hour)); got != nil {
		t.Errorf("a route without remind_every reminds at %v", got)
	}
}

func TestEscalatesAt(t *testing.T) {
	created := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	r := &routing.Route{Escalate: &routing.Escalation{After: time.Hour}}
	if at, ok := r.EscalatesAt(created, created.Add(2*time.Hour)); !ok || !at.Equal(created.Add(time.Hour)) {
		t.Errorf("EscalatesAt = %v, %v; want an hour after creation", at, ok)
	}
	for _, tt := range []struct {
		now  time.Duration
		want bool
	}{{59 * time.Minute, false}, {time.Hour, true}, {90 * time.Minute, true}} {
		if got := r.Escalated(created, created.Add(2*time.Hour), created.Add(tt.now)); got != tt.want {
			t.Errorf("Escalated %s after creation = %v, want %v", tt.now, got, tt.want)
		}
	}
	if _, ok := r.EscalatesAt(created, created.Add(30*time.Minute)); ok {
		t.Error("a call that expires before its escalation escalates")
	}
	if _, ok := (&routing.Route{}).EscalatesAt(created, created.Add(2*time.Hour)); ok {
		t.Error("a route without escalate escalates")
	}
}

func TestGrantChoices(t *testing.T) {
	h := time.Hour
	for _, tt := range []struct {
		grants time.Duration
		quorum int
		want   []time.Duration
	}{
		{8 * h, 1, []time.Duration{h, 8 * h}},
		{4 * h, 1, []time.Duration{h, 4 * h}},
		{30 * time.Minute, 1, []time.Duration{30 * time.Minute}},
		{h, 1, []time.Duration{h}},
		{72 * h, 1, []time.Duration{h, 8 * h, 24 * h, 72 * h}},
		{8 * h, 2, nil}, // never on a quorum route
		{0, 1, nil},
	} {
		r := &routing.Route{Grants: tt.grants, RequiredApprovals: tt.quorum}
		got := r.GrantChoices()
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("grants %s, quorum %d (-want +got):\n%s", tt.grants, tt.quorum, diff)
		}
		for _, d := range got {
			if !r.AllowsGrant(d) {
				t.Errorf("grants %s: AllowsGrant(%s) = false for an offered choice", tt.grants, d)
			}
		}
		if r.AllowsGrant(tt.grants+time.Minute) || r.AllowsGrant(2*time.Hour) && tt.grants != 2*time.Hour {
			t.Errorf("grants %s: a length the card does not offer is allowed", tt.grants)
		}
	}
}

func TestIsEscalationApprover(t *testing.T) {
	rs, err := routing.ParseRoutes([]byte(attentionRoutes), "r.yaml")
	if err != nil {
		t.Fatal(err)
	}
	members := func(_ context.Context, g string) ([]string, error) {
		return map[string][]string{"S0ONCALL": {"U0DAVE"}, "S0FINANCE": {"U0ERIN"}}[g], nil
	}
	r := rs.Named("refunds")
	for user, want := range map[string]bool{"U0CAROL": true, "U0DAVE": true, "U0ALICE": false, "U0ERIN": false, "": false} {
		if got, err := r.IsEscalationApprover(context.Background(), user, members); err != nil || got != want {
			t.Errorf("IsEscalationApprover(%q) = %v, %v; want %v", user, got, err, want)
		}
	}
	if got, _ := rs.Named("plain").IsEscalationApprover(context.Background(), "U0CAROL", members); got {
		t.Error("a route without escalate has escalation approvers")
	}
}

func TestAttentionRefused(t *testing.T) {
	route := func(extra string) string {
		return "routes:\n  - name: r\n    channel: C0APPROVALS\n    approvers: {users: [U0ALICE, U0BOB]}\n    timeout: 1h\n" + extra
	}
	for _, tt := range []struct {
		extra string
		want  []string // "LINE: reason prefix"
	}{
		{"    remind_every: 30s\n", []string{"6: remind_every must be at least 1m, got 30s"}},
		{"    remind_every: 1h\n", []string{`6: remind_every 1h would never remind: route "r" times out after 1h`}},
		{"    confirm: maybe\n", []string{"6: confirm: want true or false"}},
		{"    grants: 8h\n    required_approvals: 2\n", []string{`6: grants need required_approvals: 1: route "r" needs 2 approvers`}},
		{"    grants: 60d\n", []string{"6: grants may be at most 30d, got 60d"}},
		{"    escalate: {after: 2h, channel: C0ONCALL, approvers: {users: [U0CAROL]}}\n", []string{`6: escalate.after 2h would never escalate: route "r" times out after 1h`}},
		{"    escalate: {}\n", []string{
			"6: escalate needs after",
			"6: escalate needs channel",
			"6: escalate needs approvers",
		}},
		{"    escalate:\n      after: 30m\n      channel: oncall\n      approvers: {users: [carol]}\n      page: true\n", []string{
			"6: escalate needs approvers",
			`8: escalate.channel "oncall" is not a Slack channel id`,
			`9: users: "carol" is not a Slack id`,
			`10: unknown field "page" in escalate`,
		}},
	} {
		_, err := routing.ParseRoutes([]byte(route(tt.extra)), "r.yaml")
		re, ok := err.(*routing.RoutesError)
		if !ok {
			t.Errorf("%q: error %v, want a *RoutesError", tt.extra, err)
			continue
		}
		var got []string
		for _, p := range re.Problems {
			got = append(got, fmt.Sprintf("%d: %s", p.Line, p.Message))
		}
		if len(got) != len(tt.want) {
			t.Errorf("%q: problems\n%s\nwant\n%s", tt.extra, strings.Join(got, "\n"), strings.Join(tt.want, "\n"))
			continue
		}
		for i := range got {
			if !strings.HasPrefix(got[i], tt.want[i]) {
				t.Errorf("%q: problem %d = %q, want prefix %q", tt.extra, i, got[i], tt.want[i])
			}
		}
	}
}
