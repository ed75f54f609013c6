package approval_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/slackapprove/slackbot/agentrunner"
	"github.com/slackapprove/slackbot/approval"
	"github.com/slackapprove/slackbot/routing"
)

// textMarks write the words of a view as plain text, the way a terminal,
// an e-mail or a plain web page would: a second surface beside Slack's
// Block Kit, built only from package approval.
type textMarks struct{}

func (textMarks) Strong(s string) string { return strings.ToUpper(s) }
func (textMarks) Person(who string) string {
	if strings.HasPrefix(who, "U") {
		return "@" + who
	}
	return fmt.Sprintf("%q", who)
}
func (textMarks) Group(id string) string        { return "@@" + id }
func (textMarks) Place(id string) string        { return "#" + id }
func (textMarks) Name(s string) string          { return fmt.Sprintf("%q", s) }
func (textMarks) Code(s string, max int) string { return "[" + s[:min(len(s), max)] + "]" }
func (textMarks) Time(t time.Time) string       { return t.UTC().Format("2006-01-02 15:04") }

// renderText lays a view out as plain text: the words approval gives,
// one line each, and the choices as a numbered menu.
func renderText(v approval.CallView) string {
	m := textMarks{}
	emoji, word, _ := approval.StateWords(v.Kind, v.State)
	lines := []string{emoji + " " + word + ": " + v.ToolLabel}
	if v.State != approval.CallPending {
		lines = append(lines, approval.EndingLine(v, m))
	}
	lines = append(lines, v.Confirmation, approval.RequesterLine(v, m))
	if why, policy := approval.WhyWords(v, m); why != "" || policy != "" {
		lines = append(lines, approval.WhyPrefix+strings.Join([]string{why, policy}, "; ")+".")
	}
	status := []string{}
	if v.State == approval.CallPending {
		status = append(status, approval.ExpiresWords(v, m))
	}
	if v.RequiredApprovals > 1 {
		status = append(status, approval.QuorumWords(v, m)...)
	}
	if len(status) > 0 {
		lines = append(lines, strings.Join(status, " · "))
	}
	for i, c := range v.Choices() {
		lines = append(lines, fmt.Sprintf("[%d] %s", i+1, approval.ChoiceLabel(c)))
	}
	return strings.Join(lines, "\n")
}

// TestPlainTextSurface renders the views of a pending call and of its
// approval as plain text: the same view that bot renders to Block Kit
// (its golden files) reads whole on a surface that knows nothing of
// Slack.
func TestPlainTextSurface(t *testing.T) {
	r, c := viewRequest(approval.Origin{User: "U0BOB", Channel: "C0SUPPORT"}, "refunds", "refund_order", `{"amount":250}`)
	c.Required = 1
	pending := newViewer(t, viewCreated.Add(time.Minute)).View(r, c)
	want := strings.Join([]string{
		`⏳ Approval needed: refund_order`,
		`Run refund_order({"amount":250})?`,
		`Requested by @U0BOB in #C0SUPPORT · 2026-03-02 15:04 · route "refunds"`,
		`Why: "refund_order" asked for approval of these arguments; the route's auto_approve [args.amount <= 100] did not approve it.`,
		`Expires 2026-03-02 17:04`,
		`[1] Approve`,
		`[2] Deny`,
		`[3] Approve for 1 h`,
		`[4] Approve for 8 h`,
		`[5] Deny with reason…`,
	}, "\n")
	if diff := cmp.Diff(want, renderText(pending)); diff != "" {
		t.Errorf("pending (-want +got):\n%s", diff)
	}

	approved := pending
	approved.State, approved.DecidedBy, approved.DecidedAt = approval.CallApproved, "policy:refunds", viewCreated.Add(2*time.Minute)
	approved.OverrideArgs = json.RawMessage(`{"amount":90}`)
	want = strings.Join([]string{
		`✅ Approved: refund_order`,
		`✅ APPROVED by policy "refunds" · 2026-03-02 15:06 · with edited arguments`,
		`Run refund_order({"amount":250})?`,
		`Requested by @U0BOB in #C0SUPPORT · 2026-03-02 15:04 · route "refunds"`,
		`Why: "refund_order" asked for approval of these arguments; the route's auto_approve [args.amount <= 100] did not approve it.`,
	}, "\n")
	if diff := cmp.Diff(want, renderText(approved)); diff != "" {
		t.Errorf("approved (-want +got):\n%s", diff)
	}
}

// TestEndingLine checks the ending of each state in words.
func TestEndingLine(t *testing.T) {
	at := viewCreated.Add(time.Minute)
	tests := []struct {
		v    approval.CallView
		want string
	}{
		{approval.CallView{State: approval.CallDenied, DecidedBy: "U0AL", DecidedAt: at}, "❌ DENIED by @U0AL · 2026-03-02 15:05"},
		{approval.CallView{State: approval.CallAnswered, Kind: agentrunner.KindExternal, DecidedBy: "batch"}, `📥 RESULT RECEIVED from "batch"`},
		{approval.CallView{State: approval.CallAnswered, Kind: agentrunner.KindQuestion, DecidedBy: "U0AL"}, "💬 ANSWERED by @U0AL"},
		{approval.CallView{State: approval.CallFailed, DecidedBy: "x", DecidedAt: at}, "⚠️ FAILED · 2026-03-02 15:05"},
		{approval.CallView{State: approval.CallExpired, ExpiresAt: at}, "⌛ EXPIRED — no decision arrived by 2026-03-02 15:05"},
		{approval.CallView{State: approval.CallCancelled}, "🚫 CANCELLED"},
		{approval.CallView{State: "paused"}, `❔ UNKNOWN STATE "paused"`},
	}
	for _, tt := range tests {
		if got := approval.EndingLine(tt.v, textMarks{}); got != tt.want {
			t.Errorf("EndingLine(%s) = %q, want %q", tt.v.State, got, tt.want)
		}
	}
}

// TestQuorumWords checks that votes for different arguments are counted
// apart, and that an approved call names who approved what runs.
func TestQuorumWords(t *testing.T) {
	vote := func(by, key string) approval.Vote { return approval.Vote{By: by, Key: key} }
	tests := []struct {
		name  string
		state approval.CallStatus
		votes []approval.Vote
		want  []string
	}{
		{"none yet", approval.CallPending, nil, []string{"0 of 2 approvals"}},
		{"own arguments", approval.CallPending, []approval.Vote{vote("U1", "")}, []string{"1 of 2 approvals: @U1"}},
		{"own and edited", approval.CallPending, []approval.Vote{vote("U1", "-"), vote("U2", "k1")},
			[]string{"1 of 2 approvals for these arguments: @U1", "1 of 2 for edited arguments: @U2"}},
		{"two edits", approval.CallPending, []approval.Vote{vote("U1", "k1"), vote("U2", "k2")},
			[]string{"1 of 2 approvals for edited arguments #1: @U1", "1 of 2 for edited arguments #2: @U2"}},
		{"approved edited", approval.CallApproved, []approval.Vote{vote("U1", "-"), vote("U2", "k1"), vote("U3", "k1")},
			[]string{"2 of 2 approvals: @U2, @U3"}},
	}
	for _, tt := range tests {
		v := approval.CallView{RequiredApprovals: 2, State: tt.state, Votes: tt.votes}
		if diff := cmp.Diff(tt.want, approval.QuorumWords(v, textMarks{})); diff != "" {
			t.Errorf("%s (-want +got):\n%s", tt.name, diff)
		}
	}
}

// TestExplainWords checks one sentence per code, whatever wraps the
// error, and who may decide named through the surface's marks.
func TestExplainWords(t *testing.T) {
	route := &routing.Route{Users: []string{"U0ALICE"}, Usergroups: []string{"S0OPS"}}
	decided := &approval.Call{Status: approval.CallDenied, DecidedBy: "U0BOB"}
	tests := []struct {
		err  error
		want string
	}{
		{fmt.Errorf("decide: %w", approval.ErrDecided), "This call was already denied by @U0BOB. Nothing changed."},
		{fmt.Errorf("decide: %w", approval.ErrExpired), "This request expired before a decision arrived. Nothing changed."},
		{approval.Errorf(approval.ENOTAPPROVER, "You are not an approver of this route."), "You are not an approver of this route. Approvers: @U0ALICE, @@S0OPS. Nothing changed."},
		{errors.New("dial tcp: refused"), "slackbot could not record your decision; nothing changed. Try again in a moment."},
	}
	for _, tt := range tests {
		if got := approval.Explain(tt.err, decided, route, textMarks{}); got != tt.want {
			t.Errorf("Explain(%v) = %q, want %q", tt.err, got, tt.want)
		}
	}
	if got := approval.WhoCanDecide(nil, textMarks{}); got != "Nobody is listed as an approver." {
		t.Errorf("WhoCanDecide(nil) = %q", got)
	}
}

// TestFormatWait checks waits in the words people use.
func TestFormatWait(t *testing.T) {
	for d, want := range map[time.Duration]string{
		48 * time.Hour: "2 d", 8 * time.Hour: "8 h", 90 * time.Minute: "90 min", 30 * time.Second: "30s",
	} {
		if got := approval.FormatWait(d); got != want {
			t.Errorf("FormatWait(%v) = %q, want %q", d, got, want)
		}
	}
}

// TestHomeWords checks the words of a Home's entries and notices.
func TestHomeWords(t *testing.T) {
	m := textMarks{}
	v := approval.CallView{ToolLabel: "refund_order", Requester: "U0BOB", RequiredApprovals: 2, Votes: []approval.Vote{{By: "U1"}}, State: approval.CallPending}
	until := viewCreated.Add(8 * time.Hour)
	tests := []struct{ name, got, want string }{
		{"title", approval.HomeTitle(v, m), `⏳ APPROVAL NEEDED: "refund_order"`},
		{"count", approval.ApprovalCount(v), "1 of 2 approvals"},
		{"no card", approval.CardWhere(approval.MessageRef{}, m), "no card yet"},
		{"card", approval.CardWhere(approval.MessageRef{Channel: "C1", ID: "1.2"}, m), "card in #C1"},
		{"grant of a person", approval.GrantLine(approval.Grant{Tool: "t", Requester: "U0BOB", Route: "r", Until: until}, "", m),
			`"t" for @U0BOB · route "r" · until 2026-03-02 23:04`},
		{"grant of a client's claim", approval.GrantLine(approval.Grant{Tool: "t", Requester: "api:bench", Name: "carol", Route: "r", Until: until}, "fs.t", m),
			`"fs.t" for "carol", says "bench" · route "r" · until 2026-03-02 23:04`},
		{"approved for", approval.HomeDecided(v, approval.Decision{Action: approval.ActionApprove, Grant: 8 * time.Hour}, m),
			`✅ You approved for 8 h "refund_order" (requested by @U0BOB); its card says so too.`},
		{"denied", approval.HomeDecided(v, approval.Decision{Action: approval.ActionDeny}, m),
			`❌ You denied "refund_order" (requested by @U0BOB); its card says so too.`},
		{"granted", approval.GrantedLine(v, &approval.Grant{By: "U0AL", Until: until}, m),
			`✅ "refund_order" was approved without a card: @U0AL granted this call until 2026-03-02 23:04.`},
		{"revoked", approval.RevokedLine("fs.t", m), `🔒 Grant revoked: later calls of "fs.t" with those arguments need an approval again.`},
	}
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("%s: got %q, want %q", tt.name, tt.got, tt.want)
		}
	}
	if title, yes, no := approval.ConfirmWords("refund_order"); title != "Approve refund_order?" || yes != "Approve" || no != "Cancel" {
		t.Errorf("ConfirmWords = %q, %q, %q", title, yes, no)
	}
	if one := (approval.CallView{RequiredApprovals: 1}); approval.ApprovalCount(one) != "" {
		t.Errorf("ApprovalCount of a call that needs one = %q, want none", approval.ApprovalCount(one))
	}
}

// TestForms checks that every choice that needs a form has its words,
// and no other does.
func TestForms(t *testing.T) {
	v := approval.CallView{ToolLabel: "refund_order", Confirmation: "Refund 250?"}
	for _, k := range []approval.ChoiceKind{approval.ChooseApprove, approval.ChooseDeny, approval.ChooseApproveFor, approval.ChooseDenyWithReason, approval.ChooseEdit, approval.ChooseAnswer} {
		f := approval.Form(k, v)
		if (approval.Choice{Kind: k}).Form() != (f.Title != "" && f.Submit != "" && f.Label != "") {
			t.Errorf("%s: Form() = %v but its words are %+v", k, (approval.Choice{Kind: k}).Form(), f)
		}
	}
	if got := approval.Form(approval.ChooseDenyWithReason, v).Intro; got != "Deny refund_order: Refund 250?" {
		t.Errorf("deny intro = %q", got)
	}
}

// TestNoticeWords checks a reminder's and an escalation's words, with
// who is notified and the link as the surface writes them.
func TestNoticeWords(t *testing.T) {
	v := approval.CallView{ToolLabel: "refund_order", ExpiresAt: viewExpires}
	if got, want := approval.ReminderLine(v, 1, 3, "@U1", textMarks{}),
		`⏰ Reminder 1 of 3: @U1, "refund_order" is still waiting for a decision. It expires 2026-03-02 17:04.`; got != want {
		t.Errorf("ReminderLine = %q, want %q", got, want)
	}
	text, thread := approval.EscalationLines(v, time.Hour, "@U2", "[open]", "#C2", textMarks{})
	if want := `🚨 Escalated: "refund_order" has waited 1 h with no decision. @U2, you may decide it now: [open]. It expires 2026-03-02 17:04.`; text != want {
		t.Errorf("escalation = %q, want %q", text, want)
	}
	if want := "🚨 No decision after 1 h: escalated to @U2 in #C2; they may decide it too."; thread != want {
		t.Errorf("escalation's thread = %q, want %q", thread, want)
	}
}
