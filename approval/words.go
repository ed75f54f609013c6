package approval

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/slackapprove/slackbot/agentrunner"
	"github.com/slackapprove/slackbot/routing"
)

// The words of a view: the sentences a person reads about a call (where
// it stands, who asked, why it waits, its quorum, its ending) and about a
// decision of theirs that did not take effect (Explain). They are written
// here once; a surface supplies only its syntax (Marks) and fits them to
// its limits.

// Marks is how a surface writes the values a sentence holds: its syntax
// for emphasis, people, groups, places, names and times, and its escaping
// of whatever a model, a requester or an approver wrote. A mark never lets
// such text format, mention or link anything.
type Marks interface {
	// Strong is a word emphasised ("Approved").
	Strong(s string) string
	// Person is who: a user id of the surface's chat, shown as that
	// person, or anything else (an API client's name) shown as text.
	Person(who string) string
	// Group is a usergroup id, shown as that group.
	Group(id string) string
	// Place is a channel id, shown as that channel (anything else as
	// text).
	Place(id string) string
	// Name is a short name (a tool, a route, a client) shown as written,
	// on one line.
	Name(s string) string
	// Code is s as code on one line, in at most max characters.
	Code(s string, max int) string
	// Time is t as the reader sees it.
	Time(t time.Time) string
}

// The values of Outcome.Status.
const (
	OutcomeRan    = "ran"
	OutcomeFailed = "failed"
	// OutcomeNotRun: the call was approved, but the program that asked
	// did not run it (its framework refused the approved input, say), as
	// it reported.
	OutcomeNotRun = "not_run"
)

// StateWords are the emoji and words that say where a call of kind stands,
// first thing on its view; known is false for a status this version does
// not know (the surface shows the status itself after the words).
func StateWords(kind agentrunner.CallKind, status CallStatus) (emoji, word string, known bool) {
	switch status {
	case CallPending:
		switch kind {
		case agentrunner.KindQuestion:
			return "❓", "Question", true
		case agentrunner.KindExternal:
			return "⏳", "Waiting for result", true
		default:
			return "⏳", "Approval needed", true
		}
	case CallApproved:
		return "✅", "Approved", true
	case CallDenied:
		return "❌", "Denied", true
	case CallAnswered:
		if kind == agentrunner.KindExternal {
			return "📥", "Result received", true
		}
		return "💬", "Answered", true
	case CallFailed:
		return "⚠️", "Failed", true
	case CallExpired:
		return "⌛", "Expired", true
	case CallCancelled:
		return "🚫", "Cancelled", true
	}
	return "❔", "Unknown state", false
}

// EndingLine says how a decided or ended call ended: the state, who
// decided and when ("✅ Approved by Bob · <time> · with edited
// arguments"), and how a stepped-up approval was verified ("· verified
// with a passkey").
func EndingLine(v CallView, m Marks) string {
	emoji, word, known := StateWords(v.Kind, v.State)
	line := emoji + " " + m.Strong(word)
	by := Actor(v.DecidedBy, m)
	at := ""
	if !v.DecidedAt.IsZero() {
		at = " · " + m.Time(v.DecidedAt)
	}
	switch {
	case !known:
		return line + " " + m.Name(string(v.State))
	case v.State == CallFailed:
		return line + at
	case v.State == CallExpired:
		line += " — no decision arrived"
		if !v.ExpiresAt.IsZero() {
			line += " by " + m.Time(v.ExpiresAt)
		}
		return line
	case v.State == CallAnswered && v.Kind == agentrunner.KindExternal:
		return line + clause(" from ", by) + at
	}
	line += clause(" by ", by) + at
	if v.State == CallApproved && len(v.OverrideArgs) > 0 {
		line += " · with edited arguments"
	}
	if v.State == CallApproved && v.StepUp != nil {
		line += " · " + StepUpWords(v.StepUp.Method)
	}
	return line
}

// StepUpWords say how an approval was verified beyond the click, by the
// method of its step-up proof: "verified with a passkey", "verified with
// a one-time code".
func StepUpWords(method string) string {
	if method == routing.StepUpTOTP {
		return "verified with a one-time code"
	}
	return "verified with a passkey"
}

func clause(word, who string) string {
	if who == "" {
		return ""
	}
	return word + who
}

// Actor is who decided, as a view names them: a person, the policy of a
// route ("policy:<route>"), or an API client's name; "" for nobody.
func Actor(by string, m Marks) string {
	switch {
	case by == "":
		return ""
	case strings.HasPrefix(by, ByPolicyPrefix):
		return "policy " + m.Name(strings.TrimPrefix(by, ByPolicyPrefix))
	}
	return m.Person(by)
}

// RequesterLine says who asked, where, when and through which route: an
// API client's claim comes first, as what the key says ("Requested for
// carol, says bench (API)").
func RequesterLine(v CallView, m Marks) string {
	var b strings.Builder
	switch {
	case v.Requester == "":
		b.WriteString("Requested by an unknown requester")
	case v.RequesterIsUser:
		b.WriteString("Requested by " + m.Person(v.Requester))
	case v.RequesterClaim != "":
		b.WriteString("Requested for " + m.Name(v.RequesterClaim) + ", says " + m.Name(v.Requester) + " (API)")
	default:
		b.WriteString("Requested by " + m.Name(v.Requester) + " (API)")
	}
	if v.SourceChannel != "" {
		b.WriteString(" in " + m.Place(v.SourceChannel))
	}
	if !v.CreatedAt.IsZero() {
		b.WriteString(" · " + m.Time(v.CreatedAt))
	}
	if v.Route != "" {
		b.WriteString(" · route " + m.Name(v.Route))
	}
	return b.String()
}

// WhyPrefix leads the line that says why a call waits (WhyWords).
const WhyPrefix = "Why: "

// WhyWords say why a call needs a person: why, the rule that deferred it
// ("refund_order always needs approval"), and policy, what the route's
// policy made of it; either may be empty.
func WhyWords(v CallView, m Marks) (why, policy string) {
	switch v.Rule {
	case RuleTool:
		why = m.Name(v.ToolLabel) + " always needs approval"
	case RuleArguments:
		why = m.Name(v.ToolLabel) + " asked for approval of these arguments"
	case RuleMCP:
		why = m.Name(v.ToolLabel) + " is an MCP tool its server does not list as read-only"
	case RuleClient:
		why = "the API client " + m.Name(v.Requester) + " asked for it"
	}
	switch {
	case v.PolicyError != "":
		policy = "the route's policy could not decide (" + m.Code(v.PolicyError, 300) + "), so a person must"
	case strings.TrimSpace(v.AutoApprove) != "":
		policy = "the route's auto_approve " + m.Code(v.AutoApprove, 200) + " did not approve it"
	}
	return why, policy
}

// ExpiresWords is the deadline of a pending call.
func ExpiresWords(v CallView, m Marks) string { return "Expires " + m.Time(v.ExpiresAt) }

// EscalatedWords say who else may decide a call that escalated, each
// already marked.
func EscalatedWords(who string) string { return "🚨 Escalated: " + who + " may decide too" }

// MentionsLabel leads the list of the groups a pending call of kind
// notifies.
func MentionsLabel(kind agentrunner.CallKind) string {
	switch kind {
	case agentrunner.KindQuestion:
		return "Who can answer: "
	case agentrunner.KindExternal:
		return "cc: "
	}
	return "Approvers: "
}

// ExternalWaitText is what a call waiting for an external result says in
// place of choices.
const ExternalWaitText = "⏳ Waiting for an external result. Nothing to do here: this message updates when the result arrives."

// OutcomeWords lead what a call's tool did ("🟢 The tool ran"); known is
// false for a status this version does not know (the surface shows it
// after the words).
func OutcomeWords(status string) (head string, known bool) {
	switch status {
	case OutcomeRan:
		return "🟢 The tool ran", true
	case OutcomeFailed:
		return "🔴 The tool failed", true
	case OutcomeNotRun:
		return "⛔ Approved, but the tool did not run", true
	}
	return "ℹ️ Tool outcome: ", false
}

// ChoiceLabel is the words of a choice ("Approve for 8 h").
func ChoiceLabel(c Choice) string {
	switch c.Kind {
	case ChooseApprove:
		return "Approve"
	case ChooseDeny:
		return "Deny"
	case ChooseApproveFor:
		return "Approve for " + FormatWait(c.Grant)
	case ChooseApproveAlways:
		return "Approve and always allow " + c.Rule
	case ChooseDenyWithReason:
		return "Deny with reason…"
	case ChooseEdit:
		return "Edit arguments…"
	case ChooseAnswer:
		return "Answer…"
	case ChooseApproveAll:
		return "Approve all " + strconv.Itoa(batchCount(c.Batch))
	case ChooseDenyAll:
		return "Deny all " + strconv.Itoa(batchCount(c.Batch))
	}
	return string(c.Kind)
}

// FormatWait writes a wait as people say it: "1 h", "90 min", "2 d".
func FormatWait(d time.Duration) string {
	switch {
	case d >= 24*time.Hour && d%(24*time.Hour) == 0:
		return strconv.Itoa(int(d/(24*time.Hour))) + " d"
	case d >= time.Hour && d%time.Hour == 0:
		return strconv.Itoa(int(d/time.Hour)) + " h"
	case d >= time.Minute:
		return strconv.Itoa(int(d/time.Minute)) + " min"
	}
	return d.String()
}

// OwnArgsKey is the Vote.Key of votes for the call's own arguments.
const OwnArgsKey = "-"

// voteSet is the votes for one set of arguments.
type voteSet struct {
	key    string
	voters []string
}

// voteSets groups votes by the arguments they approve, the call's own
// first, then edited sets in the order of their first vote.
func voteSets(votes []Vote, m Marks) []voteSet {
	sets := []voteSet{{key: OwnArgsKey}}
	index := map[string]int{OwnArgsKey: 0}
	for _, v := range votes {
		key := v.Key
		if key == "" {
			key = OwnArgsKey
		}
		i, ok := index[key]
		if !ok {
			i = len(sets)
			index[key] = i
			sets = append(sets, voteSet{key: key})
		}
		sets[i].voters = append(sets[i].voters, m.Person(v.By))
	}
	if len(sets[0].voters) == 0 && len(sets) > 1 {
		sets = sets[1:]
	}
	return sets
}

// QuorumWords count the approvals of a call that needs several, per set
// of arguments: votes for different arguments never add up, and the view
// says so. "2 of 3 approvals: A, B" while only the call's own arguments
// have votes; "1 of 2 approvals for these arguments: A", "1 of 2 for
// edited arguments: B" once someone approved edited ones. An approved
// call shows who approved the arguments it runs with.
func QuorumWords(v CallView, m Marks) []string {
	required := max(v.RequiredApprovals, 1)
	sets := voteSets(v.Votes, m)
	if v.State == CallApproved {
		for _, s := range sets {
			if len(s.voters) >= required {
				sets = []voteSet{s}
				break
			}
		}
	}
	edited := 0
	for _, s := range sets {
		if s.key != OwnArgsKey {
			edited++
		}
	}
	onlyOriginal := len(sets) == 1 && sets[0].key == OwnArgsKey
	parts := make([]string, 0, len(sets))
	n := 0
	for i, s := range sets {
		var what string
		switch {
		case onlyOriginal || (v.State == CallApproved && len(sets) == 1):
			what = " approvals"
		case s.key == OwnArgsKey:
			what = " approvals for these arguments"
		default:
			n++
			what = " for edited arguments"
			if edited > 1 {
				what = fmt.Sprintf(" for edited arguments #%d", n)
			}
			if i == 0 {
				what = " approvals" + what
			}
		}
		part := fmt.Sprintf("%d of %d%s", len(s.voters), required, what)
		if len(s.voters) > 0 {
			part += ": " + strings.Join(s.voters, ", ")
		}
		parts = append(parts, part)
	}
	return parts
}

// WhoCanDecide names a route's approvers, for a refusal.
func WhoCanDecide(route *routing.Route, m Marks) string {
	if route == nil {
		return "Nobody is listed as an approver."
	}
	var who []string
	for _, u := range route.Users {
		who = append(who, m.Person(u))
	}
	for _, g := range route.Usergroups {
		who = append(who, m.Group(g))
	}
	if len(who) == 0 {
		return "Nobody is listed as an approver."
	}
	return "Approvers: " + strings.Join(who, ", ") + "."
}

// The labels of what a view shows of a call besides its sentences.
const (
	ContextLabel       = "Context: "
	ArgsLabel          = "Arguments"
	ArgsRequestedLabel = "Arguments as requested"
	ArgsApprovedLabel  = "Arguments as approved (edited)"
)

// ReasonLabel leads a call's reason (CallView.Reason): why it was denied
// or cancelled, or its error when it failed.
func ReasonLabel(status CallStatus) string {
	if status == CallFailed {
		return "Error: "
	}
	return "Reason: "
}

// AnswerLabel names what answered a call of kind: a person's answer, or
// an external result.
func AnswerLabel(kind agentrunner.CallKind) string {
	if kind == agentrunner.KindExternal {
		return "Result"
	}
	return "Answer"
}

// ConfirmWords are the "are you sure?" of a choice that asks to be
// confirmed (Choice.Confirm) on the call of tool (as labelled, on one
// line): its title, and its answers; the question's body is the call's
// confirmation text.
func ConfirmWords(tool string) (title, yes, no string) {
	return "Approve " + tool + "?", "Approve", "Cancel"
}

// AlwaysAllowWords say what "Approve and always allow" gives a coding
// agent: its rule, kept where, and what follows.
func AlwaysAllowWords(rule, where string) string {
	return "“Approve and always allow” also adds the agent's rule " + rule + " to " + where +
		": its later calls that the rule covers run without asking slackbot."
}
