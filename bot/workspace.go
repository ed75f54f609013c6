package bot

import (
	"context"

	"github.com/slack-go/slack/slackevents"
)

// Workspace is the Slack installation slackbot serves, as auth.test names
// it: the workspace's team id and, on Enterprise Grid, the organization's
// enterprise id. Requests signed by Slack can still come from elsewhere:
// an app distributed to several workspaces shares one signing secret, so
// a signed event from another workspace must not start a run here.
type Workspace struct {
	TeamID       string
	EnterpriseID string
}

// known reports whether the installation is known at all; when it is not
// (tests, or an org-wide app configured without ids) nothing is refused.
func (w Workspace) known() bool { return w.TeamID != "" || w.EnterpriseID != "" }

// is reports whether a team id and an enterprise id (either may be empty)
// belong to this installation: the same workspace, or, on Enterprise
// Grid, another workspace of the same organization.
func (w Workspace) is(teamID, enterpriseID string) bool {
	return (w.TeamID != "" && teamID == w.TeamID) || (w.EnterpriseID != "" && enterpriseID == w.EnterpriseID)
}

// accepts reports whether a click from a team id and an enterprise id
// may decide here: from this installation, or from anywhere when no team
// is configured (an org-wide app).
func (w Workspace) accepts(teamID, enterpriseID string) bool {
	return w.TeamID == "" || w.is(teamID, enterpriseID)
}

// OwnsEvent reports whether an Events API event was delivered for this
// installation. It is when its team_id is the workspace's, when its
// enterprise_id is the organization's (an org-wide app receives events of
// every workspace of the org; team_id may then be another workspace's or
// null), or when one of its authorizations — the installations Slack
// delivered it for, which for a shared channel or an org-wide install
// names the context team — is this one. slack-go does not decode the
// outer context_team_id; the authorizations carry the same team.
func (w Workspace) OwnsEvent(ev slackevents.EventsAPIEvent) bool {
	if !w.known() || w.is(ev.TeamID, ev.EnterpriseID) {
		return true
	}
	if cb, ok := ev.Data.(*slackevents.EventsAPICallbackEvent); ok {
		for _, a := range cb.Authorizations {
			if w.is(a.TeamID, a.EnterpriseID) {
				return true
			}
		}
	}
	return false
}

// foreignEvent reports, and logs, an event that was not delivered for
// this installation: HandleEvent drops it (and acknowledges it, so Slack
// does not deliver it again).
func (h *Events) foreignEvent(ctx context.Context, eventID string, ev slackevents.EventsAPIEvent) bool {
	if h.Bot == nil || h.Bot.workspace.OwnsEvent(ev) {
		return false
	}
	h.log().WarnContext(ctx, "event from another workspace dropped",
		"event_id", eventID, "team_id", ev.TeamID, "enterprise_id", ev.EnterpriseID, "want_team_id", h.Bot.workspace.TeamID)
	return true
}
