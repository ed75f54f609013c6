package bot

import (
	"testing"

	"github.com/slackapprove/slackbot/approval"
)

// TestAuthorizeWorkspace: a click must come from the bot's workspace or,
// on Enterprise Grid, from a workspace of the same organization.
func TestAuthorizeWorkspace(t *testing.T) {
	route := &Route{Name: smRoute, Channel: smCardChan, Users: []string{smApprover}, RequiredApprovals: 1}
	call := &approval.Call{ID: smCallID, Route: smRoute, Status: approval.CallPending, Message: approval.MessageRef{Channel: smCardChan, TS: smCardTS}}
	tests := []struct {
		name                 string
		teamID, enterpriseID string // the bot's
		clickTeam, clickOrg  string
		wantRefused          bool
	}{
		{"same workspace", smTeam, "", smTeam, "", false},
		{"another workspace", smTeam, "", "T0OTHER", "", true},
		{"another workspace naming an organization", smTeam, "", "T0OTHER", "E0ORG", true},
		{"grid: same organization, another workspace", smTeam, "E0ORG", "T0SISTER", "E0ORG", false},
		{"grid: another organization", smTeam, "E0ORG", "T0OTHER", "E0EVIL", true},
		{"grid: same workspace", smTeam, "E0ORG", smTeam, "E0ORG", false},
		{"no workspace configured", "", "", "T0OTHER", "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := &Authorizer{TeamID: tt.teamID, EnterpriseID: tt.enterpriseID}
			click := Click{TeamID: tt.clickTeam, EnterpriseID: tt.clickOrg, User: smApprover,
				Message: approval.MessageRef{Channel: smCardChan, TS: smCardTS}, Action: approval.ActionApprove}
			err := a.Authorize(t.Context(), click, call, route, smRequester)
			_, got := asRefusal(err)
			if got != tt.wantRefused || (!got && err != nil) {
				t.Errorf("Authorize: got %v, want refused %v", err, tt.wantRefused)
			}
			if got && approval.ErrorCode(err) != approval.EWRONGTEAM {
				t.Errorf("Authorize: code %q, want %s", approval.ErrorCode(err), approval.EWRONGTEAM)
			}
		})
	}
}
