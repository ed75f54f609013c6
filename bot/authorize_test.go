package bot

import (
	"testing"
)

// TestAuthorizeWorkspace: a click (refused as EWRONGTEAM, see
// TestRefusedClickLabelIsItsCode) must come from the bot's workspace or,
// on Enterprise Grid, from a workspace of the same organization.
func TestAuthorizeWorkspace(t *testing.T) {
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
			ws := Workspace{TeamID: tt.teamID, EnterpriseID: tt.enterpriseID}
			if got := !ws.accepts(tt.clickTeam, tt.clickOrg); got != tt.wantRefused {
				t.Errorf("accepts(%s, %s): refused %v, want refused %v", tt.clickTeam, tt.clickOrg, got, tt.wantRefused)
			}
		})
	}
}
