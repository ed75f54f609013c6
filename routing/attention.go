package routing

import (
	"context"
	"fmt"
	"time"
)

// What a route may ask of its approvers' attention beyond the card: a
// confirm dialog on Approve, reminders in the card's thread, escalation to
// more approvers, and grants that approve repeats of a call for a while.
const (
	// MaxReminders is how many reminders a pending call gets at most.
	MaxReminders = 3
	// MinRemindEvery is the shortest remind_every: reminders more often
	// than that are noise.
	MinRemindEvery = time.Minute
	// MaxGrant is the longest grants a route may offer.
	MaxGrant = 30 * 24 * time.Hour
)

// grantSteps are the grant lengths cards offer, those a route allows.
var grantSteps = []time.Duration{time.Hour, 8 * time.Hour, 24 * time.Hour}

// Escalation widens who may decide a call that nobody decided within
// After: its approvers may decide too, and the card is linked in Channel.
type Escalation struct {
	After   time.Duration
	Channel string
	// Users and Usergroups may decide once the call has escalated.
	Users      []string
	Usergroups []string
}

// reminderLead is the least time a reminder leaves before the expiry.
const reminderLead = time.Minute

// Reminders returns when a call of the route created at created and
// expiring at expires is reminded about: every RemindEvery, at most
// MaxReminders times, each at least reminderLead before it expires (the
// request's creation and deadline come from two readings of the clock, so
// "before" alone would count a reminder milliseconds before the expiry, or
// not, by chance). None when the route does not remind.
func (r *Route) Reminders(created, expires time.Time) []time.Time {
	if r.RemindEvery <= 0 {
		return nil
	}
	var at []time.Time
	for i := 1; i <= MaxReminders; i++ {
		t := created.Add(time.Duration(i) * r.RemindEvery)
		if t.Add(reminderLead).After(expires) {
			break
		}
		at = append(at, t)
	}
	return at
}

// EscalatesAt returns when a call of the route created at created and
// expiring at expires escalates, and false when it never does.
func (r *Route) EscalatesAt(created, expires time.Time) (time.Time, bool) {
	if r.Escalate == nil {
		return time.Time{}, false
	}
	t := created.Add(r.Escalate.After)
	return t, t.Before(expires)
}

// Escalated reports whether a call of the route created at created and
// expiring at expires has escalated by now.
func (r *Route) Escalated(created, expires, now time.Time) bool {
	at, ok := r.EscalatesAt(created, expires)
	return ok && !now.Before(at)
}

// GrantChoices returns the grant lengths a card of the route offers, the
// shortest first: the standard steps (1 h, 8 h, 24 h) up to the route's
// grants, and the route's own length when it is not one of them. None on a
// route without grants or with a quorum: a grant is one person's say.
func (r *Route) GrantChoices() []time.Duration {
	if r.Grants <= 0 || r.RequiredApprovals > 1 {
		return nil
	}
	var out []time.Duration
	for _, s := range grantSteps {
		if s < r.Grants {
			out = append(out, s)
		}
	}
	return append(out, r.Grants)
}

// AllowsGrant reports whether a card of the route may approve for d.
func (r *Route) AllowsGrant(d time.Duration) bool {
	for _, c := range r.GrantChoices() {
		if c == d {
			return true
		}
	}
	return false
}

// IsEscalationApprover reports whether user may decide the route's calls
// once they escalated (see IsApprover for lookups and errors); false on a
// route that does not escalate.
func (r *Route) IsEscalationApprover(ctx context.Context, user string, members UsergroupMembers) (bool, error) {
	if r.Escalate == nil {
		return false, nil
	}
	e := &Route{Name: r.Name, Users: r.Escalate.Users, Usergroups: r.Escalate.Usergroups}
	return e.IsApprover(ctx, user, members)
}

// attentionField decodes confirm, remind_every, escalate, grants and
// offer_always_allow into
// r, and reports whether fl was one of them.
func (d *routesDecoder) attentionField(r *Route, fl field, at *routeNodes) bool {
	switch fl.key {
	case "confirm":
		if b, ok := d.boolean(fl); ok {
			r.Confirm = b
		}
	case "remind_every":
		at.remindEvery = fl.value
		if v, ok := d.duration(fl); ok {
			r.RemindEvery = v
		}
	case "grants":
		at.grants = fl.value
		if v, ok := d.duration(fl); ok {
			r.Grants = v
		}
	case "escalate":
		r.Escalate = d.escalate(fl, at)
	case "offer_always_allow":
		at.alwaysAllow = fl.value
		if b, ok := d.boolean(fl); ok {
			r.OfferAlwaysAllow = b
		}
	default:
		return false
	}
	return true
}

func (d *routesDecoder) escalate(fl field, at *routeNodes) *Escalation {
	fields, ok := d.mapping(fl.value, "escalate")
	if !ok {
		return nil
	}
	e := &Escalation{}
	at.escalateAfter = fl.keyAt
	var approvers bool
	for _, f := range d.known(fields, "escalate", "after", "channel", "approvers") {
		switch f.key {
		case "after":
			at.escalateAfter = f.value
			if v, ok := d.duration(f); ok {
				e.After = v
			}
		case "channel":
			if s, ok := d.str(f); ok {
				e.Channel = s
				if !channelIDPattern.MatchString(s) {
					d.problemAt(f.value, "escalate.channel %q is not a Slack channel id (like C0123ABCD)", s)
				}
			}
		case "approvers":
			approvers = true
			e.Users, e.Usergroups = d.approverIDs(f, "escalate.approvers")
		}
	}
	if e.After <= 0 {
		d.problemAt(fl.keyAt, "escalate needs after: how long a call waits before it escalates (after: 1h)")
	}
	if e.Channel == "" {
		d.problemAt(fl.keyAt, "escalate needs channel: where the card is linked when it escalates")
	}
	if !approvers || len(e.Users)+len(e.Usergroups) == 0 {
		d.problemAt(fl.keyAt, "escalate needs approvers: who may decide once the call escalates (approvers: {usergroups: [S0ONCALL]})")
	}
	return e
}

// checkAttention reports settings that could never take effect or that
// break a rule: reminders too often or after the timeout, an escalation
// after the timeout, grants on a quorum route or longer than MaxGrant,
// offer_always_allow on a quorum route.
func (d *routesDecoder) checkAttention(r *Route, at routeNodes) {
	switch {
	case at.remindEvery == nil:
	case r.RemindEvery < MinRemindEvery:
		d.problemAt(at.remindEvery, "remind_every must be at least %s, got %s", formatDuration(MinRemindEvery), formatDuration(r.RemindEvery))
	case r.RemindEvery >= r.Timeout:
		d.problemAt(at.remindEvery, "remind_every %s would never remind: route %q times out after %s", formatDuration(r.RemindEvery), r.Name, formatDuration(r.Timeout))
	}
	if r.Escalate != nil && r.Escalate.After > 0 && r.Escalate.After >= r.Timeout {
		d.problemAt(at.escalateAfter, "escalate.after %s would never escalate: route %q times out after %s", formatDuration(r.Escalate.After), r.Name, formatDuration(r.Timeout))
	}
	switch {
	case at.grants == nil:
	case r.Grants <= 0:
		d.problemAt(at.grants, "grants must be a positive duration such as 8h, got %s", formatDuration(r.Grants))
	case r.Grants > MaxGrant:
		d.problemAt(at.grants, "grants may be at most %s, got %s", formatDuration(MaxGrant), formatDuration(r.Grants))
	case r.RequiredApprovals > 1:
		d.problemAt(at.grants, "grants need required_approvals: 1: route %q needs %d approvers, and a grant is one person's say", r.Name, r.RequiredApprovals)
	}
	if r.OfferAlwaysAllow && r.RequiredApprovals > 1 {
		// An agent's rule approves every later call it covers, as a grant
		// does, but for good: one person's say, never a quorum's.
		d.problemAt(at.alwaysAllow, "offer_always_allow needs required_approvals: 1: route %q needs %d approvers, and an always-allow rule is one person's say", r.Name, r.RequiredApprovals)
	}
}

// attentionText says, for routes check, what a route asks beyond the card.
func (r *Route) attentionText() string {
	var s []string
	if r.Confirm {
		s = append(s, "confirm")
	}
	if r.RemindEvery > 0 {
		s = append(s, "remind every "+formatDuration(r.RemindEvery))
	}
	if e := r.Escalate; e != nil {
		ap := (&Route{Users: e.Users, Usergroups: e.Usergroups}).approversText()
		s = append(s, fmt.Sprintf("escalate after %s to %s in %s", formatDuration(e.After), ap, e.Channel))
	}
	if r.Grants > 0 {
		s = append(s, "grants up to "+formatDuration(r.Grants))
	}
	if r.OfferAlwaysAllow {
		s = append(s, "offers the agent's always-allow rule")
	}
	if t := r.stepUpText(); t != "" {
		s = append(s, t)
	}
	return listOr(s, "")
}
