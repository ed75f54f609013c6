package approval

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// The words of a person's Home (HomeView) and of the forms a choice opens:
// what a surface's list of "what waits for me" and its forms say, in
// words written once for every surface.

// The titles of a Home's lists, what each says when empty, and the note
// of a Home that could not read everything.
const (
	HomeWaitingTitle  = "⏳ Waiting for you"
	HomeWaitingEmpty  = "Nothing waits for your decision. Calls of the routes you approve show up here, oldest first, as they do in their channels."
	HomeRequestsTitle = "📤 Your requests"
	HomeRequestsEmpty = "None of your requests waits for a decision."
	HomeGrantsTitle   = "🔓 Your grants"
	HomeGrantsEmpty   = "You have no grant in force. “Approve for …” on a card approves that call and its repeats by the same requester for a while; they are listed here, with Revoke."
	HomePartial       = "⚠️ Some pending requests could not be read or their approvers looked up; this list may be incomplete."
	HomeEscalated     = "🚨 escalated to you"
)

// HomeMoreWaiting, HomeMoreRequests and HomeMoreGrants count what a
// Home's lists leave out.
func HomeMoreWaiting(n int) string {
	return "…and " + strconv.Itoa(n) + " more waiting for you, oldest first: decide these to see them."
}

// HomeMoreRequests counts the viewer's own requests a Home leaves out.
func HomeMoreRequests(n int) string {
	return "…and " + strconv.Itoa(n) + " more of your requests waiting."
}

// HomeMoreGrants counts the grants a Home leaves out.
func HomeMoreGrants(n int) string {
	return "…and " + strconv.Itoa(n) + " more grants; revoke these to see them."
}

// HomeTitle leads a call on a Home: where it stands, and its tool
// ("⏳ Approval needed: refund_order").
func HomeTitle(v CallView, m Marks) string {
	emoji, word, known := StateWords(v.Kind, v.State)
	if !known {
		word += " " + m.Name(string(v.State))
	}
	return emoji + " " + m.Strong(word+":") + " " + m.Name(v.ToolLabel)
}

// ApprovalCount is how many approvals a call that needs several has
// ("1 of 2 approvals"), counted whatever arguments they approve; "" for a
// call that needs one.
func ApprovalCount(v CallView) string {
	if v.RequiredApprovals <= 1 {
		return ""
	}
	return strconv.Itoa(len(v.Votes)) + " of " + strconv.Itoa(v.RequiredApprovals) + " approvals"
}

// CardWhere says where a call's card is: in its channel, or not posted
// yet.
func CardWhere(ref MessageRef, m Marks) string {
	if ref.Channel == "" {
		return "no card yet"
	}
	return "card in " + m.Place(ref.Channel)
}

// GrantLine names a grant on its approver's Home: the tool (as labelled),
// whose calls it approves — a person, or an API client's claim beside its
// key, as the card said — its route and until when.
func GrantLine(g Grant, toolLabel string, m Marks) string {
	if strings.TrimSpace(toolLabel) == "" {
		toolLabel = g.Tool
	}
	who := m.Person(g.Requester)
	if client, ok := strings.CutPrefix(g.Requester, APIClientPrefix); ok && g.Name != "" {
		who = m.Name(g.Name) + ", says " + m.Name(client)
	}
	return m.Name(toolLabel) + " for " + who + " · route " + m.Name(g.Route) + " · until " + m.Time(g.Until)
}

// RevokeWords are the confirmation of a grant's Revoke: its title and its
// question about the tool (as labelled).
func RevokeWords(toolLabel string) (title, text string) {
	return "Revoke this grant?", "Later calls of " + toolLabel + " with these arguments will need an approval again."
}

// HomeDecided is the notice of a decision a person made from their Home.
func HomeDecided(v CallView, d Decision, m Marks) string {
	verb := "✅ You approved "
	switch {
	case d.Action == ActionDeny:
		verb = "❌ You denied "
	case d.Grant > 0:
		verb = "✅ You approved for " + FormatWait(d.Grant) + " "
	}
	return verb + m.Name(v.ToolLabel) + " (requested by " + m.Person(v.Requester) + "); its card says so too."
}

// FormWords are the words of the form a choice opens (Choice.Form): its
// title, its submit and cancel, what it is about, and its one input's
// label, hint and placeholder.
type FormWords struct {
	Title, Submit, Cancel    string
	Intro                    string
	Label, Hint, Placeholder string
}

// Form returns the words of the form of choice kind on v; the zero
// FormWords for a choice that needs none. Intro is "" where the form
// shows the call's confirmation as it is (an answer's question).
func Form(kind ChoiceKind, v CallView) FormWords {
	switch kind {
	case ChooseDenyWithReason:
		return FormWords{
			Title: "Deny with reason", Submit: "Deny", Cancel: "Cancel",
			Intro: "Deny " + v.ToolLabel + ": " + v.Confirmation,
			Label: "Reason", Hint: "The agent sees this reason and can tell the requester.",
			Placeholder: "Why may this call not run?",
		}
	case ChooseEdit:
		return FormWords{
			Title: "Edit arguments", Submit: "Approve", Cancel: "Cancel",
			Intro: "Approve " + v.ToolLabel + " with these arguments:",
			Label: "Arguments (a JSON object)",
			Hint:  "Checked against the tool's schema before the call runs. You are recorded as the approver, with the original and the edited arguments.",
		}
	case ChooseAnswer:
		return FormWords{
			Title: "Answer question", Submit: "Send", Cancel: "Cancel",
			Label: "Your answer", Hint: "The agent receives your answer and continues.",
		}
	}
	return FormWords{}
}

// GrantedLine tells where a call was asked that a grant approved it
// without a card: whose grant, and until when.
func GrantedLine(v CallView, g *Grant, m Marks) string {
	return "✅ " + m.Name(v.ToolLabel) + " was approved without a card: " + m.Person(g.By) + " granted this call until " + m.Time(g.Until) + "."
}

// ReminderLine is the n-th of a pending call's reminders to who (its
// approvers, as the surface notifies them).
func ReminderLine(v CallView, n, of int, who string, m Marks) string {
	return fmt.Sprintf("⏰ Reminder %d of %d: %s, %s is still waiting for a decision. It expires %s.",
		n, of, who, m.Name(v.ToolLabel), m.Time(v.ExpiresAt))
}

// EscalationLines are the notices of a call that escalated after having
// waited after: text, to who (the escalation approvers, as the surface
// notifies them) in the escalation channel with open, the surface's link
// to the card; thread, in the card's thread, saying it went where.
func EscalationLines(v CallView, after time.Duration, who, open, where string, m Marks) (text, thread string) {
	waited := FormatWait(after)
	text = fmt.Sprintf("🚨 Escalated: %s has waited %s with no decision. %s, you may decide it now: %s. It expires %s.",
		m.Name(v.ToolLabel), waited, who, open, m.Time(v.ExpiresAt))
	thread = fmt.Sprintf("🚨 No decision after %s: escalated to %s in %s; they may decide it too.", waited, who, where)
	return text, thread
}

// OpenRequest is the words of a link to a call's card.
const OpenRequest = "open the request"

// What revoking a grant from a Home says: it ended already, it could not
// be revoked, or it was (RevokedLine).
const (
	RevokeGone   = "This grant has ended already (it expired or was revoked). Nothing changed."
	RevokeFailed = "slackbot could not revoke this grant just now. Nothing changed; try again in a moment."
)

// RevokedLine says a grant on tool (as labelled) was revoked.
func RevokedLine(toolLabel string, m Marks) string {
	return "🔒 Grant revoked: later calls of " + m.Name(toolLabel) + " with those arguments need an approval again."
}
